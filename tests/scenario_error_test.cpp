// Broken scenarios each give one error naming file, line, column, key path and what is valid.
// The messages are pinned exactly: changing one is a user-visible change.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scenarios/scenario.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string error_of(const std::string& name) {
  const std::string path = "tests/data/bad/" + name;
  try {
    // Load through the relative path so the message shows what a user would type.
    std::string full = cs::test_paths::source_dir() + "/" + path;
    std::ifstream in(full);
    std::stringstream buf;
    buf << in.rdbuf();
    scenario::parse_scenario(buf.str(), path);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScenarioErrors, UnknownKey) {
  EXPECT_EQ(error_of("unknown_key.yaml"),
            "tests/data/bad/unknown_key.yaml:8:3: layout.bucket_sise: unknown key; valid keys "
            "here: tp, pp, dp, cp, cp_comm, cp_a2a, ep, etp, data_parallel, bucket_size, "
            "sequence_parallel, schedule, fsdp_version, virtual_stages, first_stage_layers, "
            "last_stage_layers, account_for_embedding_in_pipeline_split, "
            "account_for_loss_in_pipeline_split, pipeline_layout, order");
}
TEST(ScenarioErrors, MissingField) {
  EXPECT_EQ(error_of("missing_field.yaml"),
            "tests/data/bad/missing_field.yaml:9:3: training: missing required key 'micro_batch'");
}
TEST(ScenarioErrors, BadUnit) {
  EXPECT_EQ(error_of("bad_unit.yaml"),
            "tests/data/bad/bad_unit.yaml:8:16: layout.bucket_size: unknown unit 'MiBs' in byte "
            "size '25 MiBs': valid units are B, KiB, MiB, GiB, TiB, KB, MB, GB, TB");
}
TEST(ScenarioErrors, NegativeSize) {
  EXPECT_EQ(error_of("negative_size.yaml"),
            "tests/data/bad/negative_size.yaml:10:16: training.micro_batch: must be a positive "
            "integer, got -8");
  EXPECT_EQ(error_of("negative_bucket.yaml"),
            "tests/data/bad/negative_bucket.yaml:8:16: layout.bucket_size: size must not be "
            "negative, got '-25MiB'");
}
TEST(ScenarioErrors, UnknownPreset) {
  EXPECT_EQ(error_of("unknown_preset.yaml"),
            "tests/data/bad/unknown_preset.yaml:3:11: model.preset: unknown model preset "
            "'gpt2-giant'; valid presets: gpt2-small, gpt2-medium, "
            "gpt2-large, gpt2-xl, gpt3-175b, llama2-7b, llama2-13b, llama2-70b, llama3-8b, "
            "llama3-70b, llama3-405b, llama3.1-8b, "
            "llama3.1-70b, llama3.1-405b, llama3.2-1b, llama3.2-3b, mistral-7b, mixtral-8x7b, "
            "mixtral-8x22b, qwen2.5-7b, qwen2.5-32b, qwen3-8b, "
            "qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3, kimi-k2, gpt-oss-120b, gpt-oss-20b, "
            "nemotron-3-nano, nemotron-3.5-lightning, nemotron-3-super, gpt-neox-20b, mlp-small");
}
TEST(ScenarioErrors, LayoutDoesNotDivideTheGpus) {
  EXPECT_EQ(error_of("layout_does_not_divide.yaml"),
            "tests/data/bad/layout_does_not_divide.yaml:7:3: layout: tp x pp x dp = 1 x 1 x 3 = 3 "
            "does not match the cluster's 8 GPUs; "
            "choose sizes whose product is 8");
}
TEST(ScenarioErrors, NetworkAndFabric) {
  EXPECT_EQ(error_of("bad_fidelity.yaml"),
            "tests/data/bad/bad_fidelity.yaml:7:13: network.fidelity: unknown value 'packet'; "
            "valid values: analytic, flow");
  EXPECT_EQ(error_of("bad_oversubscription.yaml"),
            "tests/data/bad/bad_oversubscription.yaml:9:23: cluster.fabric.oversubscription: must "
            "be at least 1 (leaf downlink : uplink bandwidth)");
  EXPECT_EQ(error_of("nodes_without_nics.yaml"),
            "tests/data/bad/nodes_without_nics.yaml:5:3: cluster: cluster 'hgx_h100_2gpu': nodes "
            "can only exceed 1 when nodes have NICs "
            "(node.nics; multi-node presets: dgx_h100, dgx_h100_roce, grand_teton_h100, dgx_h200, "
            "dgx_a100, pcie_8x_h100, nvlink_pairs_8x_h100, hgx_h800, dgx_b200, gb200_nvl72, "
            "hgx_b300, gb300_nvl72, p5_48xlarge)");
}
TEST(ScenarioErrors, PipelineLayoutsTheModelOrFrameworkCannotRun) {
  EXPECT_EQ(error_of("pipeline_layers_do_not_split.yaml"),
            "tests/data/bad/pipeline_layers_do_not_split.yaml:8:3: layout: gpt2-large's 36 layers "
            "cannot fill "
            "pp x virtual_stages = 40 model chunks (each needs a layer); choose pp x "
            "virtual_stages of at most 36");
  EXPECT_EQ(error_of("zero2_with_pipeline.yaml"),
            "tests/data/bad/zero2_with_pipeline.yaml:7:3: layout: zero2 with pp > 1 is not "
            "supported: it reduce-scatters every "
            "micro-batch (DeepSpeed forbids ZeRO-2 with pipeline parallelism); use zero1 "
            "(Megatron's distributed optimizer) or ddp");
  EXPECT_EQ(error_of("overlap_p2p_outside_megatron.yaml"),
            "tests/data/bad/overlap_p2p_outside_megatron.yaml:10:21: training.overlap_p2p_comm: is "
            "a Megatron-LM pipeline switch: applies to stack: megatron_core only (this scenario's "
            "stack is torch_compile)");
  EXPECT_EQ(error_of("bad_schedule.yaml"),
            "tests/data/bad/bad_schedule.yaml:9:13: layout.schedule: unknown value 'zigzag'; valid "
            "values: gpipe, 1f1b, interleaved, zb_h1");
}
TEST(ScenarioErrors, LinkToUnknownDevice) {
  EXPECT_EQ(error_of("bad_link.yaml"),
            "tests/data/bad/bad_link.yaml:12:24: cluster.links[1].to: no device named 'switch'; "
            "devices are: gpu0, gpu1, sw");
}
TEST(ScenarioErrors, InvalidYaml) {
  EXPECT_THROW(scenario::parse_scenario("model: [unclosed", "x.yaml"), scenario::ScenarioError);
}

TEST(Scenario, CustomTopologyBuildsAndRoutes) {
  // Two GPUs on one NVSwitch, declared by hand: 2 GPUs, one node, routed through the switch.
  const std::string text = R"(
model: {preset: mlp-small}
cluster:
  gpu: h100_sxm
  devices:
    - {name: gpu0, kind: gpu}
    - {name: gpu1, kind: gpu}
    - {name: sw, kind: nvswitch}
  links:
    - {from: gpu0, to: sw, kind: nvlink, bandwidth: 450GB/s, latency: 0.5us}
    - {from: gpu1, to: sw, kind: nvlink, bandwidth: 450GB/s, latency: 0.5us}
layout: {dp: 2}
training: {global_batch: 16, micro_batch: 8, seq_len: 1}
)";
  const auto s = scenario::parse_scenario(text, "inline.yaml");
  EXPECT_EQ(s.gpus, 2);
  const auto t = scenario::build_topology(s);
  const topo::Route r = t.route(0, 1);
  EXPECT_EQ(r.links.size(), 2u);
  EXPECT_DOUBLE_EQ(t.bottleneck(r).value, 450e9);
  EXPECT_EQ(t.latency(r), SimTime::from_us(1.0));
}

}  // namespace
}  // namespace cs
