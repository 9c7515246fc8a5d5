// Issue 32's coverage acceptance: every row of NVIDIA Megatron-Bridge's published performance
// summary (validate/data/megatron_bridge_perf_2025_2026.yaml, 293 rows of releases 25.09-26.08)
// is expressible as a scenario, or is listed with the one feature still missing. A row is
// expressible when its model and system have presets, its precision is modelled and
// planner::preset_scenario poses its GPUs, sequence and batch (what `plan` and the recipe check
// start from). The test prints every row that is not, with its feature.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "common/error.h"
#include "planner/preset_scenario.h"
#include "test_paths.h"

namespace cs {
namespace {

// The table's model_key: a model preset, or the one feature missing to express it.
struct ModelEntry {
  std::string preset;
  std::string missing;
};

const std::map<std::string, ModelEntry>& models() {
  static const std::map<std::string, ModelEntry> kModels = {
      {"llama3_8b", {"llama3-8b", ""}},
      {"llama3_70b", {"llama3-70b", ""}},
      {"llama31_405b", {"llama3.1-405b", ""}},
      {"deepseek_v3", {"deepseek-v3", ""}},
      {"qwen3_30b_a3b", {"qwen3-30b-a3b", ""}},
      {"qwen3_235b_a22b", {"qwen3-235b-a22b", ""}},
      {"gpt_oss_120b", {"gpt-oss-120b", ""}},
      {"kimi_k2", {"kimi-k2", ""}},
      // Nemotron 3: hybrid Mamba-2 / attention / MoE stacks (models/model_spec.cpp's presets,
      // with their sources). Ultra's dimensions are in no source this project holds: its
      // Megatron-Bridge recipe reads them from the Hugging Face checkpoint at run time.
      {"Nemotron_3_Nano", {"nemotron-3-nano", ""}},
      {"Nemotron_3_Super", {"nemotron-3-super", ""}},
      {"Nemotron_3_5_Lightning", {"nemotron-3.5-lightning", ""}},
      {"Nemotron_3_Ultra", {"", "a Nemotron 3 Ultra model (its dimensions are unpublished here)"}},
      {"DeepSeekV4 Flash",
       {"", "DeepSeek-V4 attention (compressed KV with a top-k sparse indexer)"}},
  };
  return kModels;
}

// The table's system: the cluster preset (validate/recipes/README.md's conventions).
std::string cluster_of(const std::string& system) {
  static const std::map<std::string, std::string> kSystems = {{"DGX-H100", "dgx_h100"},
                                                              {"DGX-B200", "dgx_b200"},
                                                              {"DGX-B300", "hgx_b300"},
                                                              {"DGX-GB200", "gb200_nvl72"},
                                                              {"DGX-GB300", "gb300_nvl72"}};
  return kSystems.at(system);
}

// The table's precision. FP8 and FP8-CS are per-tensor current scaling (fp8); FP8-MX and MXFP8
// are MX block scaling (mxfp8). 25.09's "finer-grained" FP8 is MX on Blackwell, and 128x128
// weight blocks on H100, priced as fp8 (the same FP8 GEMM rate; the per-block scales are not).
std::optional<model::Precision> precision_of(const std::string& p, const std::string& system) {
  if (p == "BF16") return model::Precision::mixed_bf16;
  if (p == "NVFP4") return model::Precision::nvfp4;
  if (p == "MXFP8" || p == "FP8-MX") return model::Precision::mxfp8;
  if (p.rfind("FP8 finer-grained", 0) == 0)
    return system == "DGX-H100" ? model::Precision::fp8 : model::Precision::mxfp8;
  if (p == "FP8" || p == "FP8-CS" || p.rfind("FP8 (", 0) == 0) return model::Precision::fp8;
  return std::nullopt;
}

// The one feature missing to express the row, or "" when it is expressible.
std::string missing_feature(const YAML::Node& row) {
  const auto system = row["system"].as<std::string>();
  const auto gpus = row["gpus"].as<int>();
  // LoRA rows (Llama 3 70B) pose as their model and cluster plus `training.peft`
  // (models/lora_spec.h).
  const ModelEntry& m = models().at(row["model_key"].as<std::string>());
  if (!m.missing.empty()) return m.missing;
  const auto precision = precision_of(row["precision"].as<std::string>(), system);
  if (!precision) return "precision " + row["precision"].as<std::string>();
  const YAML::Node fsdp_node = row["fsdp"];  // absent or null: no FSDP
  const int fsdp = fsdp_node.IsDefined() && !fsdp_node.IsNull() ? fsdp_node.as<int>() : 0;
  if (fsdp > 0 && fsdp != gpus)
    return "FSDP sharding over " + std::to_string(fsdp) + " of " + std::to_string(gpus) +
           " GPUs (hybrid sharding)";
  try {
    planner::preset_scenario({m.preset, cluster_of(system), gpus, row["gbs"].as<int64_t>(),
                              row["seq"].as<int64_t>(), *precision});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MegatronBridgeCoverage, RowsExpressibleOrListedWithTheOneMissingFeature) {
  const YAML::Node table = YAML::LoadFile(cs::test_paths::source_dir() +
                                          "/validate/data/megatron_bridge_perf_2025_2026.yaml");
  int rows = 0;
  std::map<std::string, int> missing;  // feature -> rows
  for (const auto& set : table["sets"]) {
    for (const auto& row : set.second["rows"]) {
      ++rows;
      const std::string feature = missing_feature(row);
      if (feature.empty()) continue;
      ++missing[feature];
      std::cout << "not expressible: " << row["release"].as<std::string>() << " "
                << row["model"].as<std::string>() << ", " << row["gpus"].as<int>() << " x "
                << row["system"].as<std::string>() << ", " << row["precision"].as<std::string>()
                << " (" << row["phase"].as<std::string>() << "): " << feature << "\n";
    }
  }
  // The table's rows by model_key (counted in the file): Nemotron 3 Ultra 2 (26.08); DeepSeek-V4
  // Flash 2; FSDP 64 of 128 GPUs 1 (Llama 3.1 405B, 25.09 on DGX-GB200). Every other row poses,
  // the 5 LoRA rows and the 51 Nemotron 3 Nano, Super and 3.5 Lightning rows included:
  // 293 - 5 = 288 (98%; issue 32 asks at most 5% listed).
  EXPECT_EQ(rows, 293);
  EXPECT_EQ(missing["a Nemotron 3 Ultra model (its dimensions are unpublished here)"], 2);
  EXPECT_EQ(missing["DeepSeek-V4 attention (compressed KV with a top-k sparse indexer)"], 2);
  EXPECT_EQ(missing["FSDP sharding over 64 of 128 GPUs (hybrid sharding)"], 1);
  EXPECT_EQ(missing.size(), 3u);
  int not_expressible = 0;
  for (const auto& [feature, n] : missing) not_expressible += n;
  EXPECT_EQ(rows - not_expressible, 288);
}

}  // namespace
}  // namespace cs
