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

TEST(PresetScenario, Nvl72JobsTakeOneDomainOrSixtyFourGpusOfEachRack) {
  // An NVL72 rack is one 72-GPU NVLink domain of 18 trays (topology/presets.cpp). 64 GPUs: one
  // domain, the job on 64 of its GPUs (16 trays).
  const scenario::Scenario one = preset_scenario({"llama3-70b", "gb200_nvl72", 64, 256, 8192});
  EXPECT_EQ(one.nodes, 1);
  EXPECT_EQ(one.gpus, 64);
  // 256 GPUs: 4 segments of 64 (16 trays of each of 4 racks), each GPU with its own NIC.
  const scenario::Scenario four = preset_scenario({"llama3-70b", "gb300_nvl72", 256, 256, 8192});
  EXPECT_EQ(four.nodes, 4);
  EXPECT_EQ(four.cluster.node.gpus, 64);
  EXPECT_EQ(four.cluster.node.nics, 64);
  EXPECT_EQ(four.cluster.gpu_count(), 256);
  EXPECT_EQ(four.gpus, 256);
  // 144 GPUs: two whole racks, as before segments.
  const scenario::Scenario two = preset_scenario({"llama3-70b", "gb200_nvl72", 144, 144, 8192});
  EXPECT_EQ(two.nodes, 2);
  EXPECT_EQ(two.cluster.node.gpus, 72);
  // 100 GPUs: neither 72s nor 64s.
  EXPECT_EQ(error_of({"llama3-70b", "gb200_nvl72", 100, 100, 8192}),
            "--gpus 100 is not a whole number of gb200_nvl72 nodes (72 GPUs each, or 64 GPUs of "
            "each in one NVLink domain)");
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
