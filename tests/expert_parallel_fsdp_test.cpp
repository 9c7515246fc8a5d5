// Expert parallelism with FSDP (TorchTitan's FSDP2 + EP, Megatron-FSDP with its expert
// data-parallel group; strategies/data_parallel/fsdp.cpp): routed experts sharded over the ranks
// holding the same experts, the rest over the whole data-parallel group. Model state per GPU and
// each group's all-gather and reduce-scatter bytes, derived by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "interop/launch_writers.h"
#include "interop/megatron_args.h"
#include "launch_words.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

// Mixtral 8x7B (h 4096, 32 layers, 32 heads, 8 KV heads of 128, 8 experts of 14336, vocab 32000,
// untied) on 16 H100s, dp 16 with ep 8: the scenario of moe_test.cpp with FSDP FULL_SHARD in place
// of zero1. Its stack is megatron_core: bf16 weights, fp32 gradients (main_grad), 12 B of fp32
// master, m and v per parameter.
strategy::StepGraph mixtral_ep8_fsdp(int fsdp_version) {
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/mixtral-8x7b-16xh100-ep8.yaml");
  s.layout.data_parallel = strategy::DataParallel::fsdp_full_shard;
  s.layout.fsdp_version = fsdp_version;
  s.training.overlap_param_gather = false;  // a ZeRO-1/2 flag
  strategy::validate(s.layout, s.training, s.model, s.gpus);
  return strategy::build_training_step(s.model, s.layout, s.training);
}

// Per GPU: dense parameters per layer q, o 2 x 4096^2, k, v 2 x 4096 x 1024, two RMSNorms
// 2 x 4096, router 8 x 4096 = 41,984,000; with the embedding and head (2 x 32000 x 4096) and the
// final norm the dense total is 32 x 41,984,000 + 262,148,096 = 1,605,636,096, sharded over all
// 16 ranks. Routed experts: 3 x 4096 x 14336 = 176,160,768 each, one per layer per rank under
// EP 8, 32 x that = 5,637,144,576, sharded over the 16 / 8 = 2 ranks holding the same expert.
constexpr int64_t kDense = 1'605'636'096, kExperts = 5'637'144'576;
constexpr int64_t kPerGpu = kDense / 16 + kExperts / 2;  // 100,352,256 + 2,818,572,288

// Bytes of the step-start allocation `name` ("alloc.parameters", ...) on `rank`.
int64_t allocated(const strategy::StepGraph& step, ir::RankId rank, const std::string& name) {
  for (size_t i = 0; i < step.graph.size(); ++i) {
    const ir::Task& t = step.graph.task(static_cast<ir::TaskId>(i));
    if (t.rank == rank && t.kind == ir::TaskKind::memory &&
        step.graph.task_name(static_cast<ir::TaskId>(i)) == name)
      return step.graph.memory(t).delta;
  }
  return -1;
}

TEST(ExpertParallelFsdp, ModelStatePerGpuShardsExpertsOverTheirOwnGroup) {
  // FSDP1's accounting (ZeRO-3): 2 B weights, 4 B gradients, 12 B optimizer state, each on
  // 2,918,924,544 parameters per GPU: 5,837,849,088 + 11,675,698,176 + 35,027,094,528 B = 52.5
  // GB, where zero1 keeps 43.5 GB of whole weights and gradients beside it (moe_test.cpp).
  const auto v1 = mixtral_ep8_fsdp(1);
  for (ir::RankId r : {0u, 9u}) {
    EXPECT_EQ(allocated(v1, r, "alloc.parameters"), 2 * kPerGpu);
    EXPECT_EQ(allocated(v1, r, "alloc.gradients"), 4 * kPerGpu);
    EXPECT_EQ(allocated(v1, r, "alloc.optimizer_state"), 12 * kPerGpu);
  }
  // FSDP2's sharded parameter is the fp32 master the optimizer state counts; its gradients
  // appear at the reductions: only the 12 B per parameter are held when the step starts.
  const auto v2 = mixtral_ep8_fsdp(2);
  EXPECT_EQ(allocated(v2, 0, "alloc.parameters"), 0);
  EXPECT_EQ(allocated(v2, 0, "alloc.gradients"), 0);
  EXPECT_EQ(allocated(v2, 0, "alloc.optimizer_state"), 12 * kPerGpu);
}

TEST(ExpertParallelFsdp, EachGroupGathersAndReduceScattersItsOwnUnits) {
  // FSDP2 FULL_SHARD, one sequence per micro-batch, 64 / 16 = 4 micro-batches, each reducing
  // (TorchTitan calls no no_sync). Rank 0's groups: the dense units' is all 16 ranks; its experts'
  // is the ranks with the same EP index (layout.h's grid: ep index = dp index mod 8): {0, 8}.
  // Per micro-batch each decoder layer's two units are gathered before its forward and again
  // before its backward (32 x 2 each), the root (embedding, final norm, head) once, kept from the
  // forward to the embedding's backward; every unit is reduce-scattered once.
  //   layer dense unit   all-gather 41,984,000 x 2 B = 83,968,000; reduce-scatter x 4 B =
  //                      167,936,000 (fp32 main_grad)
  //   root unit          262,148,096 x 2 B = 524,296,192; x 4 B = 1,048,592,384
  //   expert unit        176,160,768 x 2 B = 352,321,536; x 4 B = 704,643,072
  const auto step = mixtral_ep8_fsdp(2);
  // (group size, type, bytes) -> count on rank 0
  std::map<std::tuple<size_t, ir::CollectiveType, int64_t>, int> seen;
  for (const ir::Task& t : step.graph.tasks()) {
    if (t.rank != 0 || t.kind != ir::TaskKind::collective) continue;
    const ir::CollectiveCall& c = step.graph.collective(t);
    if (c.type == ir::CollectiveType::all_to_all) continue;  // the tokens', as under DDP
    ++seen[{step.graph.group_ranks(c.group).size(), c.type, c.bytes.count}];
  }
  using ir::CollectiveType::all_gather, ir::CollectiveType::reduce_scatter;
  const std::map<std::tuple<size_t, ir::CollectiveType, int64_t>, int> expected{
      {{16, all_gather, 83'968'000}, 4 * 64},   {{16, all_gather, 524'296'192}, 4},
      {{2, all_gather, 352'321'536}, 4 * 64},   {{16, reduce_scatter, 167'936'000}, 4 * 32},
      {{16, reduce_scatter, 1'048'592'384}, 4}, {{2, reduce_scatter, 704'643'072}, 4 * 32},
  };
  EXPECT_EQ(seen, expected);
  // The expert group of rank 0 is {0, 8}.
  for (const ir::Task& t : step.graph.tasks()) {
    if (t.rank != 0 || t.kind != ir::TaskKind::collective) continue;
    const auto& ranks = step.graph.group_ranks(step.graph.collective(t).group);
    if (ranks.size() == 2) {
      EXPECT_EQ(ranks, (std::vector<ir::RankId>{0, 8}));
      break;
    }
  }
}

TEST(ExpertParallelFsdp, MegatronFsdpFlagsRoundTrip) {
  // With EP, FULL_SHARD is written as Megatron-FSDP's optim_grads_params (torch FSDP2's flag
  // without it), and import megatron reads Megatron-FSDP's strategies back.
  auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                   "/scenarios/mixtral-8x7b-16xh100-ep8.yaml");
  s.layout.data_parallel = strategy::DataParallel::fsdp_full_shard;
  s.layout.fsdp_version = 2;
  s.training.overlap_param_gather = false;
  std::vector<std::string> notes;
  const auto args = interop::megatron_arguments(
      {"m", s.model, s.layout, s.training, s.gpus, s.cluster.node.gpus}, notes);
  auto has = [&](const std::string& a) {
    return std::find(args.begin(), args.end(), a) != args.end();
  };
  EXPECT_TRUE(has("--use-megatron-fsdp"));
  EXPECT_TRUE(has("--data-parallel-sharding-strategy optim_grads_params"));
  EXPECT_FALSE(has("--use-torch-fsdp2"));
  const std::vector<std::string> argv = test::launch_words(args);
  interop::ImportOptions o;
  o.gpus = 16;
  auto read_back = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = argv;
    a.insert(a.end(), extra.begin(), extra.end());
    std::map<std::string, std::string> layout;
    for (const auto& [k, v] : interop::import_megatron(a, o).layout) layout[k] = v;
    return layout;
  };
  const auto full = read_back({});
  EXPECT_EQ(full.at("data_parallel"), "fsdp_full_shard");
  EXPECT_EQ(full.at("fsdp_version"), "2");
  EXPECT_EQ(full.at("ep"), "8");
  // The last occurrence wins, as with argparse.
  EXPECT_EQ(read_back({"--data-parallel-sharding-strategy", "optim_grads"}).at("data_parallel"),
            "zero2");
  EXPECT_EQ(read_back({"--data-parallel-sharding-strategy", "optim"}).at("data_parallel"), "zero1");
}

}  // namespace
}  // namespace cs
