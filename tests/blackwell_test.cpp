// What teams train on in 2026: Blackwell (Ultra) GPUs and their presets, the AWS p5 preset, NCCL's
// tuning row picked from the GPU's architecture, and the block-scaled precisions mxfp8 and nvfp4
// (their GEMM rates, casts, weight copies and which GPUs refuse them), against hand derivations.
#include <gtest/gtest.h>

#include <numeric>

#include "cost_models/compute_model.h"
#include "cost_models/device_spec.h"
#include "cost_models/nccl_comm_shape.h"
#include "driver/simulation.h"
#include "models/model_work.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario.h"
#include "test_paths.h"
#include "topology/cluster_spec.h"

namespace cs {
namespace {

std::vector<ir::RankId> first(int n) {
  std::vector<ir::RankId> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), ir::RankId{0});
  return r;
}

cost::NcclCommShape shape_on(const std::string& preset, int gpus) {
  const topo::ClusterSpec spec = topo::preset_with_nodes(preset, 1);
  const topo::Topology t = topo::build_cluster(spec);
  const cost::CollectiveModel model(t, driver::collective_params(cost::find_device(spec.gpu)));
  return cost::nccl_comm_shape(model, first(gpus));
}

TEST(GpuArchitecture, NcclsRowIsTheGpusNotTheSwitchs) {
  // An H100 PCIe box has no NVSwitch (so no NVLS) but is a Hopper (SM 9.0): NCCL's Hopper row,
  // whose one-node ring LL cap is 141 GB/s (Ampere's 87.7). A B200 is a Blackwell (SM 10.0):
  // 282 GB/s. A100 stays Ampere. (NCCL 2.28 tuning.cc llMaxBws, kNccl228.)
  EXPECT_EQ(shape_on("pcie_8x_h100", 8).arch, cost::GpuArch::hopper);
  EXPECT_EQ(shape_on("pcie_8x_h100", 8).nvls_channels, 0);
  EXPECT_EQ(shape_on("dgx_b200", 8).arch, cost::GpuArch::blackwell);
  EXPECT_EQ(shape_on("dgx_b200", 8).nvls_channels, 16);  // NVLS is the switch's
  EXPECT_EQ(shape_on("dgx_a100", 8).arch, cost::GpuArch::ampere);
  EXPECT_EQ(shape_on("gb300_nvl72", 72).arch, cost::GpuArch::blackwell);
  EXPECT_EQ(cost::ll_max_bus_bandwidth(cost::GpuArch::hopper, 1), 141.0);
  EXPECT_EQ(cost::ll_max_bus_bandwidth(cost::GpuArch::blackwell, 1), 282.0);
}

TEST(GpuArchitecture, ShippedProfilesKeepTheirGpusArchitecture) {
  // A profile named after a device preset is that GPU: the H100 profile is a Hopper's, A100's an
  // Ampere's (otherwise every profile would read as a declared GPU, Ampere).
  for (const auto& [name, arch] : {std::pair{"h100_sxm", cost::GpuArch::hopper},
                                   std::pair{"a100_sxm_80gb", cost::GpuArch::ampere}}) {
    const auto profile =
        scenario::load_profile(cs::test_paths::source_dir() + "/profiles/" + name + ".yaml");
    EXPECT_EQ(profile.device.arch, arch) << name;
  }
}

TEST(BlackwellDevices, Fp4RateIsTwiceFp8OnBlackwellAndThriceOnGb300) {
  // Dense peaks, PFLOP/s (device_spec.cpp's sources): B200 FP4 9 = 2 x FP8 4.5; GB200 10 = 2 x 5;
  // GB300 15 = 3 x 5 (the NVL72 rack's 1,080 / 72); B300 13.125 (HGX B300's 105 / 8) = 2.92 x 4.5.
  // Hopper and Ampere have no FP4.
  const auto fp4_over_fp8 = [](const char* d) {
    const cost::DeviceSpec& s = cost::find_device(d);
    return s.peak(ir::DType::fp4).value / s.peak(ir::DType::fp8).value;
  };
  EXPECT_DOUBLE_EQ(fp4_over_fp8("b200"), 2.0);
  EXPECT_DOUBLE_EQ(fp4_over_fp8("gb200"), 2.0);
  EXPECT_DOUBLE_EQ(fp4_over_fp8("gb300"), 3.0);
  EXPECT_DOUBLE_EQ(fp4_over_fp8("b300"), 13.125 / 4.5);
  EXPECT_FALSE(cost::find_device("h100_sxm").supports(ir::DType::fp4));
  EXPECT_FALSE(cost::find_device("h100_sxm").has_block_scaled_tensor_cores());
  EXPECT_TRUE(cost::find_device("b300").has_block_scaled_tensor_cores());
  // 288 GB sold, at B200's 183,359 MiB visible per 180 GB: 293,374 MiB.
  EXPECT_EQ(cost::find_device("gb300").memory_capacity.count, int64_t{293374} << 20);
}

TEST(BlackwellPresets, NvlinkDomainsAndNics) {
  // HGX B300: NVLink 5, 900 GB/s per direction per GPU; one ConnectX-8 800 Gb/s = 100 GB/s per GPU.
  const topo::Topology b300 = topo::build_preset("hgx_b300", 2);
  EXPECT_EQ(b300.gpu_count(), 16);
  EXPECT_DOUBLE_EQ(b300.bottleneck(b300.route(0, 1)).value, 900e9);
  EXPECT_DOUBLE_EQ(b300.bottleneck(b300.route(0, 8)).value, 100e9);
  EXPECT_TRUE(b300.has_nvls(0));
  // GB300 NVL72: 72 GPUs in one NVLink domain, 800 Gb/s per GPU between racks.
  const topo::Topology racks = topo::build_preset("gb300_nvl72", 2);
  EXPECT_EQ(racks.gpu_count(), 144);
  EXPECT_EQ(racks.node_count(), 2);
  EXPECT_DOUBLE_EQ(racks.bottleneck(racks.route(0, 71)).value, 900e9);
  EXPECT_DOUBLE_EQ(racks.bottleneck(racks.route(0, 72)).value, 100e9);
}

TEST(AwsPresets, P5HasThirtyTwoEfaCardsFourPerGpu) {
  // p5.48xlarge: 32 x 100 Gb/s EFA = 3200 Gb/s = 400 GB/s per node, four 12.5 GB/s cards beside
  // each GPU; inside, H100 SXM on NVSwitch at 450 GB/s per direction.
  const topo::ClusterSpec p5 = topo::preset_with_nodes("p5_48xlarge", 2);
  EXPECT_EQ(p5.gpu, "h100_sxm");
  EXPECT_EQ(p5.node.nics, 32);
  EXPECT_DOUBLE_EQ(p5.node.nics * p5.node.nic.value * 8, 3200e9);
  const topo::Topology t = topo::build_cluster(p5);
  EXPECT_DOUBLE_EQ(t.bottleneck(t.route(0, 1)).value, 450e9);
  EXPECT_DOUBLE_EQ(t.bottleneck(t.route(0, 8)).value, 12.5e9);  // one card per route
  EXPECT_EQ(t.link(t.route(0, 8).links.back()).kind, topo::LinkKind::pcie);
}

// An 8192^3 GEMM on B200 under the default efficiency curve (gemm_max 0.80, half-rate at 2 GFLOP,
// launch gap 3 us): F = 2 x 8192^3 = 1.0995e12 FLOPs, eff = 0.80 x F / (F + 2e9) = 0.79855.
//   mxfp8 at the FP8 rate 4.5 PFLOP/s: F / (4.5e15 x eff) = 305.97 us (+ 3 us).
//   nvfp4 at the FP4 rate 9 PFLOP/s: 152.99 us (+ 3 us).
// Its operands' HBM traffic, 3 x 8192^2 x 2 B over 0.80 x 7.7 TB/s = 65.4 us, does not bind.
TEST(BlockScaledPrecisions, GemmsRunAtTheFp8AndFp4RatesOnB200) {
  const cost::ComputeModel b200(cost::find_device("b200"));
  const double f = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const double eff = 0.80 * f / (f + 2e9);
  for (const auto& [precision, peak] :
       {std::pair{model::Precision::mxfp8, 4.5e15}, std::pair{model::Precision::nvfp4, 9e15}}) {
    const model::PrecisionInfo p = model::precision_info(precision);
    const model::OpFactory factory{p.compute, p.activation_bytes, p.gemm};
    const double us = b200.time(factory.gemm(8192, 8192, 8192)).us();
    EXPECT_NEAR(us, 3.0 + f / (peak * eff) * 1e6, 1e-3) << model::to_string(precision);
  }
  EXPECT_EQ(model::precision_info(model::Precision::mxfp8).gemm, ir::DType::fp8);
  EXPECT_EQ(model::precision_info(model::Precision::nvfp4).gemm, ir::DType::fp4);
}

// Without a profile a GPU's GEMMs saturate at its published largest matmul rate (ml-engineering's
// maximum achievable matmul FLOPS, cost_models/device_spec.cpp), not at the default 0.80 of the
// peak. The same 8192^3 GEMM (F = 1.0995e12 FLOPs, saturation F / (F + 2e9) = 0.99818):
//   B200 mxfp8: 3432.5 / 4500 = 0.76278 of 4.5 PFLOP/s -> F / (3432.5e12 x 0.99818) = 320.91 us.
//   GB200 mxfp8: 3615.6e12 -> 304.66 us; its peak is 11% above B200's, its time 5.1% below.
//   GB200 bf16: 1822.0e12 -> 604.56 us (the default's 0.80 x 2.5 PFLOP/s would give 550.8).
//   nvfp4: no FP4 figure published, so the default 0.80 x 9 PFLOP/s: 152.99 us, as above.
TEST(BlockScaledPrecisions, DatasheetGemmsSaturateAtThePublishedMatmulRate) {
  const double f = 2.0 * 8192.0 * 8192.0 * 8192.0, saturation = f / (f + 2e9);
  auto gemm_us = [&](const std::string& gpu, model::Precision precision) {
    const cost::DeviceSpec& d = cost::find_device(gpu);
    const cost::ComputeModel m(d, cost::datasheet_efficiency(d));
    const model::PrecisionInfo p = model::precision_info(precision);
    const model::OpFactory factory{p.compute, p.activation_bytes, p.gemm};
    return m.time(factory.gemm(8192, 8192, 8192)).us() - 3.0;  // less the launch gap
  };
  EXPECT_NEAR(gemm_us("b200", model::Precision::mxfp8), f / (3432.5e12 * saturation) * 1e6, 1e-3);
  EXPECT_NEAR(gemm_us("gb200", model::Precision::mxfp8), f / (3615.6e12 * saturation) * 1e6, 1e-3);
  EXPECT_NEAR(gemm_us("gb200", model::Precision::mixed_bf16), f / (1822.0e12 * saturation) * 1e6,
              1e-3);
  EXPECT_NEAR(gemm_us("b200", model::Precision::nvfp4), f / (9e15 * 0.80 * saturation) * 1e6, 1e-3);
  // A part with no published figure keeps the default ceiling.
  const cost::DeviceSpec& gb300 = cost::find_device("gb300");
  EXPECT_TRUE(cost::datasheet_efficiency(gb300).gemm_max_by_dtype.empty());
}

const model::Op* find_op(const std::vector<model::Op>& ops, const std::string& name) {
  for (const auto& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// GPT-2 small's qkv linear at 1024 tokens (k = 768 in, n = 2304 out). Forward casts the input and
// the weight, 1024 x 768 + 768 x 2304 = 2,555,904 elements; backward the output gradient, 1024 x
// 2304 = 2,359,296; each into a rowwise and a columnwise copy.
//   mxfp8: read 2 B, write 2 x (1 + 1/32) B = 4.0625 B per element: 10,383,360 and 9,584,640 B.
//   nvfp4: read 2 B for the amax, 2 B again, write 2 x (1/2 + 1/16) B = 5.125 B per element:
//          13,099,008 and 12,091,392 B.
TEST(BlockScaledPrecisions, CastsWriteBothCopiesAndTheirScales) {
  for (const auto& [precision, suffix, forward, backward] :
       {std::tuple{model::Precision::mxfp8, "mxfp8_cast", 10'383'360, 9'584'640},
        std::tuple{model::Precision::nvfp4, "nvfp4_cast", 13'099'008, 12'091'392}}) {
    model::WorkShape w;
    w.seq = 1024;
    w.precision = precision;
    const auto work = model::build_model_work(model::find_model_preset("gpt2-small"), w);
    const model::Block& l0 = work.blocks[1];
    ASSERT_EQ(l0.name, "L0");
    const std::string cast = std::string("attn.qkv.") + suffix;
    ASSERT_NE(find_op(l0.forward, cast), nullptr) << cast;
    EXPECT_EQ(find_op(l0.forward, cast)->op.bytes.count, forward);
    ASSERT_NE(find_op(l0.backward, cast + ".bwd"), nullptr);
    EXPECT_EQ(find_op(l0.backward, cast + ".bwd")->op.bytes.count, backward);
    // The output head stays 16-bit and casts nothing.
    const model::Block& head = work.blocks.back();
    EXPECT_EQ(find_op(head.forward, "lm_head")->op.dtype, ir::DType::bf16);
    EXPECT_EQ(find_op(head.forward, std::string("lm_head.") + suffix), nullptr);
  }
}

TEST(BlockScaledPrecisions, WeightCopiesCountTheirScales) {
  // Per parameter: mxfp8 2 x (1 + 1/32) = 2.0625 B, nvfp4 2 x (1/2 + 1/16) = 1.125 B, fp8 1 B.
  // A million parameters: 2,062,500 B, 1,125,000 B and 1,000,000 B; whole bytes 2, 1 and 1.
  const auto copies = [](model::Precision p) {
    return model::precision_info(p).weight_copy_bytes(1'000'000);
  };
  EXPECT_EQ(copies(model::Precision::mxfp8), 2'062'500);
  EXPECT_EQ(copies(model::Precision::nvfp4), 1'125'000);
  EXPECT_EQ(copies(model::Precision::fp8), 1'000'000);
  EXPECT_EQ(copies(model::Precision::mixed_bf16), 0);
  EXPECT_EQ(model::precision_info(model::Precision::mxfp8).fp8_weight_bytes, 2);
  EXPECT_EQ(model::precision_info(model::Precision::nvfp4).fp8_weight_bytes, 1);
}

std::string refusal(const std::string& preset, const std::string& precision, int dp = 1) {
  const std::string text =
      "name: t\nstack: megatron_core\nmodel:\n  preset: gpt2-small\ncluster:\n"
      "  preset: " +
      preset + "\nlayout:\n  dp: " + std::to_string(dp) +
      "\ntraining:\n  global_batch: 8\n  micro_batch: 1\n"
      "  seq_len: 1024\n  precision: " +
      precision + "\n";
  try {
    scenario::parse_scenario(text, "t.yaml");
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(BlockScaledPrecisions, HopperRefusesThemWithTheReason) {
  EXPECT_NE(refusal("single_h100", "nvfp4")
                .find("training.precision: h100_sxm has no FP4 tensor "
                      "cores; nvfp4 needs Blackwell; precisions it "
                      "runs: fp32, amp_fp16, amp_bf16"),
            std::string::npos)
      << refusal("single_h100", "nvfp4");
  EXPECT_NE(
      refusal("single_h100", "mxfp8")
          .find("h100_sxm has no MXFP8 (block-scaled FP8) tensor cores; mxfp8 needs Blackwell"),
      std::string::npos)
      << refusal("single_h100", "mxfp8");
  EXPECT_EQ(refusal("dgx_b200", "nvfp4", 8), "accepted");
  EXPECT_EQ(refusal("hgx_b300", "mxfp8", 8), "accepted");
}

}  // namespace
}  // namespace cs
