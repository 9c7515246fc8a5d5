// Context parallelism: ring attention's peer-to-peer bytes and attention FLOPs per rank, and the
// activation memory it divides, against hand derivations.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/model_work.h"
#include "models/software_stack.h"
#include "small_llama.h"
#include "strategies/layout.h"
#include "strategies/training_step.h"

namespace cs {
namespace {

using test::small_llama;  // tests/small_llama.h

strategy::StepGraph step_with_cp(int cp, model::Stack stack = model::Stack::ideal) {
  strategy::Layout l;
  l.cp = cp;
  strategy::TrainingSpec t;
  t.stack = stack;
  t.global_batch = 1;
  t.micro_batch = 1;
  t.seq_len = 4096;
  strategy::validate(l, t, small_llama(), cp);
  return strategy::build_training_step(small_llama(), l, t);
}

struct LayerTally {
  int64_t sent = 0, sends = 0;
  double attention_flops_fwd = 0, attention_flops_bwd = 0;
};

LayerTally tally(const strategy::StepGraph& step, ir::RankId rank, int layer) {
  LayerTally t;
  const auto& g = step.graph;
  for (const auto& task : g.tasks()) {
    if (task.rank != rank || task.layer != layer) continue;
    if (task.kind == ir::TaskKind::send) {
      t.sent += g.transfer(task).bytes.count;
      ++t.sends;
    }
    if (task.kind == ir::TaskKind::compute && g.compute(task).op == ir::OpClass::attention) {
      (task.phase == ir::Phase::forward ? t.attention_flops_fwd : t.attention_flops_bwd) +=
          g.compute(task).flops.value;
    }
  }
  return t;
}

TEST(ContextParallel, RingPassesKvChunksAndSplitsCausalAttentionEvenly) {
  // s 4096, b 1, bf16 (2 B), 2 KV heads of 128: one rank's K and V chunk is
  // 2 x (s / cp) x 256 x 2 B. Forward passes it cp - 1 times; backward passes K, V and their
  // gradients cp - 1 times: 3 (cp - 1) chunks per layer and rank.
  // Attention: causal 4 b heads s^2 d / 2 forward (2.5x backward) for the whole sequence; with
  // load balancing every rank does 1/cp of it.
  const double whole_fwd = 4.0 * 8 * 4096.0 * 4096.0 * 128 / 2;
  for (int cp : {2, 4}) {
    const auto step = step_with_cp(cp);
    const int64_t chunk = 2 * (4096 / cp) * 256 * 2;
    for (ir::RankId r = 0; r < static_cast<ir::RankId>(cp); ++r) {
      const LayerTally t = tally(step, r, 0);
      EXPECT_EQ(t.sent, 3 * (cp - 1) * chunk) << "cp " << cp << " rank " << r;
      EXPECT_EQ(t.sends, 2 * (cp - 1)) << "cp " << cp << " rank " << r;
      EXPECT_DOUBLE_EQ(t.attention_flops_fwd, whole_fwd / cp) << "cp " << cp;
      EXPECT_DOUBLE_EQ(t.attention_flops_bwd, 2.5 * whole_fwd / cp) << "cp " << cp;
    }
  }
  // cp = 1: no transfer, the whole causal attention on the one rank.
  const LayerTally one = tally(step_with_cp(1), 0, 0);
  EXPECT_EQ(one.sends, 0);
  EXPECT_DOUBLE_EQ(one.attention_flops_fwd, whole_fwd);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The first task of `rank` in layer 0 whose label ends with `tail` (forward labels end ".fwd").
ir::TaskId find_task(const ir::TaskGraph& g, ir::RankId rank, const std::string& tail,
                     ir::Phase phase) {
  for (ir::TaskId id = 0; id < g.tasks().size(); ++id) {
    const auto& task = g.tasks()[id];
    if (task.rank == rank && task.layer == 0 && task.phase == phase && !task.recompute &&
        ends_with(g.name(task.name), tail))
      return id;
  }
  ADD_FAILURE() << "no task ending with " << tail;
  return 0;
}

bool depends_on(const ir::TaskGraph& g, ir::TaskId before, ir::TaskId after) {
  for (const auto& [b, a] : g.dependencies()) {
    if (b == before && a == after) return true;
  }
  return false;
}

TEST(ContextParallel, PyTorchRingGathersQueryWidthKvOnceAndPassesFp32Gradients) {
  // PyTorch's context_parallel as TorchTitan ran it (models/layers/attention_core.cpp,
  // torch_ring_attention). s 4096, cp 4, b 1, 8 heads of 128, bf16: TorchTitan repeats the 2 KV
  // heads to the 8 query heads before SDPA, so a rank's K and V are 2 x 1024 tokens x 1024 x 2 B =
  // 4 MiB, and the all-gather's output (nccl-tests size) is cp x that = the whole sequence's K, V:
  // 16 MiB, once in forward and once in backward. Forward sends nothing else; backward passes each
  // step's fp32 K, V gradient chunk on: cp sends of 2 x 1024 x 1024 x 4 B = 8 MiB. Transformer
  // Engine's ring (the test above) passes the GQA-width chunk, 2 x 1024 x 256 x 2 B = 1 MiB, peer
  // to peer.
  const int cp = 4;
  const int64_t gathered = 16 << 20, grad_chunk = 8 << 20;
  for (model::Stack stack : {model::Stack::pytorch_eager, model::Stack::torch_compile}) {
    const auto step = step_with_cp(cp, stack);
    const auto& g = step.graph;
    for (ir::RankId r = 0; r < static_cast<ir::RankId>(cp); ++r) {
      int gathers = 0;
      int64_t fwd_sent = 0, bwd_sent = 0, bwd_sends = 0;
      for (const auto& task : g.tasks()) {
        if (task.rank != r || task.layer != 0) continue;
        if (task.kind == ir::TaskKind::collective &&
            g.collective(task).type == ir::CollectiveType::all_gather) {
          EXPECT_EQ(g.collective(task).bytes.count, gathered);
          EXPECT_EQ(g.group_ranks(g.collective(task).group).size(), 4u);
          ++gathers;
        }
        if (task.kind == ir::TaskKind::send) {
          (task.phase == ir::Phase::forward ? fwd_sent : bwd_sent) += g.transfer(task).bytes.count;
          bwd_sends += task.phase == ir::Phase::forward ? 0 : 1;
        }
      }
      EXPECT_EQ(gathers, 2) << model::to_string(stack) << " rank " << r;
      EXPECT_EQ(fwd_sent, 0);
      EXPECT_EQ(bwd_sends, cp);
      EXPECT_EQ(bwd_sent, cp * grad_chunk);
    }
  }
}

TEST(ContextParallel, PyTorchRingOverlapsInEagerAndWaitsWhereIssuedWhenTraced) {
  // Eager waits for the all-gather at its first use, step 1's kernel (step 0's kernel runs under
  // it), and for step j's gradient pass at step j + 1's merge. A torch.compile'd block traces
  // each collective followed at once by wait_tensor: step 0's kernel waits for the gather, and
  // step j + 1's kernel for step j's gradient pass.
  for (model::Stack stack : {model::Stack::pytorch_eager, model::Stack::torch_compile}) {
    const bool traced = stack == model::Stack::torch_compile;
    const auto step = step_with_cp(2, stack);
    const auto& g = step.graph;
    const ir::TaskId ag = find_task(g, 0, "attn.core.cp0.fwd.cp_all_gather", ir::Phase::forward);
    const ir::TaskId k0 = find_task(g, 0, "attn.core.cp0.fwd", ir::Phase::forward);
    const ir::TaskId k1 = find_task(g, 0, "attn.core.cp1.fwd", ir::Phase::forward);
    EXPECT_EQ(depends_on(g, ag, k0), traced) << model::to_string(stack);
    EXPECT_EQ(depends_on(g, ag, k1), !traced) << model::to_string(stack);
    const ir::TaskId rx =
        find_task(g, 0, "attn.core.cp0.bwd.merge.cp_recv_grad", ir::Phase::backward);
    const ir::TaskId k1b = find_task(g, 0, "attn.core.cp1.bwd", ir::Phase::backward);
    const ir::TaskId m1b = find_task(g, 0, "attn.core.cp1.bwd.merge", ir::Phase::backward);
    EXPECT_EQ(depends_on(g, rx, k1b), traced) << model::to_string(stack);
    EXPECT_EQ(depends_on(g, rx, m1b), !traced) << model::to_string(stack);
  }
}

TEST(ContextParallel, PyTorchRingMergesInFp32) {
  // The forward merge after step j > 0 (_SDPAMerger): fused (torch.compile) it reads the fp32
  // output (4 B) and the step's bf16 output (2 B) and writes the fp32 output (4 B) per element of
  // the rank's output, E = 8 heads x 2048 tokens x 128 at cp 2: 10 E = 20,971,520 B. Eager runs
  // its to(), sub, mul and sub as four kernels: 4x the traffic. The last step's merge also casts
  // the output back to bf16 (4 + 2 B per element): 16 E. Backward merges add dQ, dK and dV
  // (fp32, repeated to 8 heads) in place, 3 x 10 E, twice as many kernels eager.
  const int64_t E = 8 * 2048 * 128;
  for (model::Stack stack : {model::Stack::torch_compile, model::Stack::pytorch_eager}) {
    const int64_t kernels = stack == model::Stack::pytorch_eager ? 4 : 1;
    const auto step = step_with_cp(2, stack);
    const auto& g = step.graph;
    const auto bytes = [&](const std::string& tail, ir::Phase phase) {
      return g.compute(g.tasks()[find_task(g, 0, tail, phase)]).bytes.count;
    };
    EXPECT_EQ(bytes("attn.core.cp1.merge.fwd", ir::Phase::forward), kernels * 16 * E);
    EXPECT_EQ(bytes("attn.core.cp0.merge.fwd", ir::Phase::forward), 6 * E);
    EXPECT_EQ(bytes("attn.core.cp1.bwd.merge", ir::Phase::backward),
              (kernels == 4 ? 2 : 1) * 30 * E);
  }
}

TEST(ContextParallel, TwoRanksHalveALayersActivations) {
  // Every saved activation is per token (norm inputs, Q/K/V, the MLP's inner activations, the
  // log-sum-exp per query row), and each CP rank holds s / cp tokens: CP 2 halves the layer.
  model::WorkShape w;
  w.micro_batch = 1;
  w.seq = 4096;
  const int64_t whole = model::activation_bytes_per_layer(small_llama(), w).count;
  w.cp = 2;
  EXPECT_EQ(2 * model::activation_bytes_per_layer(small_llama(), w).count, whole);
  // By hand (s 4096, h 1024, ab 2, kv 256, ffn 2816): norms 4 s h ab, Q + proj input 2 s h ab,
  // K + V 2 s kv ab, SwiGLU 3 s f ab, log-sum-exp 8 heads x s x 4 B.
  const int64_t s = 4096;
  EXPECT_EQ(whole, s * 1024 * 8 + s * 2 * (2 * 1024 + 2 * 256) + s * 2816 * 2 * 3 + 8 * s * 4);
}

TEST(ContextParallel, GradientsAreAveragedOverDataAndContextRanks) {
  // DDP with cp 2, dp 1: the two CP ranks hold the same parameters, so the gradient buckets are
  // all-reduced over both (Megatron's DP x CP group).
  const auto step = step_with_cp(2);
  int grads = 0;
  for (const auto& task : step.graph.tasks()) {
    if (task.kind != ir::TaskKind::collective || task.rank != 0) continue;
    const auto& call = step.graph.collective(task);
    if (call.gradients) {
      ++grads;
      EXPECT_EQ(step.graph.group_ranks(call.group).size(), 2u);
    }
  }
  EXPECT_GT(grads, 0);
}

TEST(ContextParallel, RotaryModelsTrainBeyondTheirContextLearnedPositionsDoNot) {
  // TorchTitan's Table 2 trains Llama 3.1 8B at 262,144 tokens with CP 8, twice the 131,072 its
  // rotary positions were trained to: nothing in the model ends there, so it is simulated.
  strategy::Layout l;
  l.cp = 8;
  strategy::TrainingSpec t;
  t.global_batch = 1;
  t.seq_len = 262144;
  EXPECT_NO_THROW(strategy::validate(l, t, model::find_model_preset("llama3.1-8b"), 8));
  // GPT-2's learned position table has 1,024 rows: 1,025 tokens have no position.
  strategy::Layout one;
  t.seq_len = 1025;
  try {
    strategy::validate(one, t, model::find_model_preset("gpt2-small"), 1);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_STREQ(
        e.what(),
        "seq_len 1025 exceeds gpt2-small's context of 1024 (its learned positions end there)");
  }
}

}  // namespace
}  // namespace cs
