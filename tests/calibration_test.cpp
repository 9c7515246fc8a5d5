// Profiles on disk and the predicted-versus-measured comparison.
#include "validate/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/error.h"
#include "cost_models/device_spec.h"
#include "scenarios/profile_io.h"
#include "validate/measured.h"

namespace cs {
namespace {

TEST(Profile, SavedAndLoadedBackExactly) {
  cost::Profile p;
  p.name = "cpu";
  p.measured_on = "test machine";
  p.date = "2026-11-22";
  p.device.fp32 = {1.25e11};
  p.device.hbm_bandwidth = {9.5e9};
  p.compute.gemm_max = 1.0;
  p.compute.gemm_half_flops = 3.5e6;
  p.compute.memory = 1.0;
  p.compute.attention = 1.0;
  p.compute.launch_gap = SimTime::from_us(0.25);
  p.collectives = cost::MeasuredCollectives{SimTime::from_us(300), {1.1e9}};
  std::vector<cost::GemmPoint> grid;
  for (int64_t m : {128, 1024}) {
    for (int64_t n : {256, 512})
      grid.push_back({m, n, 64, 0.1 * static_cast<double>(m / 128) + static_cast<double>(n) / 1e4});
  }
  p.compute.gemm_table = cost::GemmEfficiencyGrid(grid);
  p.compute.optimizer_curve = cost::EfficiencyCurve({{1e6, 0.4}, {1e8, 0.3}});
  p.interference = {0.25, 4.5};
  const std::string path = testing::TempDir() + "/profile.yaml";
  scenario::save_profile(path, p);
  const cost::Profile q = scenario::load_profile(path);
  EXPECT_EQ(q.name, "cpu");
  EXPECT_EQ(q.date, "2026-11-22");
  EXPECT_DOUBLE_EQ(q.device.fp32.value, 1.25e11);
  EXPECT_DOUBLE_EQ(q.device.bf16.value, 1.25e11);  // the cpu backend runs every GEMM in fp32
  EXPECT_DOUBLE_EQ(q.device.hbm_bandwidth.value, 9.5e9);
  EXPECT_DOUBLE_EQ(q.compute.gemm_half_flops, 3.5e6);
  EXPECT_EQ(q.compute.launch_gap, SimTime::from_us(0.25));
  ASSERT_TRUE(q.collectives.has_value());
  EXPECT_EQ(q.collectives->latency, SimTime::from_us(300));
  EXPECT_DOUBLE_EQ(q.collectives->bus_bandwidth.value, 1.1e9);
  ASSERT_EQ(q.compute.gemm_table.points().size(), 4u);
  EXPECT_DOUBLE_EQ(q.compute.gemm_table.at(1024, 512, 64), 0.8 + 0.0512);
  EXPECT_DOUBLE_EQ(q.compute.optimizer_curve.at(1e8), 0.3);
  EXPECT_TRUE(q.compute.memory_curve.empty());
  EXPECT_DOUBLE_EQ(q.interference.compute_slowdown, 0.25);
  EXPECT_DOUBLE_EQ(q.interference.comm_slowdown, 4.5);
  // A GEMM table with a hole names the file, the line and the missing shape.
  std::ofstream(path)
      << "name: x\ndevice:\n  peak_flops: 1\n  memory_bandwidth: 1\ncompute:\n  "
         "gemm_max_efficiency: 1\n"
         "  gemm_half_flops: 0\n  memory_efficiency: 1\n  launch_gap_s: 0\n  gemm_table:\n"
         "    - [128, 128, 128, 0.5]\n    - [256, 256, 128, 0.6]\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "a GEMM table that is not a full grid should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        path + ":11:5: GEMM efficiency table is not a full grid: no entry for m=128 n=256 k=128");
  }
  // A profile with a word where a number belongs names the line and key.
  std::ofstream(path) << "name: x\ndevice:\n  peak_flops: fast\n  memory_bandwidth: 1\ncompute:\n  "
                         "gemm_max_efficiency: 1\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "a non-numeric peak should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":3:15: peak_flops: expected a non-negative number, got 'fast'");
  }
}

// Synthetic suite timings from known figures; the fit must return them.
//   gap 2 us; GEMM efficiency eff(m, n, k) = m / 2048 + 0.5 of a 1e11 FLOP/s peak (so the best
//   shape, m = 1024, runs at exactly 1e11); attention at 0.25 of that peak; streaming at
//   8 GB/s x (0.5 below 1 MiB, else 1); AdamW at 0.4 of 8 GB/s; all-reduces 50 us + bytes / 1 GB/s
//   (2 ranks: bus bytes = bytes). Interference: GEMMs that an all-reduce overlaps take 1.5x as
//   long while overlapped, and all-reduces beside a GEMM take 3x their line.
double gemm_eff(int64_t m) { return static_cast<double>(m) / 2048 + 0.5; }

validate::TaskDurations synthetic_compute(const ir::TaskGraph& g) {
  validate::TaskDurations d;
  d.graph = &g;
  std::vector<double> clock(g.ranks(), 0.0);
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    double s = 0;
    if (g.task(t).kind == ir::TaskKind::compute) {
      const ir::ComputeOp& op = g.compute(g.task(t));
      const double bytes = static_cast<double>(op.bytes.count);
      s = 2e-6;
      if (op.op == ir::OpClass::gemm)
        s += op.flops.value / (1e11 * gemm_eff(op.m));
      else if (op.op == ir::OpClass::attention)
        s += op.flops.value / (1e11 * 0.25);
      else if (op.op == ir::OpClass::optimizer)
        s += bytes / (8e9 * 0.4);
      else if (op.bytes.count > 8)
        s += bytes / (8e9 * (op.bytes.count < (1 << 20) ? 0.5 : 1.0));
    }
    double& c = clock[g.task(t).rank];
    d.start.push_back(c);
    d.end.push_back(c += s);
  }
  return d;
}

TEST(Calibration, FitRecoversTheTablesItWasGiven) {
  const ir::TaskGraph g = validate::calibration_graph("compute", 2);
  const validate::TaskDurations d = synthetic_compute(g);
  validate::Measurements m{d};
  const cost::Profile p = validate::fit_profile(m, "synthetic");
  EXPECT_NEAR(p.device.fp32.value, 1e11, 1e3);
  EXPECT_NEAR(p.device.hbm_bandwidth.value, 8e9, 1e2);
  EXPECT_EQ(p.compute.launch_gap, SimTime::from_us(2.0));
  // Grid points come back exactly; between them the table interpolates in log2 m:
  // m = 724 ~ 2^9.5 lies halfway between 512 (0.75) and 1024 (1.0) -> ~0.875; beyond the grid
  // (m = 4096) it holds the edge's 1.0.
  EXPECT_NEAR(p.compute.gemm_table.at(512, 256, 1024), gemm_eff(512), 1e-9);
  EXPECT_NEAR(p.compute.gemm_table.at(4096, 2048, 128), 1.0, 1e-9);
  EXPECT_NEAR(p.compute.gemm_table.at(724, 300, 300), 0.875, 2e-3);
  EXPECT_NEAR(p.compute.attention_curve.at(1e8), 0.25, 1e-9);
  EXPECT_NEAR(p.compute.memory_curve.at(64 << 10), 0.5, 1e-9);
  EXPECT_NEAR(p.compute.memory_curve.at(16 << 20), 1.0, 1e-9);
  EXPECT_NEAR(p.compute.optimizer_curve.at(1e8), 0.4, 1e-9);
  EXPECT_FALSE(p.collectives.has_value());
  // The simulator with this profile gives a GEMM its measured time back: 512 x 1024 x 1024 is
  // 1.074 GFLOP at 0.75 x 1e11 -> 14.32 ms, plus the 2 us gap.
  const cost::ComputeModel model(p.device, p.compute);
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = ir::DType::fp32;
  op.m = 512, op.n = 1024, op.k = 1024;
  op.flops = {2.0 * 512 * 1024 * 1024};
  EXPECT_NEAR(model.time(op).seconds(), 2e-6 + op.flops.value / 0.75e11, 1e-9);
}

TEST(Calibration, FitMeasuresCollectivesAndInterference) {
  const ir::TaskGraph gc = validate::calibration_graph("compute", 2);
  const ir::TaskGraph gk = validate::calibration_graph("collectives", 2);
  const ir::TaskGraph gi = validate::calibration_graph("interference", 2);
  const validate::TaskDurations dc = synthetic_compute(gc);
  auto line = [](const ir::CollectiveCall& c) {
    return 50e-6 + static_cast<double>(c.bytes.count) / 1e9;
  };
  validate::TaskDurations dk;
  dk.graph = &gk;
  double clock = 0;
  for (ir::TaskId t = 0; t < gk.size(); ++t) {
    const double s = line(gk.collective(gk.task(t)));
    dk.start.push_back(clock);
    dk.end.push_back(clock + s);
    if (gk.task(t).rank == 1) clock += s;  // both ranks run each call at the same time
  }
  // Interference suite, each rank on its own clock, cycle by cycle: GEMM 0; the "beside"
  // all-reduce starts at its end and takes 3x its line while GEMM 1 runs, which takes 0.5 x that
  // overlap longer; GEMMs 2 and 3 alone; the idle all-reduce at the line's time after GEMM 3.
  validate::TaskDurations di;
  di.graph = &gi;
  di.start.assign(gi.size(), 0);
  di.end.assign(gi.size(), 0);
  const double gemm_s = 2e-6 + 2.0 * 256 * 1024 * 1024 / (1e11 * gemm_eff(256));
  for (ir::RankId r = 0; r < 2; ++r) {
    std::vector<ir::TaskId> gemms, beside, idle;
    for (ir::TaskId t = 0; t < gi.size(); ++t) {
      if (gi.task(t).rank != r) continue;
      if (gi.task(t).kind == ir::TaskKind::compute)
        gemms.push_back(t);
      else
        (gi.task_name(t) == "load.all_reduce" ? beside : idle).push_back(t);
    }
    ASSERT_EQ(gemms.size(), 4 * beside.size());
    double c = 0;
    for (size_t k = 0; k < beside.size(); ++k) {
      auto run = [&](ir::TaskId t, double s) { di.start[t] = c, di.end[t] = c += s; };
      run(gemms[4 * k], gemm_s);
      const double loaded = 3 * line(gi.collective(gi.task(beside[k])));
      di.start[beside[k]] = c;
      di.end[beside[k]] = c + loaded;
      run(gemms[4 * k + 1], gemm_s + 0.5 * loaded);
      run(gemms[4 * k + 2], gemm_s);
      run(gemms[4 * k + 3], gemm_s);
      run(idle[k], line(gi.collective(gi.task(idle[k]))));
    }
  }
  validate::Measurements m{dc, &dk, &di};
  const cost::Profile p = validate::fit_profile(m, "synthetic");
  ASSERT_TRUE(p.collectives.has_value());
  EXPECT_NEAR(p.collectives->latency.us(), 50.0, 1e-3);
  EXPECT_NEAR(p.collectives->bus_bandwidth.value, 1e9, 1.0);
  // 3x the line is a slow-down of 2. A GEMM overlapped for T wall seconds at speed 1 / (1 + s)
  // takes T s / (1 + s) longer; 0.5 T longer gives s / (1 + s) = 0.5, s = 1.
  EXPECT_NEAR(p.interference.comm_slowdown, 2.0, 1e-6);
  EXPECT_NEAR(p.interference.compute_slowdown, 1.0, 1e-6);
}

// The cuda plan's suites, timed synthetically as a GPU with known figures would run them:
//   bf16 and fp16 GEMMs at eff(m) = m / 65536 + 0.5 of 8e14 FLOP/s (so m = 32768, the grid's
//   largest, runs at exactly 8e14), tf32 at half that rate, fp8 at twice; gap 3 us; attention at
//   0.4 of the bf16 peak; streaming at 3e12 B/s; AdamW at 0.5 of that.
double gpu_eff(int64_t m) { return static_cast<double>(m) / 65536 + 0.5; }
validate::TaskDurations synthetic_gpu(const ir::TaskGraph& g) {
  validate::TaskDurations d;
  d.graph = &g;
  double clock = 0;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    double s = 0;
    if (g.task(t).kind == ir::TaskKind::compute) {
      const ir::ComputeOp& op = g.compute(g.task(t));
      const double bytes = static_cast<double>(op.bytes.count);
      const double rate = op.dtype == ir::DType::tf32  ? 4e14
                          : op.dtype == ir::DType::fp8 ? 1.6e15
                                                       : 8e14;
      s = 3e-6;
      if (op.op == ir::OpClass::gemm)
        s += op.flops.value / (rate * gpu_eff(op.m));
      else if (op.op == ir::OpClass::attention)
        s += op.flops.value / (8e14 * 0.4);
      else if (op.op == ir::OpClass::optimizer)
        s += bytes / (3e12 * 0.5);
      else if (op.bytes.count > 8)
        s += bytes / 3e12;
    }
    d.start.push_back(clock);
    d.end.push_back(clock += s);
  }
  return d;
}

TEST(Calibration, CudaPlanFitsEachDtypeAgainstTheDatasheetPeak) {
  const validate::CalibrationPlan plan = validate::cuda_plan(true);
  const ir::TaskGraph g = validate::calibration_graph("compute", 1, plan);
  // A repeat: light kernels 5 streaming + 4 norm + 4 softmax + 3 dtypes x 7 attention + 3 AdamW
  // + 4 empty = 41; then 3 misaligned probes and their aligned twins (6) and 4 dtypes x 8^3 shapes
  // (2,048): 2,095 kernels.
  size_t kernels = 0, delays = 0;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    kernels += g.task(t).kind == ir::TaskKind::compute ? 1 : 0;
    delays += g.task(t).kind == ir::TaskKind::delay ? 1 : 0;
  }
  EXPECT_EQ(kernels, 2095u * static_cast<size_t>(plan.repeats));
  EXPECT_GT(delays, 0u);  // the cool-downs after heavy benchmarks
  // Every light benchmark of every repeat runs before the first GEMM (a GPU left hot by the grid
  // runs them slower than a training step does).
  ir::TaskId first_gemm = UINT32_MAX, last_light = 0;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    if (g.task(t).kind != ir::TaskKind::compute) continue;
    if (g.compute(g.task(t)).op == ir::OpClass::gemm)
      first_gemm = std::min(first_gemm, t);
    else
      last_light = t;
  }
  EXPECT_LT(last_light, first_gemm);
  const validate::TaskDurations d = synthetic_gpu(g);
  const cost::DeviceSpec& h100 = cost::find_device("h100_sxm");
  const cost::Profile p =
      validate::fit_profile(validate::Measurements{d}, "synthetic H100", plan, &h100);
  EXPECT_EQ(p.name, "h100_sxm");
  // The datasheet's peaks stay; each table is a share of its own dtype's.
  EXPECT_DOUBLE_EQ(p.device.bf16.value, h100.bf16.value);
  EXPECT_DOUBLE_EQ(p.device.tf32.value, h100.tf32.value);
  EXPECT_EQ(p.device.memory_capacity.count, h100.memory_capacity.count);
  EXPECT_NEAR(p.device.hbm_bandwidth.value, 3e12,
              3e6);  // within 1e-6: the clock sums thousands of tasks
  EXPECT_EQ(p.compute.launch_gap, SimTime::from_us(3.0));
  // bf16 at m = 2048: 8e14 x (2048 / 65536 + 0.5) / 989.4e12 = 8e14 x 0.53125 / 989.4e12.
  EXPECT_NEAR(p.compute.gemm_table.at(2048, 512, 8192), 8e14 * 0.53125 / 989.4e12, 1e-9);
  // tf32 at half the rate against a datasheet peak of 494.7e12: 4e14 x 0.53125 / 494.7e12.
  ASSERT_TRUE(p.compute.gemm_tables.count(ir::DType::tf32));
  EXPECT_NEAR(p.compute.gemm_tables.at(ir::DType::tf32).at(2048, 512, 8192),
              4e14 * 0.53125 / 494.7e12, 1e-9);
  ASSERT_TRUE(p.compute.gemm_tables.count(ir::DType::fp8));
  EXPECT_NEAR(p.compute.gemm_tables.at(ir::DType::fp8).at(32768, 512, 8192), 1.6e15 / 1978.9e12,
              1e-9);
  // The synthetic GPU prices a misaligned GEMM as an aligned one: a share of 1 (within the one
  // row more of k in the aligned twin).
  EXPECT_NEAR(p.compute.misaligned_gemm, 1.0, 1e-3);
  // The executor's attention (0.4 of 8e14 in bf16) goes to executor_kernels, not to the curve a
  // framework's attention reads.
  ASSERT_TRUE(p.executor.has_value());
  EXPECT_NEAR(p.executor->attention.at(ir::DType::bf16).at(1e12), 0.4 * 8e14 / 989.4e12, 1e-9);
  EXPECT_TRUE(p.compute.attention_curve.empty());
  EXPECT_NEAR(p.compute.optimizer_curve.at(1e9), 0.5, 1e-9);
  // Without FP8 (an A100) the plan has three dtypes and the preset's fp8 figure stays.
  EXPECT_EQ(validate::cuda_plan(false).gemm_dtypes.size(), 3u);
}

TEST(Calibration, CudaInterferenceRunsOnOneGpuButTheCpuNeedsAPeer) {
  // One GPU: the all-reduces are NCCL's one-rank kind (a device copy) beside 8192^3 GEMMs.
  const ir::TaskGraph g =
      validate::calibration_graph("interference", 1, validate::cuda_plan(false));
  // 16 cycles x (4 GEMMs + 2 all-reduces).
  EXPECT_EQ(g.size(), 16u * 6u);
  try {
    validate::calibration_graph("interference", 1);
    ADD_FAILURE() << "the cpu interference suite needs two ranks";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "calibration: the interference suite needs at least 2 ranks on the cpu backend");
  }
}

TEST(Calibration, GpuNamesMapToDevicePresets) {
  EXPECT_EQ(validate::device_preset_for_gpu("NVIDIA H100 80GB HBM3"), "h100_sxm");
  EXPECT_EQ(validate::device_preset_for_gpu("NVIDIA H100 PCIe"), "h100_pcie");
  EXPECT_EQ(validate::device_preset_for_gpu("NVIDIA H200"), "h200");
  EXPECT_EQ(validate::device_preset_for_gpu("NVIDIA A100-SXM4-80GB"), "a100_sxm_80gb");
  EXPECT_EQ(validate::device_preset_for_gpu("NVIDIA B200"), "b200");
  try {
    validate::device_preset_for_gpu("Tesla T4");
    ADD_FAILURE() << "an unknown GPU should be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "no device preset for the GPU 'Tesla T4'; known: H100 SXM (h100_sxm)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Calibration, ComparisonSumsByClassAndFindsTheWorstTask) {
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  ir::ComputeOp gemm;
  gemm.op = ir::OpClass::gemm;
  ir::ComputeOp ew;
  ew.op = ir::OpClass::elementwise;
  g.add_compute(0, s, gemm, g.label("a", ir::Phase::forward));
  g.add_compute(0, s, ew, g.label("b", ir::Phase::backward));
  g.finalize();
  sim::Timeline predicted;
  predicted.tasks = {{SimTime{}, SimTime{}, SimTime::from_us(10)},
                     {SimTime::from_us(10), SimTime::from_us(10), SimTime::from_us(30)}};
  predicted.makespan = SimTime::from_us(30);
  validate::MeasuredRun m;
  m.median_step_s = 40e-6;
  m.fastest_step_s = 35e-6;
  m.timeline.tasks = {{SimTime{}, SimTime{}, SimTime::from_us(15)},
                      {SimTime::from_us(15), SimTime::from_us(15), SimTime::from_us(40)}};
  const auto c = validate::compare(g, predicted, m);
  // Step: 30 us predicted against 40 us measured: -25%.
  EXPECT_DOUBLE_EQ(c.step_error_percent, -25.0);
  ASSERT_EQ(c.by_class.size(), 2u);
  EXPECT_EQ(c.by_class[0].what, "elementwise");
  EXPECT_NEAR(c.by_class[0].predicted_s, 20e-6, 1e-12);
  EXPECT_NEAR(c.by_class[0].measured_s, 25e-6, 1e-12);
  // Both tasks are off by 5 us; the tie goes to the first task.
  ASSERT_EQ(c.worst.size(), 2u);
  EXPECT_EQ(c.worst[0].what, "a (rank 0)");
}

}  // namespace
}  // namespace cs
