// Overlap as structure: tensor-parallel communication chunked under the GEMMs
// (tp_comm_overlap) and ZeRO's parameter all-gather moved under the forward
// (overlap_param_gather), against hand derivations.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "sim/engine.h"
#include "strategies/training_step.h"
#include "tiny_models.h"

namespace cs {
namespace {

// GEMMs take 1 us per MFLOP, collectives 1 us per MB (1e6 bytes) unless `us_per_byte` says
// otherwise; everything else is free, and nothing slows anything down.
class LinearCostModel final : public cost::CostModel {
 public:
  explicit LinearCostModel(double us_per_byte = 1e-6) : us_per_byte_(us_per_byte) {}
  SimTime compute(const ir::ComputeOp& op) const override {
    return op.op == ir::OpClass::gemm ? SimTime::from_us(op.flops.value * 1e-6) : SimTime{};
  }
  cost::CommCost collective(const ir::CollectiveCall& c,
                            const std::vector<ir::RankId>&) const override {
    return {SimTime::from_us(static_cast<double>(c.bytes.count) * us_per_byte_)};
  }
  cost::CommCost transfer(const ir::Transfer&) const override { return {}; }

 private:
  double us_per_byte_;
};

// A 2-layer GPT: h 256, 4 heads, ffn 1024, vocab 2048, sequence 128, micro-batch 1.
using test::tiny_gpt;

SimTime step_time(const strategy::Layout& l, const strategy::TrainingSpec& t,
                  const model::ModelSpec& m = tiny_gpt()) {
  strategy::validate(l, t, m, l.gpus());
  const auto step = strategy::build_training_step(m, l, t);
  LinearCostModel costs;
  return sim::Engine(step.graph, costs).run().makespan;
}

TEST(Overlap, TpCommOverlapHidesAllButOneChunkOfEachGemmsCollective) {
  // TP 2 with sequence parallelism. Each SP collective moves one [s, h] bf16 tensor:
  // 128 x 256 x 2 = 65,536 B = 0.065536 us here. Without overlap all run inline. With it, a
  // GEMM's all-gather (or reduce-scatter) is cut into tp = 2 chunks pipelined with the GEMM's
  // two halves: the GEMM halves (>= 4.2 us: proj's wgrad, 2 x 128 x 256 x 128 / 2 FLOP) outlast
  // a chunk (0.033 us), so only the first gather chunk (or the last scatter chunk) stays
  // exposed: each overlapped collective hides half of itself.
  // Overlapped, per layer: forward AG before qkv and fc1, RS after proj and fc2 (4); backward
  // AG before the wgrads of qkv, proj, fc1, fc2 and RS after the dgrads of qkv and fc1 (6).
  // Head: lm_head's forward AG, wgrad AG and dgrad RS (3). 2 x 10 + 3 = 23 collectives.
  // Not overlapped: the embedding's RS (after a lookup, not a GEMM), its backward AG, and the
  // loss's three all-reduces. Hidden: 23 x 0.065536 / 2 = 0.753664 us.
  strategy::Layout l;
  l.tp = 2;
  l.sequence_parallel = true;
  strategy::TrainingSpec t;
  t.seq_len = 128;
  const SimTime inline_tp = step_time(l, t);
  t.tp_comm_overlap = true;
  const SimTime overlapped = step_time(l, t);
  EXPECT_NEAR((inline_tp - overlapped).us(), 23 * 0.065536 / 2, 1e-6);
}

// The tiny GPT's shape as a Llama: separate q/k/v and gate/up projections (Hugging Face's and
// TorchTitan's layout), an untied head.
model::ModelSpec tiny_llama() {
  model::ModelSpec m = tiny_gpt();
  m.name = "llama-tiny";
  m.family = model::Family::llama;
  return m;
}

TEST(Overlap, PyTorchAsyncTpPipelinesOnlyWhatItsPassMatches) {
  // TP 2 with sequence parallelism under torch.compile (the whole model compiled): PyTorch's
  // micro-pipeline pass fuses an all-gather a matmul reads as its left operand and the
  // reduce-scatter of one matmul's output (torch/_inductor/fx_passes/micro_pipeline_tp.py).
  // Each SP collective moves [s, h] bf16 = 128 x 256 x 2 = 65,536 B = 0.065536 us here, and a
  // pipelined one hides half of itself (the test above). Per layer, matched: the forward
  // gathers into q/k/v and gate/up, the reduce-scatters after o_proj and down_proj, and the
  // output gradient's gathers into o_proj's and down_proj's backward (6); not matched: the
  // gathers wgrad reads transposed (q/k/v, gate/up) and the reduce-scatters of the q/k/v and
  // gate/up dgrads, which autograd sums before scattering (Transformer Engine overlaps all 10).
  // The head (one GEMM): its forward gather and its dgrad's reduce-scatter. 2 x 6 + 2 = 14
  // collectives: 14 x 0.065536 / 2 = 0.458752 us hidden.
  strategy::Layout l;
  l.tp = 2;
  l.sequence_parallel = true;
  strategy::TrainingSpec t;
  t.seq_len = 128;
  t.stack = model::Stack::torch_compile;
  const SimTime inline_tp = step_time(l, t, tiny_llama());
  t.tp_comm_overlap = true;
  EXPECT_NEAR((inline_tp - step_time(l, t, tiny_llama())).us(), 14 * 0.065536 / 2, 1e-6);

  // Each matched reduce-scatter ends with the sum of the TP partial outputs on the compute
  // stream: it reads both [s, h] partials and writes this rank's half, 65,536 x 1.5 B. Two a
  // layer (o_proj, down_proj) and the head's dgrad: 5.
  const auto step = strategy::build_training_step(tiny_llama(), l, t);
  int sums = 0;
  for (const ir::Task& task : step.graph.tasks()) {
    if (task.rank != 0 || step.graph.name(task.name).find(".tp_partials_sum") == std::string::npos)
      continue;
    ++sums;
    EXPECT_EQ(step.graph.compute(task).bytes.count, 98'304);
  }
  EXPECT_EQ(sums, 5);

  // torchao's rowwise Float8 gathers at 16 bits and casts the gathered input before its GEMM, so
  // no matmul reads the gather (pytorch/pytorch#149990): per layer only the two forward
  // reduce-scatters stay matched; the head stays in bf16 and keeps its two. 2 x 2 + 2 = 6:
  // 6 x 0.065536 / 2 = 0.196608 us hidden.
  t.precision = model::Precision::fp8_rowwise;
  t.tp_comm_overlap = false;
  const SimTime rowwise_inline = step_time(l, t, tiny_llama());
  t.tp_comm_overlap = true;
  EXPECT_NEAR((rowwise_inline - step_time(l, t, tiny_llama())).us(), 6 * 0.065536 / 2, 1e-6);
}

TEST(Overlap, AsyncTpUnderEagerPyTorchIsRefused) {
  // TorchTitan raises "Async TP requires torch.compile": the overlap is a compiler pass.
  strategy::Layout l;
  l.tp = 2;
  l.sequence_parallel = true;
  strategy::TrainingSpec t;
  t.seq_len = 128;
  t.stack = model::Stack::pytorch_eager;
  t.tp_comm_overlap = true;
  try {
    strategy::validate(l, t, tiny_llama(), l.gpus());
    ADD_FAILURE() << "eager async TP accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("use stack torch_compile"), std::string::npos) << e.what();
  }
}

TEST(Overlap, OverlapParamGatherTakesTheAllGatherOffTheCriticalPath) {
  // ZeRO-1 over DP 2, one micro-batch. Without overlap the updated parameters are all-gathered
  // bucket by bucket after the optimizer step, at the end of the step: all of them exposed.
  // With overlap_param_gather the gathers open the step on their own stream in the order the
  // forward needs them (the last bucket first: DDP buckets fill in reverse registration order).
  // The embedding costs nothing here, so the first GEMM (layer 0's qkv) waits until every
  // bucket holding an embedding or layer-0 parameter is gathered: those stay exposed. Each
  // later bucket (<= 0.53 MB, 0.53 us) is gathered under layer 0's GEMMs (>= 16 us). Saved: the
  // gathers of the buckets issued after the last one layer 0 needs.
  strategy::Layout l;
  l.dp = 2;
  l.data_parallel = strategy::DataParallel::zero1;
  l.bucket_size = Bytes{1 << 18};  // 256 KiB buckets: several per step
  l.first_bucket_size = Bytes{1 << 18};
  strategy::TrainingSpec t;
  t.global_batch = 2;
  t.seq_len = 128;
  const auto step = strategy::build_training_step(tiny_gpt(), l, t);
  ASSERT_GT(step.buckets.size(), 3u);
  const auto params = model::parameter_list(tiny_gpt());
  size_t needed_first =
      step.buckets.size();  // lowest bucket index holding a block 0 or 1 parameter
  for (size_t b = 0; b < step.buckets.size(); ++b) {
    for (int p : step.buckets[b].params) {
      if (params[static_cast<size_t>(p)].block <= 1) needed_first = std::min(needed_first, b);
    }
  }
  // A bucket's parameters are bf16 (2 B) as its gradients are: the gather moves its bytes.
  double saved = 0;
  for (size_t b = 0; b < needed_first; ++b)
    saved += static_cast<double>(step.buckets[b].bytes.count) * 1e-6;
  ASSERT_GT(saved, 0);
  const SimTime at_end = step_time(l, t);
  t.overlap_param_gather = true;
  const SimTime at_start = step_time(l, t);
  EXPECT_NEAR((at_end - at_start).us(), saved, 1e-6);
}

TEST(Overlap, Zero3AtDp64WithCommunicationAboveComputeExposesTheDerivedTime) {
  // FSDP FULL_SHARD (ZeRO-3) over DP 64 (8 nodes of 8), one sequence per GPU, the tiny GPT;
  // collectives cost 1 us per 1,000 bytes, so every unit's gather outlasts its compute.
  // Units: the root (wte 2048 x 256 + wpe 128 x 256 + ln_f 512 = 557,568 bf16 parameters:
  // A0 = 1,115.136 us to gather or reduce-scatter) and one per layer (789,760 parameters:
  // A = 1,579.52 us). GEMMs per layer: forward F = 2 x 128 x 256 x (768 + 256 + 1024 + 1024) =
  // 201.326592 us, backward B = 2F; the tied head: H = 2 x 128 x 2048 x 256 = 134.217728 us.
  // Gather stream: A0, A(L0), A(L1) back to back; L1's forward starts at A0 + 2A and the head's
  // forward ends at A0 + 2A + F + H. Backward: L1's re-gather is issued then (ends A0 + 3A + F +
  // H), L0's right after it (A0 + 4A + F + H); each layer's backward waits for its gather (A > B,
  // A > the head's backward), so L0's backward ends at A0 + 4A + F + H + B. The reduce stream:
  // L1's reduce-scatter ends exactly then, L0's follows (A), then the root's (A0):
  // step = 2 A0 + 5 A + F + H + B = 10,866.069504 us, of which GEMMs are 2F + H + 2B + 2H =
  // 1,610.612736 us: 9,255.456768 us of communication exposed.
  strategy::Layout l;
  l.dp = 64;
  l.data_parallel = strategy::DataParallel::fsdp_full_shard;
  strategy::TrainingSpec t;
  t.global_batch = 64;
  t.seq_len = 128;
  strategy::validate(l, t, tiny_gpt(), l.gpus());
  const auto step = strategy::build_training_step(tiny_gpt(), l, t);
  LinearCostModel costs(1e-3);
  const auto tl = sim::Engine(step.graph, costs).run();
  EXPECT_NEAR(tl.makespan.us(), 10866.069504, 1e-6);
  double compute = 0;
  for (ir::TaskId task = 0; task < step.graph.size(); ++task) {
    if (step.graph.task(task).rank == 0 && step.graph.task(task).kind == ir::TaskKind::compute) {
      compute += (tl.tasks[task].end - tl.tasks[task].start).us();
    }
  }
  EXPECT_NEAR(compute, 1610.612736, 1e-6);
  EXPECT_NEAR(tl.makespan.us() - compute, 9255.456768, 1e-6);
}

}  // namespace
}  // namespace cs
