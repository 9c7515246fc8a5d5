// Profiles on disk and the predicted-versus-measured comparison.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "scenarios/profile_io.h"
#include "validate/calibration.h"
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
  // A profile with a word where a number belongs names the line and key.
  std::ofstream(path) << "name: x\ndevice:\n  peak_flops: fast\n  memory_bandwidth: 1\ncompute:\n  gemm_max_efficiency: 1\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "a non-numeric peak should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3:15: peak_flops: expected a non-negative number, got 'fast'");
  }
}

TEST(Calibration, FitRecoversTheLinesItWasGiven) {
  // Synthetic durations from known figures: gap 2 us, GEMM (f + 1e6) / 1e11, streaming
  // 1 us/MB ... the fit must return them.
  const ir::TaskGraph g = validate::calibration_graph("compute");
  validate::TaskDurations d;
  d.graph = &g;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const ir::ComputeOp& op = g.compute(g.task(t));
    double s = 2e-6;
    if (op.op == ir::OpClass::gemm) s += (op.flops.value + 1e6) / 1e11;
    else if (op.bytes.count > 8) s += static_cast<double>(op.bytes.count) / 8e9;
    d.seconds.push_back(s);
  }
  const cost::Profile p = validate::fit_profile(d, nullptr, "synthetic");
  EXPECT_NEAR(p.device.fp32.value, 1e11, 1e3);
  EXPECT_NEAR(p.compute.gemm_half_flops, 1e6, 1.0);
  EXPECT_NEAR(p.device.hbm_bandwidth.value, 8e9, 1e2);
  EXPECT_EQ(p.compute.launch_gap, SimTime::from_us(2.0));
  EXPECT_FALSE(p.collectives.has_value());
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
  predicted.tasks = {{SimTime{}, SimTime{}, SimTime::from_us(10)}, {SimTime::from_us(10), SimTime::from_us(10), SimTime::from_us(30)}};
  predicted.makespan = SimTime::from_us(30);
  validate::MeasuredRun m;
  m.median_step_s = 40e-6;
  m.timeline.tasks = {{SimTime{}, SimTime{}, SimTime::from_us(15)}, {SimTime::from_us(15), SimTime::from_us(15), SimTime::from_us(40)}};
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
