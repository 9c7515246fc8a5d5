// PyTorch profiler (Kineto) traces (validate/kineto.h): kernel classes by name, the step split
// and exposed communication of a hand-written trace in the Kineto schema
// (tests/data/kineto/two_steps_ddp.json), and bad input.
#include <gtest/gtest.h>

#include <fstream>

#include "error_of.h"

#include <functional>

#include "common/error.h"
#include "validate/kineto.h"

namespace cs {
namespace {

using test::error_of;

TEST(Kineto, KernelClassesByName) {
  using validate::KernelClass;
  EXPECT_EQ(validate::classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"), KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"), KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"), KernelClass::gemm);
  EXPECT_EQ(validate::classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>"), KernelClass::gemm);
  // Attention before GEMM: a fused attention kernel may be a CUTLASS one.
  EXPECT_EQ(validate::classify_kernel("fmha_cutlassF_bf16_aligned_64x128_rf_sm80"), KernelClass::attention);
  EXPECT_EQ(validate::classify_kernel("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"), KernelClass::attention);
  EXPECT_EQ(validate::classify_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), KernelClass::nccl);
  EXPECT_EQ(validate::classify_kernel("triton_red_fused_native_layer_norm_0"), KernelClass::memory_bound);
  EXPECT_EQ(validate::nccl_collective("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "reduce_scatter");
  EXPECT_EQ(validate::nccl_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t"), "all_gather");
  EXPECT_EQ(validate::nccl_collective("ncclDevKernel_SendRecv"), "send_recv");
}

TEST(Kineto, MeasuredStepSplitOfAHandWrittenTrace) {
  const auto t = validate::read_kineto_trace(std::string(CLUSTERSIM_SOURCE_DIR) + "/tests/data/kineto/two_steps_ddp.json");
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
  EXPECT_DOUBLE_EQ(b.step_us, 8.0);    // 10.5 .. 18.5
  EXPECT_DOUBLE_EQ(b.exposed_us, 4.0);  // 14.5 .. 18.5
}

TEST(Kineto, BadInputNamesTheEvent) {
  EXPECT_NE(error_of([] { validate::parse_kineto_trace("{\"traceEvents\": [", "t.json"); }).find("t.json: not JSON"), std::string::npos);
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace("{\"foo\": 1}", "t.json"); }),
            "t.json: expected a Chrome trace: an object with a traceEvents array (torch.profiler's export_chrome_trace)");
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace(R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": -3}]})", "t.json"); }),
            "t.json: traceEvents[0] ('k'): dur -3 is out of range (at least 0 us, at most 1e12 us)");
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace(R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1}]})", "t.json"); }),
            "t.json: traceEvents[0] ('k'): missing \"dur\" (a number of microseconds)");
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace(R"({"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"device": -1}}]})", "t.json"); }),
            "t.json: traceEvents[0] ('k'): args.device must be a whole number from 0 to 65536");
  EXPECT_EQ(error_of([] { validate::parse_kineto_trace(R"({"traceEvents": [{"cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})", "t.json"); }),
            "t.json: no GPU kernels (events with \"cat\": \"kernel\"); was the profiler run with ProfilerActivity.CUDA?");
}

TEST(Kineto, AGzipTraceOfARealStepReadsAsTheJsonWould) {
  // torch.profiler's trace of one GPT-2 small training step (PyTorch 2.11, one H100, batch 4,
  // amp fp16), gzip-compressed as tensorboard_trace_handler writes it. Counted independently with
  // Python's json module: 1,167 events of category "kernel" (36,873.115 us), 107 "gpu_memset"
  // (104.902 us) and 3 "gpu_memcpy" (4.097 us), GPU time 36,982.114 us in all, and 49,647.26 us
  // from the first kernel's start to the last one's end (no ProfilerStep annotation, so that span
  // is the step).
  const auto t = validate::read_kineto_trace(std::string(CLUSTERSIM_SOURCE_DIR) +
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
  EXPECT_NE(error_of([&] { validate::read_kineto_trace(bad); }).find("damaged.json.gz"), std::string::npos);
}

}  // namespace
}  // namespace cs
