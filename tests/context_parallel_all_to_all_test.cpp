// Context parallelism by all-to-all (Megatron-Core's --cp-comm-type a2a: DeepSpeed-Ulysses as
// Transformer Engine runs it) and hierarchically (a2a+p2p: the all-to-all inside groups, the ring
// across them): each all-to-all's bytes and group, the ring's chunks and neighbours, the attention
// FLOPs per rank, the heads' divisibility and the scenario and Megatron-LM flags, derived by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "error_of.h"
#include "interop/launch_writers.h"
#include "interop/megatron_args.h"
#include "launch_words.h"
#include "models/model_work.h"
#include "scenarios/scenario.h"
#include "small_llama.h"
#include "strategies/layout.h"
#include "strategies/training_step.h"
#include "strategies/work_shape.h"

namespace cs {
namespace {

using test::small_llama;  // tests/small_llama.h

strategy::Layout cp_layout(int cp, model::CpComm comm, int a2a = 0) {
  strategy::Layout l;
  l.cp = cp;
  l.cp_comm = comm;
  l.cp_a2a = a2a;
  return l;
}

strategy::TrainingSpec one_sequence() {
  strategy::TrainingSpec t;
  t.global_batch = 1;
  t.micro_batch = 1;
  t.seq_len = 4096;
  return t;
}

strategy::StepGraph step_of(const strategy::Layout& l) {
  strategy::validate(l, one_sequence(), small_llama(), l.cp);
  return strategy::build_training_step(small_llama(), l, one_sequence());
}

struct LayerTally {
  // (phase, group size, bytes) -> all-to-alls of rank 0 in layer 0
  std::map<std::tuple<ir::Phase, size_t, int64_t>, int> all_to_alls;
  std::vector<ir::RankId> a2a_group;
  int64_t sent = 0;
  std::vector<ir::RankId> sent_to;
  double attention_flops_fwd = 0;
};

LayerTally tally_rank0_layer0(const strategy::StepGraph& step) {
  LayerTally t;
  const auto& g = step.graph;
  for (const auto& task : g.tasks()) {
    if (task.rank != 0 || task.layer != 0) continue;
    if (task.kind == ir::TaskKind::collective &&
        g.collective(task).type == ir::CollectiveType::all_to_all) {
      const auto& ranks = g.group_ranks(g.collective(task).group);
      ++t.all_to_alls[{task.phase, ranks.size(), g.collective(task).bytes.count}];
      t.a2a_group = ranks;
    }
    if (task.kind == ir::TaskKind::send) {
      t.sent += g.transfer(task).bytes.count;
      t.sent_to.push_back(g.transfer(task).dst);
    }
    if (task.kind == ir::TaskKind::compute && task.phase == ir::Phase::forward &&
        g.compute(task).op == ir::OpClass::attention)
      t.attention_flops_fwd += g.compute(task).flops.value;
  }
  return t;
}

// The whole sequence's causal attention forward: 4 b heads s^2 d / 2.
constexpr double kWholeForward = 4.0 * 8 * 4096.0 * 4096.0 * 128 / 2;

TEST(ContextParallelAllToAll, UlyssesMovesQkvAndTheOutputOverTheCpGroup) {
  // cp 2, s 4096, b 1, bf16: a rank holds 2048 tokens of all 8 heads. Q (and the output): 2048 x
  // 8 x 128 x 2 B = 4,194,304 B; K and V: 2048 x 2 KV heads x 128 x 2 B = 1,048,576 B each. An
  // all-to-all moves the rank's whole buffer (nccl-tests' size). Forward: Q, K, V before the
  // attention, the output after; backward: the output and its gradient, then dK, dV and dQ.
  const LayerTally t = tally_rank0_layer0(step_of(cp_layout(2, model::CpComm::a2a)));
  using ir::Phase;
  const std::map<std::tuple<Phase, size_t, int64_t>, int> expected{
      {{Phase::forward, 2, 4'194'304}, 2},   // Q, output
      {{Phase::forward, 2, 1'048'576}, 2},   // K, V
      {{Phase::backward, 2, 4'194'304}, 3},  // output and its gradient, dQ
      {{Phase::backward, 2, 1'048'576}, 2},  // dK, dV
  };
  EXPECT_EQ(t.all_to_alls, expected);
  EXPECT_EQ(t.a2a_group, (std::vector<ir::RankId>{0, 1}));
  // No ring: nothing passed peer to peer. The kernel runs on 4096 tokens and 8 / 2 = 4 heads:
  // half the whole attention, as the ring's load-balanced share.
  EXPECT_EQ(t.sent, 0);
  EXPECT_DOUBLE_EQ(t.attention_flops_fwd, kWholeForward / 2);
}

TEST(ContextParallelAllToAll, HierarchicalAllToAllInsideGroupsRingAcrossThem) {
  // cp 4 as a2a+p2p with an all-to-all level of 2: ranks {0, 1} and {2, 3} exchange heads; the
  // ring runs over the two groups, rank 0 passing to rank 2 (2 CP indices on). A rank holds 1024
  // tokens: Q 1024 x 8 x 128 x 2 B = 2,097,152, K and V 1024 x 2 x 128 x 2 B = 524,288 each.
  // After the all-to-all it holds 2048 tokens of 4 heads and 1 KV head: the ring's K and V chunk
  // is 2 x 2048 x 128 x 2 B = 1,048,576, passed once forward, twice backward (with its gradient).
  // Its two steps are causal kernels on 2048 tokens and 4 heads: a quarter of the whole.
  const LayerTally t = tally_rank0_layer0(step_of(cp_layout(4, model::CpComm::a2a_p2p, 2)));
  using ir::Phase;
  const std::map<std::tuple<Phase, size_t, int64_t>, int> expected{
      {{Phase::forward, 2, 2'097'152}, 2},
      {{Phase::forward, 2, 524'288}, 2},
      {{Phase::backward, 2, 2'097'152}, 3},
      {{Phase::backward, 2, 524'288}, 2},
  };
  EXPECT_EQ(t.all_to_alls, expected);
  EXPECT_EQ(t.a2a_group, (std::vector<ir::RankId>{0, 1}));
  EXPECT_EQ(t.sent, 3 * 1'048'576);
  EXPECT_EQ(t.sent_to, (std::vector<ir::RankId>{2, 2}));
  EXPECT_DOUBLE_EQ(t.attention_flops_fwd, kWholeForward / 4);
}

TEST(ContextParallelAllToAll, HeadsMustDivideAndOnlyTransformerEngineRunsIt) {
  using test::error_of;
  // 2 KV heads do not split over 4 ranks (Transformer Engine asserts it).
  EXPECT_EQ(error_of([] { step_of(cp_layout(4, model::CpComm::a2a)); }),
            "the context-parallel all-to-all over 4 ranks splits each rank's attention heads: it "
            "must divide the 8 query heads and 2 KV heads per tensor-parallel rank of llama-small "
            "(use a smaller all-to-all level, cp_comm: a2a+p2p with cp_a2a, or p2p)");
  EXPECT_NE(error_of([] {
              strategy::TrainingSpec t = one_sequence();
              t.stack = model::Stack::torch_compile;
              strategy::Layout l = cp_layout(2, model::CpComm::a2a);
              strategy::validate(l, t, small_llama(), 2);
              strategy::build_training_step(small_llama(), l, t);
            }).find("PyTorch's context_parallel runs the ring only"),
            std::string::npos);
}

TEST(ContextParallelAllToAll, ScenarioKeysAndMegatronFlagsRoundTrip) {
  using test::error_of;
  const std::string head =
      "model:\n  preset: llama3-8b\ncluster:\n  preset: dgx_h100\n  nodes: 1\nlayout:\n  cp: 8\n";
  const std::string train = "training:\n  global_batch: 1\n  micro_batch: 1\n  seq_len: 8192\n";
  const auto s = scenario::parse_scenario(head + "  cp_comm: a2a+p2p\n  cp_a2a: 4\n" + train, "c");
  EXPECT_EQ(s.layout.cp_comm, model::CpComm::a2a_p2p);
  EXPECT_EQ(s.layout.cp_a2a, 4);
  EXPECT_NE(error_of([&] {
              scenario::parse_scenario(head + "  cp_comm: a2a+p2p\n" + train, "c");
            }).find("a2a+p2p needs layout.cp_a2a"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              scenario::parse_scenario(head + "  cp_comm: a2a\n  cp_a2a: 2\n" + train, "c");
            }).find("applies to cp_comm: a2a+p2p only"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              scenario::parse_scenario(head + "  cp_comm: ring\n" + train, "c");
            }).find("valid values: p2p, a2a, a2a+p2p"),
            std::string::npos);
  // Written as Megatron-LM's flags and read back.
  std::vector<std::string> notes;
  const auto args = interop::megatron_arguments(
      {"c", s.model, s.layout, s.training, s.gpus, s.cluster.node.gpus}, notes);
  const std::vector<std::string> argv = test::launch_words(args);
  EXPECT_NE(std::find(args.begin(), args.end(), "--cp-comm-type a2a+p2p"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--hierarchical-context-parallel-sizes 4 2"),
            args.end());
  interop::ImportOptions o;
  o.gpus = 8;
  std::map<std::string, std::string> layout;
  for (const auto& [k, v] : interop::import_megatron(argv, o).layout) layout[k] = v;
  EXPECT_EQ(layout["cp_comm"], "a2a+p2p");
  EXPECT_EQ(layout["cp_a2a"], "4");
}

TEST(ContextParallelAllToAll, WhichStacksRunWhichCpCommunication) {
  using model::CpComm;
  using V = std::vector<CpComm>;
  EXPECT_EQ(strategy::cp_comms_run_by(model::Stack::megatron_core),
            (V{CpComm::p2p, CpComm::a2a, CpComm::a2a_p2p}));
  EXPECT_EQ(strategy::cp_comms_run_by(model::Stack::deepspeed), (V{CpComm::p2p, CpComm::a2a}));
  EXPECT_EQ(strategy::cp_comms_run_by(model::Stack::torch_compile), (V{CpComm::p2p}));
  EXPECT_EQ(strategy::cp_comms_run_by(model::Stack::pytorch_eager), (V{CpComm::p2p}));
}

}  // namespace
}  // namespace cs
