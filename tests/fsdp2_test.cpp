// FSDP2 (layout.fsdp_version 2, torch.distributed.fsdp.fully_shard): the copies per-parameter
// sharding adds around each gather and reduction (strategies/data_parallel/fsdp.cpp). Every
// expected count and byte figure is derived by hand in the comment above it.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "scenarios/scenario.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

// 100 layers of 1000 x 1000 weights plus biases: 1,001,000 parameters per layer, one FSDP unit
// each (an MLP has no embedding/head root unit).
model::ModelSpec mlp_100m() {
  model::ModelSpec m;
  m.name = "mlp-100m";
  m.family = model::Family::mlp;
  m.layers = 100;
  m.hidden = m.ffn_hidden = 1000;
  return m;
}

struct CopyTasks {
  std::map<std::string, int> count;      // by suffix: copy_in, copy_out, chunk_cat, all_gather
  std::map<std::string, int64_t> bytes;  // bytes of one such compute task
  std::map<std::string, bool> on_compute_stream;  // every such task is on the compute stream
};

strategy::StepGraph fsdp_step(
    int dp, int fsdp_version, int pp = 1, int micro_batches = 1,
    strategy::DataParallel flavour = strategy::DataParallel::fsdp_full_shard) {
  strategy::TrainingSpec t;
  t.global_batch = dp * micro_batches;
  t.micro_batch = 1;
  t.precision = model::Precision::mixed_bf16;
  strategy::Layout l;
  l.dp = dp;
  l.pp = pp;
  if (pp > 1) l.schedule = strategy::PipelineSchedule::one_f_one_b;
  l.data_parallel = flavour;
  l.fsdp_version = fsdp_version;
  return strategy::build_training_step(mlp_100m(), l, t);
}

CopyTasks copies_on_rank0(
    int dp, int fsdp_version, int pp = 1, int micro_batches = 1,
    strategy::DataParallel flavour = strategy::DataParallel::fsdp_full_shard) {
  const auto step = fsdp_step(dp, fsdp_version, pp, micro_batches, flavour);
  CopyTasks out;
  for (const auto& task : step.graph.tasks()) {
    if (task.rank != 0) continue;
    const std::string& name = step.graph.name(task.name);
    for (const char* suffix : {".copy_in", ".copy_out", ".chunk_cat", ".all_gather", ".flat_grad",
                               ".reduce_scatter", ".reduce_copy", ".unshard", ".reshard"}) {
      const std::string s = suffix;
      if (name.size() < s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0)
        continue;
      const std::string key = s.substr(1);
      const bool compute_stream = task.stream == strategy::kComputeStream;
      out.on_compute_stream[key] =
          (out.count[key] == 0 || out.on_compute_stream[key]) && compute_stream;
      ++out.count[key];
      if (task.kind == ir::TaskKind::compute)
        out.bytes[s.substr(1)] = step.graph.compute(task).bytes.count;
    }
  }
  return out;
}

TEST(Fsdp2, CopiesEachShardInAndEachGatheredUnitOutAndConcatenatesGradients) {
  // dp 2, FULL_SHARD, one micro-batch: each of the 100 units is gathered before its forward and
  // again before its backward = 200 gathers, each with a copy-in and a copy-out; each unit's
  // gradients are concatenated once for the reduce-scatter = 100 chunk_cats.
  //   copy-in   the rank's shard, 1,001,000 / 2 = 500,500 elements, fp32 master read (4 B) and
  //             bf16 written (2 B): 3,003,000 B
  //   copy-out  the gathered unit, 1,001,000 bf16 elements read and written: 4,004,000 B
  //   chunk_cat 1,001,000 bf16 gradients read (2 B) and written as fp32 (4 B): 6,006,000 B
  const CopyTasks two = copies_on_rank0(2, 2);
  EXPECT_EQ(two.count.at("copy_in"), 200);
  EXPECT_EQ(two.count.at("copy_out"), 200);
  EXPECT_EQ(two.count.at("all_gather"), 200);
  EXPECT_EQ(two.count.at("chunk_cat"), 100);
  EXPECT_EQ(two.bytes.at("copy_in"), 3'003'000);
  EXPECT_EQ(two.bytes.at("copy_out"), 4'004'000);
  EXPECT_EQ(two.bytes.at("chunk_cat"), 6'006'000);
  EXPECT_EQ(two.count.count("flat_grad"), 0u);  // FSDP1's flat-gradient pass is gone
  EXPECT_EQ(two.count.count("reduce_copy"), 0u);
  // Streams (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): the copy-in on the
  // all-gather copy-in stream; the copy-out, and foreach_reduce's chunk_cat, on the current one.
  EXPECT_FALSE(two.on_compute_stream.at("copy_in"));
  EXPECT_TRUE(two.on_compute_stream.at("copy_out"));
  EXPECT_TRUE(two.on_compute_stream.at("chunk_cat"));
}

// Rank 0's reduce-scatters of one step: (count, bytes of the first).
std::pair<int, int64_t> reduce_scatters_on_rank0(const strategy::StepGraph& step) {
  std::pair<int, int64_t> out{0, 0};
  for (const auto& task : step.graph.tasks()) {
    if (task.rank != 0 || task.kind != ir::TaskKind::collective) continue;
    const auto& c = step.graph.collective(task);
    if (c.type != ir::CollectiveType::reduce_scatter) continue;
    if (out.first++ == 0) out.second = c.bytes.count;
  }
  return out;
}

TEST(Fsdp2, ReduceScattersSixteenBitGradientsInFp32AsTorchTitanSetsItsReduceDtype) {
  // TorchTitan's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
  // (parallelism.mixed_precision_reduce, "float32" by default): foreach_reduce casts a unit's
  // bf16 gradients to fp32 in the chunk_cat and reduce-scatters that buffer. A unit's 1,001,000
  // gradients are then 1,001,000 x 4 = 4,004,000 B on the wire, twice the 2,002,000 B of their
  // own dtype; 100 units, one micro-batch: 100 reduce-scatters.
  const auto fp32 = reduce_scatters_on_rank0(fsdp_step(2, 2));
  EXPECT_EQ(fp32.first, 100);
  EXPECT_EQ(fp32.second, 4'004'000);
  // mixed_precision_reduce "bfloat16" (training.grad_reduce_in_bf16): the gradients' own 2 B, and
  // the chunk_cat a bf16 copy (read 2, write 2 B): 4,004,000 B.
  strategy::TrainingSpec t;
  t.global_batch = 2;
  t.micro_batch = 1;
  t.precision = model::Precision::mixed_bf16;
  t.grad_reduce_in_bf16 = true;
  strategy::Layout l;
  l.dp = 2;
  l.data_parallel = strategy::DataParallel::fsdp_full_shard;
  l.fsdp_version = 2;
  const auto bf16_step = strategy::build_training_step(mlp_100m(), l, t);
  EXPECT_EQ(reduce_scatters_on_rank0(bf16_step).second, 2'002'000);
  int64_t cat_bytes = 0;
  for (const auto& task : bf16_step.graph.tasks()) {
    const std::string& name = bf16_step.graph.name(task.name);
    if (task.rank == 0 && name.ends_with(".chunk_cat"))
      cat_bytes = bf16_step.graph.compute(task).bytes.count;
  }
  EXPECT_EQ(cat_bytes, 4'004'000);
  // FSDP1 reduces the flat gradient in its own dtype: 2,002,000 B per unit.
  EXPECT_EQ(reduce_scatters_on_rank0(fsdp_step(2, 1)).second, 2'002'000);
}

TEST(Fsdp2, AtWorldSizeOneEveryCopyStillRunsOnTheComputeStream) {
  // dp 1: nothing is communicated, but our Kineto trace of fully_shard on one H100
  // (validate/measurements/torch_h100_202611/kineto_llama3_8b_4layers_fsdp2_b1.json.gz: 9 casts
  // and 9 device-to-device copies under each layer's FSDP::pre_forward and pre_backward, all on
  // the compute stream; one chunk_cat on it and one copy on another stream per
  // FSDP::post_backward_reduce) shows every copy still running:
  //   copy-in   the whole unit is the shard, cast fp32 -> bf16: 1,001,000 x 6 B = 6,006,000 B,
  //             before forward and backward: 200
  //   copy-out  1,001,000 bf16 elements read and written: 4,004,000 B, 200
  //   chunk_cat 6,006,000 B as at dp 2, 100, on the compute stream
  //   reduce_copy  the fp32 buffer into the sharded gradient, read and written:
  //             1,001,000 x 8 B = 8,008,000 B, 100, on the reduce stream
  const CopyTasks one = copies_on_rank0(1, 2);
  EXPECT_EQ(one.count.at("copy_in"), 200);
  EXPECT_EQ(one.count.at("copy_out"), 200);
  EXPECT_EQ(one.count.count("all_gather"), 0u);
  EXPECT_EQ(one.count.count("reduce_scatter"), 0u);
  EXPECT_EQ(one.count.at("chunk_cat"), 100);
  EXPECT_EQ(one.count.at("reduce_copy"), 100);
  EXPECT_EQ(one.bytes.at("copy_in"), 6'006'000);
  EXPECT_EQ(one.bytes.at("copy_out"), 4'004'000);
  EXPECT_EQ(one.bytes.at("reduce_copy"), 8'008'000);
  EXPECT_TRUE(one.on_compute_stream.at("copy_in"));
  EXPECT_TRUE(one.on_compute_stream.at("copy_out"));
  EXPECT_TRUE(one.on_compute_stream.at("chunk_cat"));
  EXPECT_FALSE(one.on_compute_stream.at("reduce_copy"));
  // FSDP1 at dp 1 gathers nothing and copies nothing in.
  const CopyTasks v1 = copies_on_rank0(1, 1);
  EXPECT_EQ(v1.count.count("copy_in"), 0u);
  EXPECT_EQ(v1.count.count("chunk_cat"), 0u);
}

TEST(Fsdp2, UnderAPipelineEachUnitIsGatheredOncePerStepAndReducedInTheLastBackward) {
  // pp 2 (1F1B) x dp 2, 4 micro-batches: rank 0 is stage 0, layers 0-49, 50 units. Driven by
  // torch.distributed.pipelining (reshard_after_forward off under PP, resharding and gradient
  // sync only in the last backward), each unit is gathered once, at micro-batch 0's forward,
  // resharded once and reduce-scattered once: 50 of each, against 4 micro-batches x 2 passes x
  // 50 = 400 gathers if FULL_SHARD resharded after every pass as it does without a pipeline.
  const CopyTasks piped = copies_on_rank0(2, 2, 2, 4);
  EXPECT_EQ(piped.count.at("all_gather"), 50);
  EXPECT_EQ(piped.count.at("copy_in"), 50);
  EXPECT_EQ(piped.count.at("unshard"), 50);
  EXPECT_EQ(piped.count.at("reshard"), 50);
  EXPECT_EQ(piped.count.at("chunk_cat"), 50);
  EXPECT_EQ(piped.count.at("reduce_scatter"), 50);
  // The gathered buffer is split into the parameters (copy-out) once per gather: the first
  // compute after it waits for it; later micro-batches find the parameters in place.
  EXPECT_EQ(piped.count.at("copy_out"), 50);
  // Without the pipeline the same dp 2 and 4 micro-batches regather before every pass: 100 units
  // x 4 micro-batches x 2 passes = 800 gathers; with no no_sync (TorchTitan), every micro-batch
  // reduce-scatters every unit: 100 x 4 = 400.
  const CopyTasks flat = copies_on_rank0(2, 2, 1, 4);
  EXPECT_EQ(flat.count.at("all_gather"), 800);
  EXPECT_EQ(flat.count.at("reduce_scatter"), 400);
  // SHARD_GRAD_OP under the pipeline: the same pattern.
  const CopyTasks grad_op = copies_on_rank0(2, 2, 2, 4, strategy::DataParallel::fsdp_shard_grad_op);
  EXPECT_EQ(grad_op.count.at("all_gather"), 50);
  EXPECT_EQ(grad_op.count.at("reduce_scatter"), 50);
}

// Rank 0's memory tasks of a step: the summed delta of each name (a unit's number left out).
std::map<std::string, std::pair<int, int64_t>> memory_on_rank0(const strategy::StepGraph& step) {
  std::map<std::string, std::pair<int, int64_t>> out;  // name -> (count, one task's delta)
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::memory || task.rank != 0) continue;
    std::string name = step.graph.name(task.name);
    if (name.rfind("fsdp.unit", 0) == 0) name = name.substr(name.find('.', 5));
    auto& [count, delta] = out[name];
    ++count;
    delta = step.graph.memory(task).delta;
  }
  return out;
}

TEST(Fsdp2, HoldsNoBf16CopyAtRestAndEachGradientShardFromItsReductionToTheOptimizer) {
  // dp 2, mixed bf16, 100 units of 1,001,000 parameters: 500,500 per rank and unit, 50,050,000
  // per rank. fully_shard's sharded parameter is the fp32 master, which the optimizer state's
  // 12 B (master, m, v) already count: 600,600,000 B, and nothing for a bf16 copy at rest. The
  // gradients do not exist when the step starts (zero_grad(set_to_none)): each unit's fp32 shard,
  // 500,500 x 4 = 2,002,000 B, appears at its reduce-scatter, and all 100 (200,200,000 B) are
  // freed after the optimizer. Same 16 B per parameter as the paper's 2 + 2 + 12, held only
  // from the reductions on.
  const auto two = memory_on_rank0(fsdp_step(2, 2));
  EXPECT_EQ(two.at("alloc.parameters").second, 0);
  EXPECT_EQ(two.at("alloc.gradients").second, 0);
  EXPECT_EQ(two.at("alloc.optimizer_state").second, 600'600'000);
  EXPECT_EQ(two.at(".sharded_grad").first, 100);
  EXPECT_EQ(two.at(".sharded_grad").second, 2'002'000);
  EXPECT_EQ(two.at("fsdp.sharded_grad.free").second, -200'200'000);
  // At world size 1 the same: the whole unit is the shard (1,001,000 x 4 B per unit).
  const auto one = memory_on_rank0(fsdp_step(1, 2));
  EXPECT_EQ(one.at("alloc.parameters").second, 0);
  EXPECT_EQ(one.at(".sharded_grad").second, 4'004'000);
  EXPECT_EQ(one.at("fsdp.sharded_grad.free").second, -400'400'000);
  // FSDP1 keeps the paper's accounting: 50,050,000 x 2 B of bf16 parameters and of gradients.
  const auto v1 = memory_on_rank0(fsdp_step(2, 1));
  EXPECT_EQ(v1.at("alloc.parameters").second, 100'100'000);
  EXPECT_EQ(v1.at("alloc.gradients").second, 100'100'000);
  EXPECT_EQ(v1.count(".sharded_grad"), 0u);
}

TEST(Fsdp2, TheVersionKeyNeedsAnFsdpFlavour) {
  const std::string base =
      "name: s\nmodel: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\ntraining: {global_batch: "
      "8, micro_batch: 1, seq_len: 1024}\n";
  const auto ok = scenario::parse_scenario(
      base + "layout: {dp: 8, data_parallel: fsdp_full_shard, fsdp_version: 2}\n", "a.yaml");
  EXPECT_EQ(ok.layout.fsdp_version, 2);
  try {
    scenario::parse_scenario(base + "layout: {dp: 8, data_parallel: zero1, fsdp_version: 2}\n",
                             "b.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("layout.fsdp_version"), std::string::npos) << e.what();
  }
  try {
    scenario::parse_scenario(
        base + "layout: {dp: 8, data_parallel: fsdp_full_shard, fsdp_version: 3}\n", "c.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("1, 2"), std::string::npos) << e.what();
  }
}

TEST(Fsdp2, TheReaderTakesABf16ReductionForFsdp2AndMegatronAndRefusesItElsewhere) {
  const std::string base = R"(
model: {preset: gpt2-small}
cluster: {preset: dgx_h100, nodes: 1}
stack: pytorch_eager
training: {global_batch: 8, micro_batch: 1, seq_len: 1024, precision: mixed_bf16,
           grad_reduce_in_bf16: true}
)";
  EXPECT_TRUE(
      scenario::parse_scenario(
          base + "layout: {dp: 8, data_parallel: fsdp_full_shard, fsdp_version: 2}\n", "fsdp2.yaml")
          .training.grad_reduce_in_bf16);
  // DDP under eager PyTorch has no such switch: the reader names the key and why.
  try {
    scenario::parse_scenario(base + "layout: {dp: 8, data_parallel: ddp}\n", "ddp.yaml");
    ADD_FAILURE() << "grad_reduce_in_bf16 under DDP was accepted";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training.grad_reduce_in_bf16"), std::string::npos) << what;
    EXPECT_NE(what.find("fsdp_version: 2"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace cs
