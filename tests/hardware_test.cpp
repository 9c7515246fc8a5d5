// Hardware: the B200, GB200 NVL72 and H800 presets against their datasheets, and GPUs, nodes and
// clusters declared in YAML (issue 14, point 6 and acceptance 6): a declared GPU simulates with
// its own figures, and bad figures give file:line:column: key: what is valid.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cost_models/collective_model.h"
#include "cost_models/compute_model.h"
#include "cost_models/device_spec.h"
#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "test_paths.h"
#include "topology/cluster_spec.h"

namespace cs {
namespace {

const std::string kSource = cs::test_paths::source_dir();

// ---- presets against their datasheets ------------------------------------------------------

TEST(HardwarePresets, BlackwellAndH800FiguresAreTheDatasheets) {
  // HGX B200 datasheet, per GPU, sparse halved to dense: FP32 75 TFLOP/s, TF32 2.2 -> 1.1 PF,
  // BF16/FP16 4.5 -> 2.25 PF, FP8 9 -> 4.5 PF; 180 GB HBM3e at 7.7 TB/s; nvidia-smi 183359 MiB.
  const cost::DeviceSpec& b200 = cost::find_device("b200");
  EXPECT_DOUBLE_EQ(b200.peak(ir::DType::fp32).value, 75e12);
  EXPECT_DOUBLE_EQ(b200.peak(ir::DType::tf32).value, 1.1e15);
  EXPECT_DOUBLE_EQ(b200.peak(ir::DType::bf16).value, 2.25e15);
  EXPECT_DOUBLE_EQ(b200.peak(ir::DType::fp16).value, 2.25e15);
  EXPECT_DOUBLE_EQ(b200.peak(ir::DType::fp8).value, 4.5e15);
  EXPECT_DOUBLE_EQ(b200.hbm_bandwidth.value, 7.7e12);
  EXPECT_EQ(b200.memory_capacity.count, 183359LL << 20);
  // GB200 NVL72 datasheet, per GPU: FP32 80, TF32 2.5 -> 1.25 PF, BF16 5 -> 2.5 PF, FP8 10 -> 5 PF;
  // 186 GB HBM3e at 8 TB/s.
  const cost::DeviceSpec& gb200 = cost::find_device("gb200");
  EXPECT_DOUBLE_EQ(gb200.peak(ir::DType::fp32).value, 80e12);
  EXPECT_DOUBLE_EQ(gb200.peak(ir::DType::tf32).value, 1.25e15);
  EXPECT_DOUBLE_EQ(gb200.peak(ir::DType::bf16).value, 2.5e15);
  EXPECT_DOUBLE_EQ(gb200.peak(ir::DType::fp8).value, 5e15);
  EXPECT_DOUBLE_EQ(gb200.hbm_bandwidth.value, 8e12);
  // H800 SXM5: the H100 SXM5 compute and memory (only NVLink and FP64 were cut).
  const cost::DeviceSpec& h800 = cost::find_device("h800");
  const cost::DeviceSpec& h100 = cost::find_device("h100_sxm");
  for (ir::DType d :
       {ir::DType::fp32, ir::DType::tf32, ir::DType::bf16, ir::DType::fp16, ir::DType::fp8}) {
    EXPECT_DOUBLE_EQ(h800.peak(d).value, h100.peak(d).value) << ir::to_string(d);
  }
  EXPECT_EQ(h800.memory_capacity, h100.memory_capacity);
  EXPECT_DOUBLE_EQ(h800.hbm_bandwidth.value, 3.35e12);
  // H200 datasheet: H100 compute, 141 GB HBM3e at 4.8 TB/s (nvidia-smi 143771 MiB).
  const cost::DeviceSpec& h200 = cost::find_device("h200");
  EXPECT_DOUBLE_EQ(h200.peak(ir::DType::bf16).value, 989.4e12);
  EXPECT_DOUBLE_EQ(h200.hbm_bandwidth.value, 4.8e12);
  EXPECT_EQ(h200.memory_capacity.count, 143771LL << 20);
}

TEST(HardwarePresets, DeviceWithoutFp8SaysSo) {
  // Ampere has no FP8 tensor cores: asking an A100 for an fp8 rate is an error, not a bf16 rate.
  const cost::DeviceSpec& a100 = cost::find_device("a100_sxm_80gb");
  EXPECT_FALSE(a100.supports(ir::DType::fp8));
  try {
    a100.peak(ir::DType::fp8);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(
        e.what(),
        "device 'a100_sxm_80gb' has no fp8 rate (no FP8 tensor cores, or peak.fp8 not declared)");
  }
}

// NVLink per GPU per direction: links x per-link rate. Route bottleneck between two GPUs of a
// node is the GPU's NVLink port group (GPU -> switch -> GPU).
TEST(HardwarePresets, NodesAndNvlinkDomains) {
  // H800: 8 links x 25 GB/s = 200 GB/s (400 GB/s bidirectional); 8 CX-7 400G NICs = 50 GB/s each.
  const topo::Topology h800 = topo::build_preset("hgx_h800", 2);
  EXPECT_EQ(h800.gpu_count(), 16);
  EXPECT_DOUBLE_EQ(h800.bottleneck(h800.route(0, 1)).value, 200e9);
  EXPECT_DOUBLE_EQ(h800.bottleneck(h800.route(0, 8)).value, 50e9);  // across nodes: the NIC
  // B200: NVLink 5, 18 links x 50 GB/s = 900 GB/s per direction (1.8 TB/s bidirectional).
  const topo::Topology b200 = topo::build_preset("dgx_b200", 1);
  EXPECT_EQ(b200.gpu_count(), 8);
  EXPECT_DOUBLE_EQ(b200.bottleneck(b200.route(0, 7)).value, 900e9);
  EXPECT_TRUE(b200.has_nvls(0));
  // GB200 NVL72: 72 GPUs in one NVLink domain; every pair meets over NVLink only.
  const topo::Topology rack = topo::build_preset("gb200_nvl72", 1);
  EXPECT_EQ(rack.gpu_count(), 72);
  EXPECT_EQ(rack.node_count(), 1);
  for (int r = 1; r < 72; ++r) {
    for (uint32_t l : rack.route(0, r).links)
      ASSERT_EQ(rack.link(l).kind, topo::LinkKind::nvlink) << "gpu 0 -> " << r;
    EXPECT_DOUBLE_EQ(rack.bottleneck(rack.route(0, r)).value, 900e9);
  }
}

// A ring all-reduce over the 72 GPUs of one rack runs on NVLink alone, even in a two-rack
// cluster; one spanning the racks crosses InfiniBand.
TEST(HardwarePresets, Nvl72RingAllReduceUsesNoNetworkLink) {
  const topo::Topology t = topo::build_preset("gb200_nvl72", 2);
  ASSERT_EQ(t.gpu_count(), 144);
  cost::CollectiveOptions ring;
  ring.algorithm = cost::Algorithm::ring;
  ring.strict = true;
  const cost::CollectiveModel model(t, {}, ring);
  auto kinds = [&](const std::vector<ir::RankId>& ranks) {
    std::set<topo::LinkKind> used;
    const cost::CollectiveChoice c = model.choose(ir::CollectiveType::all_reduce, 1_GiB, ranks);
    EXPECT_EQ(c.plan->algorithm, cost::Algorithm::ring);
    for (const auto& phase : c.plan->phases) {
      for (const auto& load : phase.loads) used.insert(t.link(load.link).kind);
    }
    return used;
  };
  std::vector<ir::RankId> rack0, both;
  for (ir::RankId r = 0; r < 72; ++r) rack0.push_back(r);
  for (ir::RankId r = 0; r < 144; r += 36) both.push_back(r);  // 0, 36 (rack 0), 72, 108 (rack 1)
  EXPECT_EQ(kinds(rack0), std::set<topo::LinkKind>{topo::LinkKind::nvlink});
  EXPECT_TRUE(kinds(both).count(topo::LinkKind::infiniband));
}

// ---- a GPU declared in YAML --------------------------------------------------------------

TEST(DeclaredGpu, RatesInTheUnitsDatasheetsUse) {
  // "989 TFLOP/s", "989TFLOPS" and "2.25 PFLOPs" are all FLOP per second.
  EXPECT_DOUBLE_EQ(parse_flops_rate("989 TFLOP/s").value, 989e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("2.25 PFLOPs").value, 2.25e15);
  EXPECT_DOUBLE_EQ(parse_flops_rate("1.4EFLOPS").value, 1.4e18);
  EXPECT_THROW(parse_flops_rate("989 TFLOP"), UnitError);
}

// GPT-2 small on one GPU whose every figure is `scale` times the H100 SXM5's.
std::string one_gpu_scenario(const std::string& peak_and_hbm) {
  return "name: declared\n"
         "model: {preset: gpt2-small}\n"
         "cluster:\n"
         "  preset: single_h100\n"
         "  gpu:\n"
         "    name: my_gpu\n" +
         peak_and_hbm +
         "layout: {dp: 1}\n"
         "training: {global_batch: 8, micro_batch: 8, seq_len: 1024, precision: amp_bf16}\n";
}

std::string scaled_h100(double scale) {
  std::ostringstream o;
  o.precision(17);
  o << "    peak: {fp32: " << 67 * scale << "TFLOPS, tf32: " << 494.7 * scale
    << "TFLOPS, bf16: " << 989.4 * scale << "TFLOPS, fp8: " << 1978.9 * scale << "TFLOPS}\n"
    << "    hbm: {capacity: 81559MiB, bandwidth: " << 3.35 * scale << "TB/s}\n";
  return o.str();
}

sim::Report simulate(const scenario::Scenario& s) {
  driver::SimulateOptions o;
  o.with_baseline = false;
  o.suggest = false;
  return driver::simulate(s, o).report;
}

TEST(DeclaredGpu, SameFiguresAsAPresetGiveTheSameStep) {
  // my_gpu declares the H100 SXM5's datasheet figures: the step and its memory verdict are those
  // of the H800 preset (the same die, peaks, HBM and capacity; device_spec.cpp) to a picosecond per
  // op (decimal text and C++ literals may differ in the last bit). Not h100_sxm's: that preset
  // carries a published largest matmul rate, which a declared GPU has no key for.
  const scenario::Scenario declared =
      scenario::parse_scenario(one_gpu_scenario(scaled_h100(1.0)), "declared.yaml");
  ASSERT_TRUE(declared.declared_gpu);
  EXPECT_EQ(declared.gpu, "my_gpu");
  EXPECT_DOUBLE_EQ(driver::device_of(declared).bf16.value, 989.4e12);
  EXPECT_EQ(driver::device_of(declared).memory_capacity.count, 81559LL << 20);
  scenario::Scenario preset = declared;
  preset.declared_gpu.reset();
  preset.gpu = "h800";
  const sim::Report a = simulate(declared), b = simulate(preset);
  EXPECT_NEAR(static_cast<double>(a.step_time.ps), static_cast<double>(b.step_time.ps),
              5000.0);  // 5 ns over ~1,000 ops
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_NEAR(a.mfu, b.mfu, 1e-6);
}

TEST(DeclaredGpu, StepTimeScalesWithTheDeclaredFigures) {
  // One GPU, one stream: step = N x launch_gap + W / s, where every op's roofline time
  // max(flops / (peak x eff), bytes / (bw x eff)) scales as 1/s when every peak and the HBM
  // bandwidth are multiplied by s. So halving the figures adds W and halving again adds 2W:
  //   step(1/4) - step(1/2) = 2 (step(1/2) - step(1)),
  // to the picosecond rounding of each op.
  auto step = [&](double scale) {
    return static_cast<double>(
        simulate(scenario::parse_scenario(one_gpu_scenario(scaled_h100(scale)), "d.yaml"))
            .step_time.ps);
  };
  const double full = step(1.0), half = step(0.5), quarter = step(0.25);
  const double w = half - full;
  EXPECT_GT(w, 0.5 * full);  // the figures, not the fixed launch gaps, make most of the step
  EXPECT_NEAR(quarter - half, 2 * w, 10000.0);
}

TEST(DeclaredGpu, GemmRunsAtTheDeclaredPeak) {
  // An 8192^3 BF16 GEMM: F = 2 x 8192^3 = 1.0995e12 FLOP; efficiency 0.80 x F / (F + 2e9)
  // = 0.79855; at a declared 500 TFLOP/s it takes F / (500e12 x 0.79855) = 2.7538 ms plus the 3 us
  // launch gap; its 3 x 8192^2 x 2 B = 403 MB at 2 TB/s x 0.8 take 0.25 ms, under the arithmetic.
  const scenario::Scenario s =
      scenario::parse_scenario(one_gpu_scenario("    peak: {fp32: 50TFLOPS, bf16: 500TFLOPS}\n"
                                                "    hbm: {capacity: 64GiB, bandwidth: 2TB/s}\n"),
                               "g.yaml");
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = ir::DType::bf16;
  op.m = op.n = op.k = 8192;
  op.flops = {2.0 * 8192 * 8192 * 8192};
  op.bytes = {3LL * 8192 * 8192 * 2};
  const cost::ComputeModel model(driver::device_of(s));
  const double f = op.flops.value;
  const double expected_s = 3e-6 + f / (500e12 * 0.80 * f / (f + 2e9));
  EXPECT_NEAR(model.time(op).seconds(), expected_s, 1e-12);
  EXPECT_NEAR(model.time(op).seconds(), 3e-6 + 2.7538e-3, 1e-7);
  // No fp8 declared: an fp8 GEMM on it is an error naming the GPU.
  op.dtype = ir::DType::fp8;
  EXPECT_THROW(model.time(op), UserError);
  EXPECT_FALSE(driver::device_of(s).supports(ir::DType::fp8));
  EXPECT_TRUE(driver::device_of(s).supports(ir::DType::fp16));  // fp16 not declared: as bf16
}

TEST(DeclaredGpu, HardwareFilesAndOverrides) {
  // The shipped cluster file names its GPU by file; the scenario picks 2 nodes and changes the NIC.
  const std::string text =
      "model: {preset: gpt2-small}\n"
      "cluster:\n"
      "  file: hardware/mi300x_8gpu_node.yaml\n"
      "  nodes: 2\n"
      "  node: {nic_bandwidth: 200Gbps}\n"
      "layout: {dp: 16}\n"
      "training: {global_batch: 16, micro_batch: 1, seq_len: 1024, precision: amp_bf16}\n";
  const scenario::Scenario s = scenario::parse_scenario(text, kSource + "/scenarios/inline.yaml");
  EXPECT_EQ(s.cluster_name, "mi300x_8gpu");
  EXPECT_EQ(s.gpus, 16);
  ASSERT_TRUE(s.declared_gpu);
  // scenarios/hardware/mi300x.yaml: AMD MI300X data sheet, 1307.4 TFLOP/s BF16 dense, 192 GB at 5.3
  // TB/s.
  EXPECT_EQ(s.declared_gpu->name, "mi300x");
  EXPECT_DOUBLE_EQ(s.declared_gpu->bf16.value, 1307.4e12);
  EXPECT_EQ(s.declared_gpu->memory_capacity.count, 192000000000LL);
  EXPECT_DOUBLE_EQ(s.cluster.node.nvlink.value, 448e9);  // 7 xGMI links x 64 GB/s
  EXPECT_DOUBLE_EQ(s.cluster.node.nic.value, 25e9);  // the scenario's 200 Gb/s over the file's 400
  // A preset GPU with one figure changed keeps the rest of the preset, under its own name.
  const scenario::Scenario p = scenario::parse_scenario(
      "model: {preset: gpt2-small}\n"
      "cluster: {preset: dgx_b200, gpu: {preset: b200, name: b200_700w, peak: {bf16: "
      "1.75PFLOP/s}}}\n"
      "layout: {dp: 8}\n"
      "training: {global_batch: 8, micro_batch: 1, seq_len: 1024}\n",
      "p.yaml");
  EXPECT_EQ(p.gpu, "b200_700w");
  EXPECT_DOUBLE_EQ(p.declared_gpu->bf16.value, 1.75e15);
  EXPECT_DOUBLE_EQ(p.declared_gpu->fp8.value, 4.5e15);
}

// ---- bad figures: file:line:column: key: what is valid -------------------------------------

std::string error_of(const std::string& name) {
  const std::string path = kSource + "/tests/data/bad/" + name;
  try {
    std::ifstream in(path);
    std::stringstream buf;
    buf << in.rdbuf();
    scenario::parse_scenario(buf.str(), path);
  } catch (const scenario::ScenarioError& e) {
    std::string m = e.what();
    // Messages name files as given; show them relative to the source tree.
    for (size_t at; (at = m.find(kSource + "/")) != std::string::npos;)
      m.erase(at, kSource.size() + 1);
    return m;
  }
  return "no error";
}

TEST(DeclaredGpuErrors, PinnedMessages) {
  const std::string d = "tests/data/bad/";
  EXPECT_EQ(error_of("hw_peak_out_of_range.yaml"),
            d + "hw_peak_out_of_range.yaml:10:35: cluster.gpu.peak.bf16: 989 PFLOP/s is out of "
                "range: a dense peak per GPU is between "
                "1 GFLOP/s and 100 PFLOP/s (B200 bf16: 2.25 PFLOP/s)");
  EXPECT_EQ(error_of("hw_bad_rate_unit.yaml"),
            d + "hw_bad_rate_unit.yaml:9:34: cluster.gpu.peak.bf16: unknown unit 'TFLOPZ' in "
                "compute rate '989TFLOPZ': valid units are "
                "GFLOPS, TFLOPS, PFLOPS, EFLOPS (also written GFLOP/s or GFLOPs)");
  EXPECT_EQ(error_of("hw_hbm_out_of_range.yaml"),
            d + "hw_hbm_out_of_range.yaml:10:17: cluster.gpu.hbm.capacity: 74.5786 TiB is out of "
                "range: memory per GPU is between 1 GiB and 4 TiB");
  EXPECT_EQ(error_of("hw_missing_fp32.yaml"),
            d + "hw_missing_fp32.yaml:9:11: cluster.gpu.peak: missing required key 'fp32'");
  EXPECT_EQ(error_of("hw_nvlink_out_of_range.yaml"),
            d + "hw_nvlink_out_of_range.yaml:13:23: cluster.node.nvlink_bandwidth: 900 TB/s is out "
                "of range: NVLink per GPU per direction is "
                "between 1 GB/s and 10 TB/s");
  EXPECT_EQ(error_of("hw_node_missing_nvlink.yaml"),
            d + "hw_node_missing_nvlink.yaml:11:5: cluster.node: missing required key "
                "'nvlink_bandwidth' (per GPU per direction; or intra: pcie)");
  EXPECT_EQ(error_of("hw_preset_name.yaml"),
            d + "hw_preset_name.yaml:7:11: cluster.gpu.name: 'h100_sxm' is a device preset; a GPU "
                "with other figures needs a name of its own");
  EXPECT_EQ(error_of("hw_precision_without_rate.yaml"),
            d + "hw_precision_without_rate.yaml:19:14: training.precision: amp_bf16 computes in "
                "bf16, which GPU 'fp16_only' has no rate for "
                "(cluster.gpu.peak.bf16); precisions it runs: fp32, amp_fp16, mixed_fp16");
  EXPECT_EQ(error_of("hw_file_bad_bandwidth.yaml"),
            d + "hw_gpu_file_bad_bandwidth.yaml:6:14: gpu.hbm.bandwidth: 3350 TB/s is out of "
                "range: memory bandwidth per GPU is between "
                "10 GB/s and 100 TB/s");
}

}  // namespace
}  // namespace cs
