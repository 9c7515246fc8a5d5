// A calibrated profile's per-dtype tables, the misaligned-GEMM share, norm and softmax curves, and
// the executor's own kernels (cost_models/compute_model.cpp, cost_models/profile.cpp), on disk and
// in the compute model.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "cost_models/compute_model.h"
#include "cost_models/profile.h"
#include "scenarios/profile_io.h"

namespace cs {
namespace {

// A 1 x 1 x 1 grid: every shape reads its one efficiency.
cost::GemmEfficiencyGrid flat(double eff) {
  return cost::GemmEfficiencyGrid({{1024, 1024, 1024, eff}});
}

cost::DeviceSpec device() {
  cost::DeviceSpec d =
      cost::find_device("h100_sxm");  // bf16 989.4e12, tf32 494.7e12, fp8 1978.9e12
  d.hbm_bandwidth = {2e12};
  return d;
}

ir::ComputeOp gemm(int64_t m, int64_t n, int64_t k, ir::DType d) {
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = d;
  op.m = m, op.n = n, op.k = k;
  op.flops = {2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)};
  return op;
}

TEST(KernelTables, EachDtypeReadsItsOwnGemmTableAndMisalignedKPaysTheShare) {
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  e.gemm_table = flat(0.8);  // bf16 (and any dtype without its own)
  e.gemm_tables[ir::DType::tf32] = flat(0.5);
  e.misaligned_gemm = 0.25;
  const cost::ComputeModel model(device(), e);
  // 8192 x 8192 x 8192 = 1.0995e12 FLOPs. bf16: / (989.4e12 x 0.8) = 1.38907 ms.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  EXPECT_NEAR(model.time(gemm(8192, 8192, 8192, ir::DType::bf16)).seconds(),
              flops / (989.4e12 * 0.8), 1e-9);
  // tf32 reads its own table: / (494.7e12 x 0.5).
  EXPECT_NEAR(model.time(gemm(8192, 8192, 8192, ir::DType::tf32)).seconds(),
              flops / (494.7e12 * 0.5), 1e-9);
  // fp16 has no table of its own: bf16's, against fp16's peak (bf16's on H100).
  EXPECT_NEAR(model.time(gemm(8192, 8192, 8192, ir::DType::fp16)).seconds(),
              flops / (989.4e12 * 0.8), 1e-9);
  // k = 50,257 (GPT-2's vocabulary, the lm_head input gradient) is not a multiple of 8 bf16
  // elements: 0.25 of the rate, four times the time.
  const ir::ComputeOp dgrad = gemm(8192, 1280, 50257, ir::DType::bf16);
  EXPECT_NEAR(model.time(dgrad).seconds(), dgrad.flops.value / (989.4e12 * 0.8 * 0.25), 1e-9);
  EXPECT_TRUE(cost::gemm_misaligned(dgrad));
  // n = 50,257 (the lm_head forward) is misaligned too: cuBLAS runs it on the same align1
  // fallback kernel (Kineto trace of GPT-2 small on H100, attention_head_dim_test.cpp).
  EXPECT_TRUE(cost::gemm_misaligned(gemm(8192, 50257, 1280, ir::DType::bf16)));
  // tf32 elements are 4 bytes: a multiple of 4 is aligned, fp8 needs 16.
  EXPECT_FALSE(cost::gemm_misaligned(gemm(8192, 1024, 1284, ir::DType::tf32)));
  EXPECT_TRUE(cost::gemm_misaligned(gemm(8192, 1024, 1032, ir::DType::fp8)));
}

TEST(KernelTables, NormAndSoftmaxCurvesPriceTheirClassesAndTheExecutorsKernelsOnlyItsRuns) {
  cost::Profile p;
  p.device = device();
  p.compute.launch_gap = SimTime{};
  p.compute.memory = 1.0;
  p.compute.memory_curve = cost::EfficiencyCurve({{1e6, 0.8}});
  p.compute.attention_curve = cost::EfficiencyCurve({{1e9, 0.3}});  // a framework's fused attention
  p.executor = cost::ExecutorKernels{{{ir::DType::bf16, cost::EfficiencyCurve({{1e9, 0.02}})}},
                                     cost::EfficiencyCurve({{1e6, 0.5}}),
                                     cost::EfficiencyCurve({{1e6, 0.4}})};
  ir::ComputeOp norm;
  norm.op = ir::OpClass::norm;
  norm.dtype = ir::DType::bf16;
  norm.bytes = {int64_t{1} << 30};
  ir::ComputeOp loss = norm;
  loss.op = ir::OpClass::cross_entropy;
  ir::ComputeOp attention;
  attention.op = ir::OpClass::attention;
  attention.dtype = ir::DType::bf16;
  attention.flops = {1e12};
  // The framework's view: memory_curve for both memory-bound kernels, the published attention.
  const cost::ComputeModel framework(p.device, p.compute);
  EXPECT_NEAR(framework.time(norm).seconds(), 1073741824.0 / (2e12 * 0.8), 1e-12);
  EXPECT_NEAR(framework.time(attention).seconds(), 1e12 / (989.4e12 * 0.3), 1e-12);
  // The executor's view: its norm at 0.5, its softmax at 0.4 of the bandwidth, its attention at
  // 0.02 of the peak.
  const cost::Profile x = cost::for_executor(p);
  const cost::ComputeModel executor(x.device, x.compute);
  EXPECT_NEAR(executor.time(norm).seconds(), 1073741824.0 / (2e12 * 0.5), 1e-12);
  EXPECT_NEAR(executor.time(loss).seconds(), 1073741824.0 / (2e12 * 0.4), 1e-12);
  EXPECT_NEAR(executor.time(attention).seconds(), 1e12 / (989.4e12 * 0.02), 1e-12);
}

TEST(KernelTables, SavedAndLoadedBackWithTheirDtypes) {
  cost::Profile p;
  p.name = "h100_sxm";
  p.device = device();
  p.compute.gemm_table = flat(0.8);
  p.compute.gemm_tables[ir::DType::fp8] = flat(0.7);
  p.compute.misaligned_gemm = 0.18;
  p.compute.attention_curve = cost::EfficiencyCurve({{1e9, 0.3}});
  p.compute.memory_curve = cost::EfficiencyCurve({{1e6, 0.9}});
  p.executor = cost::ExecutorKernels{{{ir::DType::tf32, cost::EfficiencyCurve({{1e9, 0.03}})}},
                                     cost::EfficiencyCurve({{1e6, 0.8}}),
                                     cost::EfficiencyCurve({{1e6, 0.7}})};
  const std::string path = testing::TempDir() + "/kernels.yaml";
  scenario::save_profile(path, p);
  const cost::Profile q = scenario::load_profile(path);
  EXPECT_DOUBLE_EQ(q.device.tf32.value, 494.7e12);  // each dtype's peak on its own line
  EXPECT_DOUBLE_EQ(q.device.fp8.value, 1978.9e12);
  EXPECT_DOUBLE_EQ(q.compute.gemm_tables.at(ir::DType::fp8).at(4096, 4096, 4096), 0.7);
  EXPECT_DOUBLE_EQ(q.compute.misaligned_gemm, 0.18);
  ASSERT_TRUE(q.executor.has_value());
  EXPECT_DOUBLE_EQ(q.executor->attention.at(ir::DType::tf32).at(1e9), 0.03);
  EXPECT_DOUBLE_EQ(q.executor->softmax.at(1e6), 0.7);
  // A misaligned share above 1 and an unknown dtype are refused with the file and line.
  std::ofstream(path) << "name: x\ndevice:\n  peak_flops: 1\n  memory_bandwidth: 1\ncompute:\n  "
                         "gemm_max_efficiency: 1\n"
                         "  gemm_half_flops: 0\n  memory_efficiency: 1\n  launch_gap_s: 0\n  "
                         "misaligned_gemm: 1.5\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "misaligned_gemm 1.5 should be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(":10:20: misaligned_gemm: 1.5 is out of range: at most 1"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(path) << "name: x\ndevice:\n  peak_flops: 1\n  memory_bandwidth: 1\ncompute:\n  "
                         "gemm_max_efficiency: 1\n"
                         "  gemm_half_flops: 0\n  memory_efficiency: 1\n  launch_gap_s: 0\n  "
                         "attention_curves:\n    bf17: [[1, 0.5]]\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "an unknown dtype should be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  ":11:5: unknown dtype 'bf17'; valid: fp32, tf32, bf16, fp16, fp8"),
              std::string::npos)
        << e.what();
  }
  // An empty curve for a dtype would leave it with no efficiency: refused, naming the key.
  std::ofstream(path) << "name: x\ndevice:\n  peak_flops: 1\n  memory_bandwidth: 1\ncompute:\n  "
                         "gemm_max_efficiency: 1\n"
                         "  gemm_half_flops: 0\n  memory_efficiency: 1\n  launch_gap_s: "
                         "0\nexecutor_kernels:\n  attention_curves:\n    bf16: []\n";
  try {
    scenario::load_profile(path);
    ADD_FAILURE() << "an empty curve should be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  ":12:5: attention_curves: bf16: expected at least one [size, efficiency] point"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cs
