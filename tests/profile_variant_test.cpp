// A profile that is a variant of a measured one (variant_of): the base's curves, with the memory
// bandwidth, capacity and tensor-core rate it changes scaled; and the shipped Grand Teton part.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "cost_models/compute_model.h"
#include "cost_models/device_spec.h"
#include "driver/simulation.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario.h"
#include "test_paths.h"
#include "topology/cluster_spec.h"
#include "validate/fitted_parameters.h"

namespace cs {
namespace {

// A measured base: GEMMs at 0.5 of a 1e15 FLOP/s peak, memory-bound work at 0.8 of 2e12 B/s.
const char* kBase =
    "name: base\ndevice:\n  peak_flops: 1e15\n  memory_bandwidth: 2e12\n  memory_capacity: 8e10\n"
    "compute:\n  gemm_max_efficiency: 0.5\n  gemm_half_flops: 0\n  memory_efficiency: 0.8\n"
    "  launch_gap_s: 0\n";

// One folder per process: ctest runs these tests as parallel processes, and a shared base.yaml
// rewritten by one while another reads it was read empty (a failure that depended on timing).
std::string folder() {
  const std::string d = testing::TempDir() + "/profile_variant_" + std::to_string(::getpid());
  std::filesystem::create_directories(d);
  std::ofstream(d + "/base.yaml") << kBase;
  return d;
}

std::string refusal(const std::string& body) {
  const std::string path = folder() + "/v.yaml";
  std::ofstream(path) << body;
  try {
    scenario::load_profile(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// A profile of public figures (the A100's) sustains a share of them over a run: its own
// compute.tensor_clock_ratio scales its GEMM and attention rates as a variant's does, and a
// variant of it multiplies the two clocks.
// kBase under another name, with more lines at the end of its compute section.
std::string base_named(const std::string& name, const std::string& compute_lines) {
  const std::string base = kBase;
  return "name: " + name + base.substr(base.find('\n')) + compute_lines;
}

// A bf16 GEMM of `flops` FLOPs (its shape unset: priced by FLOPs alone).
ir::ComputeOp bf16_gemm(double flops) {
  ir::ComputeOp gemm;
  gemm.op = ir::OpClass::gemm;
  gemm.dtype = ir::DType::bf16;
  gemm.flops = {flops};
  return gemm;
}

TEST(ProfileVariant, ABaseProfileCarriesItsOwnFittedTensorClock) {
  const std::string d = folder();
  std::ofstream(d + "/own.yaml") << base_named(
      "own", "  tensor_clock_ratio: 0.8\n  tensor_clock_fitted_on: \"table y\"\n");
  const cost::Profile p = scenario::load_profile(d + "/own.yaml");
  EXPECT_DOUBLE_EQ(p.tensor_clock_ratio, 0.8);
  EXPECT_EQ(p.tensor_clock_fitted_on, "table y");
  // A 1e12-FLOP GEMM: 1e12 / (1e15 x 0.5 x 0.8) = 2.5 ms; an attention op of 1e12 FLOPs at the
  // default attention share (the GEMM maximum, 0.5) also 2.5 ms.
  const cost::ComputeModel m(p.device, p.compute);
  const ir::ComputeOp gemm = bf16_gemm(1e12);
  EXPECT_NEAR(m.time(gemm).seconds(), 2.5e-3, 1e-12);
  ir::ComputeOp attention = gemm;
  attention.op = ir::OpClass::attention;
  EXPECT_NEAR(m.time(attention).seconds(), 2.5e-3, 1e-12);
  // A variant at 0.5 of it: 0.8 x 0.5 = 0.4 of the curves, 1e12 / (1e15 x 0.5 x 0.4) = 5 ms.
  std::ofstream(d + "/v2.yaml")
      << "name: v2\nvariant_of: own\nvariant: {tensor_clock_ratio: 0.5}\n";
  const cost::Profile v = scenario::load_profile(d + "/v2.yaml");
  EXPECT_NEAR(cost::ComputeModel(v.device, v.compute).time(gemm).seconds(), 5e-3, 1e-12);
  // A zero clock is refused with the key named.
  std::ofstream(d + "/zero.yaml") << base_named("zero", "  tensor_clock_ratio: 0\n");
  try {
    scenario::load_profile(d + "/zero.yaml");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor_clock_ratio"), std::string::npos) << e.what();
  }
}

TEST(ProfileVariant, ScalesTheBasesBandwidthCapacityAndTensorRate) {
  const std::string path = folder() + "/v.yaml";
  std::ofstream(path) << "name: v\nvariant_of: base\nvariant:\n  memory_bandwidth_ratio: 0.5\n"
                         "  memory_capacity: 9.6e10\n  tensor_clock_ratio: 0.8\n"
                         "  tensor_clock_fitted_on: \"table x\"\n";
  const cost::Profile p = scenario::load_profile(path);
  EXPECT_EQ(p.name, "v");
  EXPECT_EQ(p.measured_on, "variant of base");             // the base names no device nor date
  EXPECT_DOUBLE_EQ(p.device.hbm_bandwidth.value, 1e12);    // 2e12 x 0.5
  EXPECT_EQ(p.device.memory_capacity.count, 96000000000);  // replaced
  EXPECT_DOUBLE_EQ(p.device.bf16.value, 1e15);             // the datasheet peak stays (MFU)
  EXPECT_DOUBLE_EQ(p.tensor_clock_ratio, 0.8);
  EXPECT_EQ(p.tensor_clock_fitted_on, "table x");
  // A 1e12-FLOP GEMM: 1e12 / (1e15 x 0.5 x 0.8) = 2.5 ms (the base: 2 ms). A 1e9-byte copy:
  // 1e9 / (1e12 x 0.8) = 1.25 ms (the base: 0.625 ms); the clock does not touch it.
  const cost::ComputeModel m(p.device, p.compute);
  const ir::ComputeOp gemm = bf16_gemm(1e12);
  EXPECT_NEAR(m.time(gemm).seconds(), 2.5e-3, 1e-12);
  ir::ComputeOp copy;
  copy.op = ir::OpClass::elementwise;
  copy.dtype = ir::DType::bf16;
  copy.bytes = {1000000000};
  EXPECT_NEAR(m.time(copy).seconds(), 1.25e-3, 1e-12);
}

TEST(ProfileVariant, BadVariantsAreRefusedWithFileLineAndKey) {
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant:\n  tensor_clock_ratio: 2\n")
                .find("v.yaml:4:23: tensor_clock_ratio: 2 is out of range: at most 1.5"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant:\n  clock: 0.9\n")
                .find("v.yaml:4:3: variant: unknown key 'clock'; valid: memory_bandwidth_ratio"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant:\n  memory_bandwidth_ratio: 0\n")
                .find("variant.memory_bandwidth_ratio: expected a positive number"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: base\n").find("variant_of needs a 'variant' mapping"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant: {tensor_clock_ratio: 0.9}\n"
                    "device: {peak_flops: 1}\n")
                .find("a profile with variant_of takes 'device' from base"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: ../base\nvariant: {tensor_clock_ratio: 0.9}\n")
                .find("variant_of: expected the name of a profile in the same folder"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: nowhere\nvariant: {tensor_clock_ratio: 0.9}\n")
                .find("nowhere.yaml"),
            std::string::npos);
  // A mapping where validation expects text is a clear error, not yaml-cpp's "bad conversion"
  // escaping the reader.
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant: {tensor_clock_ratio: 0.9}\n"
                    "validation: {runs: 1, suites: {a: 1}}\n")
                .find("suites: expected a text value"),
            std::string::npos);
  EXPECT_NE(refusal("name: v\nvariant_of: base\nvariant: {tensor_clock_ratio: 0.9}\n"
                    "validation: {runs: 1, stacks: {{a: 1}: {runs: 1}}}\n")
                .find("validation.stacks: unknown stack ''"),
            std::string::npos);
  // A variant of itself (or of another variant) is refused, not followed.
  EXPECT_NE(refusal("name: v\nvariant_of: v\nvariant: {tensor_clock_ratio: 0.9}\n")
                .find("is itself a variant"),
            std::string::npos);
}

TEST(ProfileVariant, TheShippedGrandTetonPartIsTheMeasuredH100Scaled) {
  const std::string dir = cs::test_paths::source_dir() + "/profiles/";
  const cost::Profile h100 = scenario::load_profile(dir + "h100_sxm.yaml");
  const cost::Profile gt = scenario::load_profile(dir + "h100_sxm_96gb_500w.yaml");
  // 2.4 / 3.35 TB/s of the measured streaming rate; 97871 MiB.
  EXPECT_NEAR(gt.device.hbm_bandwidth.value / h100.device.hbm_bandwidth.value, 0.7164, 1e-12);
  EXPECT_EQ(gt.device.memory_capacity.count, int64_t{97871} << 20);
  EXPECT_EQ(gt.compute.gemm_tables.size(), h100.compute.gemm_tables.size());
  EXPECT_DOUBLE_EQ(gt.compute.rate_scale.gemm, h100.compute.rate_scale.gemm * 0.70);
  // The preset puts it on DGX-H100-like hosts; the device's datasheet keeps H100's peaks.
  EXPECT_EQ(topo::find_cluster_preset("grand_teton_h100").gpu, "h100_sxm_96gb_500w");
  EXPECT_DOUBLE_EQ(cost::find_device("h100_sxm_96gb_500w").bf16.value, 989.4e12);
  // Its fitted parameter is listed, with the data it was fitted on, beside the 7 global ones:
  // 8 for this profile, within the 10.
  bool listed = false;
  for (const auto& p : validate::profile_fitted_parameters()) {
    if (p.name == "h100_sxm_96gb_500w tensor clock") {
      listed = true;
      EXPECT_DOUBLE_EQ(p.value, 0.70);
      EXPECT_NE(p.fitted_on.find("torchtitan_llama3_h100_202412"), std::string::npos);
    }
  }
  EXPECT_TRUE(listed);
  EXPECT_LE(validate::fitted_parameters().size() + 1, 10u);
  // A scenario on that preset gets the profile by default, and its header says the clock was
  // fitted (so the error it quotes is partly in-sample).
  const std::string path = testing::TempDir() + "/grand_teton.yaml";
  std::ofstream(path) << "name: gt\nmodel: {preset: llama3.1-8b}\n"
                         "cluster: {preset: grand_teton_h100, nodes: 1}\nlayout: {dp: 8}\n"
                         "training: {global_batch: 8, micro_batch: 1, seq_len: 8192}\n";
  scenario::Scenario sc = scenario::load_scenario(path);
  driver::apply_default_profile(sc);
  ASSERT_TRUE(sc.profile);
  EXPECT_NE(driver::profile_summary(sc).find(
                "h100_sxm_96gb_500w (variant of h100_sxm (cuda: NVIDIA H100 80GB HBM3"),
            std::string::npos)
      << driver::profile_summary(sc);
  EXPECT_NE(driver::profile_summary(sc).find(
                "; tensor clock 0.70 fitted on torchtitan_llama3_h100_202412"),
            std::string::npos);
}

}  // namespace
}  // namespace cs
