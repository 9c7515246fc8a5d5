// PyTorch profiler (Kineto) traces (validate/kineto.h): kernel classes by name, the step split
// and exposed communication of a hand-written trace in the Kineto schema
// (tests/data/kineto/two_steps_ddp.json), and bad input; calibrate --kineto recovering the kernel
// rates a trace was made with, and its profile key rate_scale.
#include "validate/kineto.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include "common/error.h"
#include "cost_models/compute_model.h"
#include "driver/simulation.h"
#include "error_of.h"
#include "scenarios/profile_io.h"
#include "test_paths.h"
#include "validate/kineto_calibration.h"

namespace cs {
namespace {

using test::error_of;

TEST(Kineto, KernelClassesByName) {
  using validate::KernelClass;
  EXPECT_EQ(validate::classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
            KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"),
            KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"),
            KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>"),
            KernelClass::gemm);
  // Attention before GEMM: a fused attention kernel may be a CUTLASS one.
  EXPECT_EQ(validate::classify_kernel("fmha_cutlassF_bf16_aligned_64x128_rf_sm80"),
            KernelClass::attention);
  EXPECT_EQ(validate::classify_kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"),
            KernelClass::attention);
  EXPECT_EQ(validate::classify_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
            KernelClass::nccl);
  EXPECT_EQ(validate::classify_kernel("triton_red_fused_native_layer_norm_0"),
            KernelClass::memory_bound);
  EXPECT_EQ(validate::nccl_collective("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"),
            "reduce_scatter");
  EXPECT_EQ(validate::nccl_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t"), "all_gather");
  EXPECT_EQ(validate::nccl_collective("ncclDevKernel_SendRecv"), "send_recv");
}

TEST(Kineto, MeasuredStepSplitOfAHandWrittenTrace) {
  const auto t = validate::read_kineto_trace(cs::test_paths::source_dir() +
                                             "/tests/data/kineto/two_steps_ddp.json");
  EXPECT_EQ(t.devices, (std::vector<int>{0, 1}));
  ASSERT_EQ(t.step_us.size(), 2u);  // the CPU ProfilerSteps; the GPU annotation is not a step
  const auto b = validate::measured_breakdown(t, 0);
  // Two steps of 400 and 420 us: median 410 us. Device 0's kernels over both steps, halved:
  //   gemm        100 + 110               = 210 -> 105
  //   attention    50 + 40 (fmha)         =  90 ->  45
  //   memory      20 + 10 (memcpy) + 15   =  45 ->  22.5
  //   nccl        100 + 30 + 20           = 150 ->  75 (all_reduce 50, all_gather 15, send_recv 10)
  // Exposed: step 1's all-reduce 1120-1220 under compute 1000-1170: 50 us out; step 2's
  // all-gather 2100-2130 under the GEMM and fmha (2000-2150): 0; the send/recv 2200-2220 alone:
  // 20. (50 + 0 + 20) / 2 = 35 us per step.
  EXPECT_EQ(b.steps, 2);
  EXPECT_DOUBLE_EQ(b.step_us, 410);
  EXPECT_DOUBLE_EQ(b.by_class.at("gemm"), 105);
  EXPECT_DOUBLE_EQ(b.by_class.at("attention"), 45);
  EXPECT_DOUBLE_EQ(b.by_class.at("memory_bound"), 22.5);
  EXPECT_DOUBLE_EQ(b.by_class.at("nccl"), 75);
  EXPECT_DOUBLE_EQ(b.by_collective.at("all_reduce"), 50);
  EXPECT_DOUBLE_EQ(b.by_collective.at("all_gather"), 15);
  EXPECT_DOUBLE_EQ(b.by_collective.at("send_recv"), 10);
  EXPECT_DOUBLE_EQ(b.communication_us, 75);
  EXPECT_DOUBLE_EQ(b.exposed_us, 35);
  // Device 1: one GEMM of 99 us, nothing exposed.
  const auto d1 = validate::measured_breakdown(t, 1);
  EXPECT_DOUBLE_EQ(d1.by_class.at("gemm"), 49.5);
  EXPECT_DOUBLE_EQ(d1.exposed_us, 0);
}

TEST(Kineto, WithoutProfilerStepsTheGpuSpanIsTheStep) {
  const auto t = validate::parse_kineto_trace(
      R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 0, "ts": 10.5, "dur": 4.0, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "ts": 12.5, "dur": 6.0, "args": {"device": 0, "stream": 9}}]})",
      "t.json");
  const auto b = validate::measured_breakdown(t, 0);
  EXPECT_EQ(b.steps, 1);
  EXPECT_DOUBLE_EQ(b.step_us, 8.0);     // 10.5 .. 18.5
  EXPECT_DOUBLE_EQ(b.exposed_us, 4.0);  // 14.5 .. 18.5
}

TEST(Kineto, BadInputNamesTheEvent) {
  EXPECT_NE(error_of([] {
              validate::parse_kineto_trace("{\"traceEvents\": [", "t.json");
            }).find("t.json: not JSON"),
            std::string::npos);
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace("{\"foo\": 1}", "t.json"); }),
            "t.json: expected a Chrome trace: an object with a traceEvents array (torch.profiler's "
            "export_chrome_trace)");
  EXPECT_EQ(error_of([] {
              validate::parse_kineto_trace(
                  R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": -3}]})",
                  "t.json");
            }),
            "t.json: traceEvents[0] ('k'): dur -3 is out of range: from 0 to 1e12 us (11 days)");
  // 1e17 us became 1e20 ns in the breakdown: past 64 bits, and zero exposed communication.
  EXPECT_EQ(
      error_of([] {
        validate::parse_kineto_trace(
            R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1e17, "dur": 3}]})", "t.json");
      }),
      "t.json: traceEvents[0] ('k'): ts 1e+17 is out of range: from -4e15 to 4e15 us (the Unix "
      "epoch plus 127 years; beyond, nanosecond times overflow 64 bits)");
  EXPECT_EQ(error_of([] {
              validate::parse_kineto_trace(
                  R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1}]})", "t.json");
            }),
            "t.json: traceEvents[0] ('k'): missing \"dur\" (a number of microseconds)");
  EXPECT_EQ(
      error_of([] {
        validate::parse_kineto_trace(
            R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"device": -1}}]})",
            "t.json");
      }),
      "t.json: traceEvents[0] ('k'): args.device must be a whole number from 0 to 65536");
  EXPECT_EQ(error_of([] {
              validate::parse_kineto_trace(
                  R"({"traceEvents": [{"cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})",
                  "t.json");
            }),
            "t.json: no GPU kernels (events with \"cat\": \"kernel\"); was the profiler run with "
            "ProfilerActivity.CUDA?");
}

TEST(Kineto, AGzipTraceOfARealStepReadsAsTheJsonWould) {
  // torch.profiler's trace of one GPT-2 small training step (PyTorch 2.11, one H100, batch 4,
  // amp fp16), gzip-compressed as tensorboard_trace_handler writes it. Counted independently with
  // Python's json module: 1,167 events of category "kernel" (36,873.115 us), 107 "gpu_memset"
  // (104.902 us) and 3 "gpu_memcpy" (4.097 us), GPU time 36,982.114 us in all, and 49,647.26 us
  // from the first kernel's start to the last one's end (no ProfilerStep annotation, so that span
  // is the step).
  const auto t = validate::read_kineto_trace(
      cs::test_paths::source_dir() +
      "/validate/measurements/torch_h100_202611/kineto_gpt2_small_b4.json.gz");
  EXPECT_EQ(t.kernels.size(), 1277u);  // every GPU event: 1,167 kernels + 107 memsets + 3 memcpys
  const auto b = validate::measured_breakdown(t, t.devices.front());
  EXPECT_NEAR(b.step_us, 49647.26, 0.01);
  double kernel_us = 0;
  for (const auto& [cls, us] : b.by_class) kernel_us += us;
  EXPECT_NEAR(kernel_us, 36982.114, 0.01);
  // A damaged gzip file is refused with its name, not parsed as garbage.
  const std::string bad = ::testing::TempDir() + "/damaged.json.gz";
  {
    std::ofstream out(bad, std::ios::binary);
    out << "\x1f\x8b\x08\x00garbage";
  }
  EXPECT_NE(error_of([&] { validate::read_kineto_trace(bad); }).find("damaged.json.gz"),
            std::string::npos);
}

// What the scenario predicts per class on graph rank 0, and each class's launch gaps (task count x
// the profile's launch_gap), with the GPU's shipped profile.
struct ClassTimes {
  std::map<std::string, double> predicted_us, gaps_us;
};
ClassTimes class_times(const scenario::Scenario& s) {
  const auto run = driver::simulate(s, {false, false, driver::RankMode::automatic, false});
  const auto p =
      validate::predicted_breakdown(run.step.graph, run.timeline, 0, run.report.step_time.us());
  ClassTimes c;
  c.predicted_us = p.by_class;
  for (const ir::Task& t : run.step.graph.tasks()) {
    if (t.rank != 0 || t.kind != ir::TaskKind::compute) continue;
    const ir::OpClass op = run.step.graph.compute(t).op;
    const std::string cls = op == ir::OpClass::gemm        ? "gemm"
                            : op == ir::OpClass::attention ? "attention"
                                                           : "memory_bound";
    c.gaps_us[cls] += s.profile->compute.launch_gap.us();
  }
  return c;
}

// A trace with one kernel per class lasting `us` of that class, back to back on device 0.
std::string trace_with(const std::map<std::string, double>& us) {
  const std::map<std::string, std::string> names{
      {"gemm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"},
      {"attention", "flash_fwd_kernel"},
      {"memory_bound", "elementwise_kernel"}};
  std::string events;
  double ts = 0;
  for (const auto& [cls, d] : us) {
    char e[300];
    std::snprintf(
        e, sizeof e,
        R"(%s{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "ts": %.3f, "dur": %.3f, "args": {"device": 0, "stream": 7}})",
        events.empty() ? "" : ",", names.at(cls).c_str(), ts, d);
    events += e;
    ts += d;
  }
  return "{\"traceEvents\": [" + events + "]}";
}

scenario::Scenario gpt2_small_with_profile() {
  auto s =
      scenario::load_scenario(cs::test_paths::source_dir() + "/scenarios/gpt2-small-1xh100.yaml");
  driver::apply_default_profile(s);
  return s;
}

TEST(KinetoCalibration, RecoversTheRatesATraceWasMadeWith) {
  // A machine whose GEMMs run at 0.8 of the shipped profile's rate, attention at 1.25 and
  // memory-bound kernels at 0.9: each class c takes G_c + W_c / f_c there, with G_c its launch
  // gaps (the rate leaves them alone) and W_c = P_c - G_c the rest of the prediction. One GPU,
  // nothing overlapping: the fit is exact after one pass.
  const auto s = gpt2_small_with_profile();
  ASSERT_TRUE(s.profile.has_value());
  const ClassTimes c = class_times(s);
  const std::map<std::string, double> rate{
      {"gemm", 0.8}, {"attention", 1.25}, {"memory_bound", 0.9}};
  std::map<std::string, double> measured;
  for (const auto& [cls, f] : rate) {
    ASSERT_GT(c.predicted_us.at(cls), c.gaps_us.at(cls)) << cls;
    measured[cls] = c.gaps_us.at(cls) + (c.predicted_us.at(cls) - c.gaps_us.at(cls)) / f;
  }
  const auto trace = validate::parse_kineto_trace(trace_with(measured), "made.json");
  const validate::KinetoFit fit = validate::fit_kineto_profile(trace, 0, s);
  EXPECT_NEAR(fit.profile.compute.rate_scale.gemm, 0.8, 1e-4);
  EXPECT_NEAR(fit.profile.compute.rate_scale.attention, 1.25, 1e-4);
  EXPECT_NEAR(fit.profile.compute.rate_scale.memory_bound, 0.9, 1e-4);
  EXPECT_EQ(fit.passes, 1);
  for (const auto& [cls, us] : measured)
    EXPECT_NEAR(fit.after.by_class.at(cls), us, us * 1e-5) << cls;
  EXPECT_FALSE(fit.profile.validation.has_value());  // the suite's error was the base profile's
  // The base profile's own figures are untouched: only the three rates moved.
  EXPECT_EQ(fit.profile.compute.launch_gap.ps, s.profile->compute.launch_gap.ps);
  EXPECT_EQ(fit.profile.compute.gemm_max, s.profile->compute.gemm_max);
}

TEST(KinetoCalibration, ATraceOfAnotherRunIsRefused) {
  // GEMMs 50 times the prediction: a rate of ~0.02, beyond 0.1-10. The trace is of another run.
  const auto s = gpt2_small_with_profile();
  const ClassTimes c = class_times(s);
  const auto trace = validate::parse_kineto_trace(
      trace_with({{"gemm", 50 * c.predicted_us.at("gemm")}}), "other.json");
  const std::string e = error_of([&] { validate::fit_kineto_profile(trace, 0, s); });
  EXPECT_NE(e.find("the trace's gemm kernels take"), std::string::npos) << e;
  EXPECT_NE(e.find("likely of another run"), std::string::npos) << e;
  // Without a profile there is nothing to scale.
  auto bare = s;
  bare.profile.reset();
  EXPECT_NE(error_of([&] { validate::fit_kineto_profile(trace, 0, bare); }).find("has none"),
            std::string::npos);
}

TEST(KinetoCalibration, RateScaleIsAProfileKey) {
  // Written and read back; the compute model divides the kernel's work (not its launch gap) by it.
  auto s = gpt2_small_with_profile();
  cost::Profile p = *s.profile;
  p.compute.rate_scale = {0.5, 2.0, 0.25};
  const std::string path = ::testing::TempDir() + "/rate_scale.yaml";
  scenario::save_profile(path, p);
  const cost::Profile back = scenario::load_profile(path);
  EXPECT_DOUBLE_EQ(back.compute.rate_scale.gemm, 0.5);
  EXPECT_DOUBLE_EQ(back.compute.rate_scale.attention, 2.0);
  EXPECT_DOUBLE_EQ(back.compute.rate_scale.memory_bound, 0.25);
  // A 4096^3 bf16 GEMM: launch_gap + work at the profile's rate; at rate 0.5 the work takes twice.
  const ir::ComputeOp gemm{.op = ir::OpClass::gemm,
                           .m = 4096,
                           .n = 4096,
                           .k = 4096,
                           .flops = Flops{2.0 * 4096 * 4096 * 4096},
                           .bytes = Bytes{3 * 4096 * 4096 * 2}};
  const cost::ComputeModel as_measured(s.profile->device, s.profile->compute),
      halved(back.device, back.compute);
  const int64_t gap = s.profile->compute.launch_gap.ps;
  EXPECT_NEAR(static_cast<double>(halved.time(gemm).ps - gap),
              2.0 * static_cast<double>(as_measured.time(gemm).ps - gap), 2.0);
  // Out of range, or a key that is not a class: file, line and what is valid.
  std::ofstream(::testing::TempDir() + "/bad_scale.yaml")
      << "name: x\ndevice: {peak_flops: 1e15, memory_bandwidth: 3e12}\n"
         "compute: {gemm_max_efficiency: 0.8, gemm_half_flops: 1e9, memory_efficiency: 0.8,\n"
         "  launch_gap_s: 3e-6, rate_scale: {gemm: 20}}\n";
  EXPECT_NE(error_of([] {
              scenario::load_profile(::testing::TempDir() + "/bad_scale.yaml");
            }).find("bad_scale.yaml:4"),
            std::string::npos)
      << error_of([] { scenario::load_profile(::testing::TempDir() + "/bad_scale.yaml"); });
  EXPECT_NE(error_of([] {
              scenario::load_profile(::testing::TempDir() + "/bad_scale.yaml");
            }).find("rate_scale.gemm: 20 is out of range: 0.1 to 10"),
            std::string::npos);
  std::ofstream(::testing::TempDir() + "/bad_key.yaml")
      << "name: x\ndevice: {peak_flops: 1e15, memory_bandwidth: 3e12}\n"
         "compute: {gemm_max_efficiency: 0.8, gemm_half_flops: 1e9, memory_efficiency: 0.8,\n"
         "  launch_gap_s: 3e-6, rate_scale: {nccl: 2}}\n";
  EXPECT_NE(error_of([] {
              scenario::load_profile(::testing::TempDir() + "/bad_key.yaml");
            }).find("unknown key 'nccl'; valid: gemm, attention, memory_bound"),
            std::string::npos);
}

}  // namespace
}  // namespace cs
