// planner::preset_scenario: what `plan --model --cluster --gpus --global-batch --seq` searches.
#include "planner/preset_scenario.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace cs::planner {
namespace {

std::string error_of(const PresetRequest& r) {
  try {
    preset_scenario(r);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(PresetScenario, GpusFillWholeNodesOfThePreset) {
  // 16 GPUs of DGX H100 (8 H100 SXM per node): 2 nodes.
  const scenario::Scenario s =
      preset_scenario({"llama2-7b", "dgx_h100", 16, 64, 2048, model::Precision::mixed_bf16,
                       model::AttentionImpl::fused});
  EXPECT_EQ(s.name, "plan");
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.cluster.nodes, 2);
  EXPECT_EQ(s.gpus, 16);
  EXPECT_EQ(s.cluster_name, "dgx_h100");
  EXPECT_EQ(s.gpu, "h100_sxm");
  EXPECT_EQ(s.model.name, "llama2-7b");
  EXPECT_EQ(s.training.global_batch, 64);
  EXPECT_EQ(s.training.seq_len, 2048);
  // Up to one node, any count: 4 of a node's 8 GPUs.
  EXPECT_EQ(preset_scenario({"llama2-7b", "dgx_h100", 4, 8, 2048}).nodes, 1);
}

TEST(PresetScenario, PartNodesAndSequencesBeyondLearnedPositionsAreRefused) {
  EXPECT_EQ(error_of({"llama2-7b", "dgx_h100", 12, 64, 2048}),
            "--gpus 12 is not a whole number of dgx_h100 nodes (8 GPUs each)");
  // GPT-2 learns 1,024 positions (Radford et al. 2019): no token beyond them has one.
  EXPECT_EQ(error_of({"gpt2-small", "dgx_h100", 8, 64, 2048}),
            "--seq 2048 exceeds gpt2-small's context of 1024 (its learned positions end there)");
  EXPECT_EQ(error_of({"gpt2-small", "dgx_h100", 8, 64, 1024}), "no error");
  // Llama 2's context is 4,096 tokens (Touvron et al. 2023), but rotary positions extend past it.
  EXPECT_EQ(error_of({"llama2-7b", "dgx_h100", 8, 64, 8192}), "no error");
  // An MLP has no positions at all.
  EXPECT_EQ(error_of({"mlp-small", "dgx_h100", 8, 64, 1 << 20}), "no error");
  EXPECT_NE(error_of({"no-such-model", "dgx_h100", 8, 64, 2048}), "no error");
}

}  // namespace
}  // namespace cs::planner
