// Framework attention priced by head dimension as well as FLOPs, forward and backward apart
// (ComputeEfficiency::attention_by_head_dim, a profile's `attention_by_head_dim`), and GEMMs judged
// misaligned on m, n and k (cost_models/compute_model.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "common/error.h"
#include "cost_models/compute_model.h"
#include "cost_models/profile.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

// Two head dims, two FLOPs points each, forward and backward (backward keyed by its own FLOPs,
// 2.5x the forward's).
cost::AttentionByHeadDim table() {
  cost::AttentionByHeadDim t;
  t[64] = {cost::EfficiencyCurve({{1e11, 0.30}, {1e12, 0.40}}),
           cost::EfficiencyCurve({{2.5e11, 0.20}, {2.5e12, 0.35}})};
  t[128] = {cost::EfficiencyCurve({{1e11, 0.50}, {1e12, 0.60}}),
            cost::EfficiencyCurve({{2.5e11, 0.40}, {2.5e12, 0.50}})};
  return t;
}

// As models/model_work.cpp OpFactory::attention builds it: causal, batch x heads, m = n = seq,
// k = head dim, FLOPs = factor x 4 x bh x s^2 x d / 2 (factor 1 forward, 2.5 backward).
ir::ComputeOp attention(int64_t bh, int64_t s, int64_t d, double factor,
                        ir::DType dt = ir::DType::bf16) {
  ir::ComputeOp op;
  op.op = ir::OpClass::attention;
  op.dtype = dt;
  op.causal = true;
  op.batch = bh, op.m = s, op.n = s, op.k = d;
  op.flops = {factor * 4.0 * static_cast<double>(bh) * static_cast<double>(s) *
              static_cast<double>(s) * static_cast<double>(d) * 0.5};
  return op;
}

ir::ComputeOp gemm(int64_t m, int64_t n, int64_t k) {
  ir::ComputeOp op;
  op.op = ir::OpClass::gemm;
  op.dtype = ir::DType::bf16;
  op.m = m, op.n = n, op.k = k;
  op.flops = {2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)};
  return op;
}

cost::DeviceSpec device() { return cost::find_device("h100_sxm"); }  // bf16 989.4e12

TEST(AttentionHeadDim, AMeasuredPointReadsItsOwnEfficiency) {
  const cost::AttentionByHeadDim t = table();
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 1e12, false), 0.60);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 2.5e11, true), 0.40);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 64, 1e11, false), 0.30);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 64, 2.5e12, true), 0.35);
  // Between two FLOPs points of one head dim: linear in log2(FLOPs), as every curve.
  // sqrt(1e11 x 1e12) is half-way: (0.50 + 0.60) / 2.
  EXPECT_NEAR(cost::attention_efficiency(t, 128, std::sqrt(1e11 * 1e12), false), 0.55, 1e-12);
}

TEST(AttentionHeadDim, BetweenMeasuredHeadDimsLinearInLogHeadDimAndClampedOutside) {
  const cost::AttentionByHeadDim t = table();
  // Head dim 96: t = ln(96/64) / ln(128/64) = log2(1.5) = 0.5849625007.
  // Forward at 1e12: 0.40 + 0.5849625007 x (0.60 - 0.40) = 0.5169925001.
  EXPECT_NEAR(cost::attention_efficiency(t, 96, 1e12, false), 0.5169925001, 1e-9);
  // Backward at 2.5e11: 0.20 + 0.5849625007 x (0.40 - 0.20) = 0.3169925001.
  EXPECT_NEAR(cost::attention_efficiency(t, 96, 2.5e11, true), 0.3169925001, 1e-9);
  // Head dim 80: log2(80/64) = 0.3219280949; forward at sqrt(1e11 x 1e12): 64 reads 0.35, 128
  // reads 0.55, so 0.35 + 0.3219280949 x 0.20 = 0.4143856190.
  EXPECT_NEAR(cost::attention_efficiency(t, 80, std::sqrt(1e11 * 1e12), false), 0.4143856190, 1e-9);
  // Outside the measured head dims: the nearest one's curve.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 32, 1e12, false), 0.40);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 256, 1e12, false), 0.60);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 1, 2.5e11, true), 0.20);
}

TEST(AttentionHeadDim, TheComputeModelTellsForwardFromBackwardAndFallsBackWithoutATable) {
  // Forward bh 4, s 8192, d 128: 2 x 4 x 8192^2 x 128 = 6.8719476736e10 FLOPs (causal); the
  // curves below are flat (one point each), so the FLOPs do not move the efficiency.
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  e.attention = 0.123;
  e.attention_curve = cost::EfficiencyCurve({{1e9, 0.25}});
  cost::AttentionByHeadDim t;
  t[128] = {cost::EfficiencyCurve({{1e12, 0.60}}), cost::EfficiencyCurve({{1e12, 0.48}})};
  e.attention_by_head_dim[ir::DType::bf16] = t;
  const cost::ComputeModel model(device(), e);
  const ir::ComputeOp fwd = attention(4, 8192, 128, 1.0), bwd = attention(4, 8192, 128, 2.5);
  EXPECT_FALSE(cost::attention_backward(fwd));
  EXPECT_TRUE(cost::attention_backward(bwd));
  EXPECT_DOUBLE_EQ(fwd.flops.value, 6.8719476736e10);
  // Forward: 6.8719476736e10 / (989.4e12 x 0.60) = 115.7563 us; backward 2.5x the FLOPs at 0.48.
  EXPECT_NEAR(model.time(fwd).seconds(), 6.8719476736e10 / (989.4e12 * 0.60), 1e-12);
  EXPECT_NEAR(model.time(bwd).seconds(), 2.5 * 6.8719476736e10 / (989.4e12 * 0.48), 1e-12);
  // fp16 has no table here: the FLOPs-only curve, as before.
  const ir::ComputeOp fp16 = attention(4, 8192, 128, 1.0, ir::DType::fp16);
  EXPECT_NEAR(model.time(fp16).seconds(), 6.8719476736e10 / (989.4e12 * 0.25), 1e-12);
  // An op without its shape (k = 0: no head dim) cannot be looked up by head dim: the curve.
  ir::ComputeOp bare;
  bare.op = ir::OpClass::attention;
  bare.dtype = ir::DType::bf16;
  bare.flops = {1e12};
  EXPECT_FALSE(cost::attention_backward(bare));
  EXPECT_NEAR(model.time(bare).seconds(), 1e12 / (989.4e12 * 0.25), 1e-12);
  // The executor's runs never read the framework's table: for_executor drops it, and prices the
  // head-dim-128 op by its scores against the executor's curve measured at head dim 64: half its
  // FLOPs at 0.02.
  cost::Profile p;
  p.device = device();
  p.compute = e;
  p.executor =
      cost::ExecutorKernels{{{ir::DType::bf16, cost::EfficiencyCurve({{1e9, 0.02}})}}, {}, {}};
  const cost::Profile x = cost::for_executor(p);
  EXPECT_TRUE(x.compute.attention_by_head_dim.empty());
  EXPECT_NEAR(cost::ComputeModel(x.device, x.compute).time(fwd).seconds(),
              6.8719476736e10 * 64 / 128 / (989.4e12 * 0.02), 1e-12);
}

TEST(AttentionHeadDim, AnExplicitMaskRunsAtTheMaskedShareOfTheRate) {
  // A masked kernel over the whole square, forward bh 4, s 8192, d 128: 4 x 4 x 8192^2 x 128 =
  // 1.37438953472e11 FLOPs, not causal. The table reads 0.60 (flat); the mask takes the rate to
  // 0.56 of it (kMaskedAttentionShare: our H200 database's masked against unmasked cuDNN SDPA):
  // 1.37438953472e11 / (989.4e12 x 0.60 x 0.56) = 413.4 us.
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  cost::AttentionByHeadDim t;
  t[128] = {cost::EfficiencyCurve({{1e12, 0.60}}), cost::EfficiencyCurve({{1e12, 0.48}})};
  e.attention_by_head_dim[ir::DType::bf16] = t;
  const cost::ComputeModel model(device(), e);
  ir::ComputeOp masked = attention(4, 8192, 128, 2.0);  // 2 x the causal half: the full square
  masked.causal = false;
  EXPECT_DOUBLE_EQ(masked.flops.value, 1.37438953472e11);
  const double unmasked_s = model.time(masked).seconds();
  EXPECT_NEAR(unmasked_s, 1.37438953472e11 / (989.4e12 * 0.60), 1e-12);
  masked.explicit_mask = true;
  EXPECT_NEAR(model.time(masked).seconds(), 1.37438953472e11 / (989.4e12 * 0.60 * 0.56), 1e-12);
}

TEST(AttentionHeadDim, TheExecutorsAttentionFollowsItsScoresNotItsFlops) {
  // The executor's unfused attention measured at head dim 64 (curve flat at 0.026 of the bf16
  // peak, by FLOPs). Forward bh 48, s 2048: at head dim 64, 2 x 48 x 2048^2 x 64 =
  // 2.5769803776e10 FLOPs, 2.5769803776e10 / (989.4e12 x 0.026) = 1.0018 ms. At head dim 128 the
  // same scores take the same time although the FLOPs double (5.1539607552e10): priced as the
  // measured kernel with those scores, not at twice the time.
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  e.attention_curves[ir::DType::bf16] = cost::EfficiencyCurve({{1e9, 0.026}});
  e.attention_curve_head_dim = 64;
  const cost::ComputeModel model(device(), e);
  const double at64 = 2.5769803776e10 / (989.4e12 * 0.026);
  EXPECT_NEAR(model.time(attention(48, 2048, 64, 1.0)).seconds(), at64, 1e-12);
  EXPECT_DOUBLE_EQ(attention(48, 2048, 128, 1.0).flops.value, 5.1539607552e10);
  EXPECT_NEAR(model.time(attention(48, 2048, 128, 1.0)).seconds(), at64, 1e-12);
  // FLOPs-keyed curves (a framework's, attention_curve_head_dim 0): twice the FLOPs, twice the
  // time.
  e.attention_curve_head_dim = 0;
  const cost::ComputeModel flops_only(device(), e);
  EXPECT_NEAR(flops_only.time(attention(48, 2048, 128, 1.0)).seconds(), 2 * at64, 1e-12);
}

TEST(AttentionHeadDim, TheExecutorRunsAtTheRatesItMeasuredWithoutAFittedClock) {
  // A profile whose tensor clock (0.95) was fitted on framework steps: its GEMMs and attention at
  // 0.95 of the measured rates for frameworks (rate_scale 0.95, as read_tensor_clock sets it), at
  // 1 for the executor that measured them; memory-bound kernels untouched either way.
  cost::Profile p;
  p.device = device();
  p.tensor_clock_ratio = 0.95;
  p.compute.rate_scale.gemm = 0.95;
  p.compute.rate_scale.attention = 0.95;
  p.compute.rate_scale.memory_bound = 0.8;
  p.executor =
      cost::ExecutorKernels{{{ir::DType::bf16, cost::EfficiencyCurve({{1e9, 0.02}})}}, {}, {}};
  const cost::Profile x = cost::for_executor(p);
  EXPECT_DOUBLE_EQ(x.compute.rate_scale.gemm, 1.0);
  EXPECT_DOUBLE_EQ(x.compute.rate_scale.attention, 1.0);
  EXPECT_DOUBLE_EQ(x.compute.rate_scale.memory_bound, 0.8);
  EXPECT_DOUBLE_EQ(x.tensor_clock_ratio, 1.0);
}

TEST(AttentionHeadDim, ForwardLmHeadOfA50257VocabularyIsMisaligned) {
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  e.gemm_table = cost::GemmEfficiencyGrid({{1024, 1024, 1024, 0.8}});
  e.misaligned_gemm = 0.25;
  const cost::ComputeModel model(device(), e);
  // GPT-2's LM head at 4096 tokens, hidden 768: forward m 4096, n 50257, k 768. n = 50,257 is
  // not a multiple of 8 bf16 elements (16 bytes): misaligned, 0.8 x 0.25 of the peak.
  const ir::ComputeOp forward = gemm(4096, 50257, 768);
  EXPECT_TRUE(cost::gemm_misaligned(forward));
  EXPECT_NEAR(model.time(forward).seconds(), 2.0 * 4096 * 50257 * 768 / (989.4e12 * 0.8 * 0.25),
              1e-12);
  EXPECT_TRUE(cost::gemm_misaligned(gemm(4096, 768, 50257)));  // input gradient: vocabulary = k
  EXPECT_TRUE(cost::gemm_misaligned(gemm(50257, 768, 4096)));  // weight gradient: vocabulary = m
  // The padded vocabulary (50,304 = 8 x 6,288) is aligned in every pass.
  EXPECT_FALSE(cost::gemm_misaligned(gemm(4096, 50304, 768)));
  EXPECT_NEAR(model.time(gemm(4096, 50304, 768)).seconds(),
              2.0 * 4096 * 50304 * 768 / (989.4e12 * 0.8), 1e-12);
  // n's element size counts as m's and k's: tf32 needs multiples of 4, fp8 of 16.
  ir::ComputeOp tf32 = gemm(4096, 1028, 1024);
  tf32.dtype = ir::DType::tf32;
  EXPECT_FALSE(cost::gemm_misaligned(tf32));
  ir::ComputeOp fp8 = gemm(4096, 1032, 1024);
  fp8.dtype = ir::DType::fp8;
  EXPECT_TRUE(cost::gemm_misaligned(fp8));
}

const char* kHeader =
    "name: x\ndevice:\n  peak_flops: 1\n  memory_bandwidth: 1\ncompute:\n  gemm_max_efficiency: 1\n"
    "  gemm_half_flops: 0\n  memory_efficiency: 1\n  launch_gap_s: 0\n";  // 9 lines

// The message load_profile throws for `body` appended to kHeader (empty: none).
std::string refusal(const std::string& path, const std::string& body) {
  std::ofstream(path) << kHeader << body;
  try {
    scenario::load_profile(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(AttentionHeadDim, AProfileWithABadValueIsRefusedWithFileLineAndKey) {
  const std::string path = testing::TempDir() + "/attention_head_dim.yaml";
  const std::string good = "        backward: [[2.5e12, 0.5]]\n";
  // Line 10 is attention_by_head_dim, 11 the dtype, 12 the head dim, 13 forward, 14 backward.
  std::string m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, 0]]\n" + good);
  EXPECT_NE(m.find(path + ":13:26: attention_by_head_dim: bf16: 128: forward: efficiency: expected "
                          "a share of the peak in (0, 1.2], got '0'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, -0.3]]\n" + good);
  EXPECT_NE(m.find(path + ":13:26: attention_by_head_dim: bf16: 128: forward: efficiency: expected "
                          "a share of the peak in (0, 1.2], got '-0.3'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, 1.5]]\n" + good);
  EXPECT_NE(m.find(":13:26: attention_by_head_dim: bf16: 128: forward: efficiency: expected a "
                   "share of the peak in (0, 1.2], got '1.5'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[0, 0.5]]\n" + good);
  EXPECT_NE(m.find(":13:20: attention_by_head_dim: bf16: 128: forward: FLOPs: expected a finite "
                   "positive number, got '0'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      0:\n        forward: [[1e12, 0.5]]\n" + good);
  EXPECT_NE(m.find(path + ":12:7: attention_by_head_dim: bf16: head dimension: expected an integer "
                          "in 1..1024, got '0'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf16:\n      2048:\n        forward: [[1e12, 0.5]]\n" + good);
  EXPECT_NE(m.find(":12:7: attention_by_head_dim: bf16: head dimension: expected an integer in "
                   "1..1024, got '2048'"),
            std::string::npos)
      << m;
  m = refusal(path,
              "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, 0.5]]\n");
  EXPECT_NE(m.find(":13:9: attention_by_head_dim: bf16: 128: missing 'backward'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  attention_by_head_dim:\n    bf17:\n      128:\n        forward: [[1e12, 0.5]]\n" + good);
  EXPECT_NE(m.find(":11:5: unknown dtype 'bf17'"), std::string::npos) << m;
  // A good one loads, and is written back and read again the same.
  ASSERT_EQ(
      refusal(path,
              "  attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, 0.5]]\n" +
                  good),
      "");
  cost::Profile p = scenario::load_profile(path);
  ASSERT_EQ(p.compute.attention_by_head_dim.count(ir::DType::bf16), 1u);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(p.compute.attention_by_head_dim.at(ir::DType::bf16),
                                              128, 1e12, false),
                   0.5);
  p.compute.attention_by_head_dim[ir::DType::fp16] = table();
  scenario::save_profile(path, p);
  const cost::Profile q = scenario::load_profile(path);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(q.compute.attention_by_head_dim.at(ir::DType::bf16),
                                              128, 2.5e12, true),
                   0.5);
  EXPECT_NEAR(cost::attention_efficiency(q.compute.attention_by_head_dim.at(ir::DType::fp16), 96,
                                         1e12, false),
              0.5169925001, 1e-9);
}

// The shipped H100 profile prices PyTorch SDPA (cuDNN flash) from the sweep in
// validate/data/attention_sdpa_h100_202611.csv: bf16, head dim 128, 32 heads, seq 8192, batch 4.
TEST(AttentionHeadDim, TheShippedH100ProfileReadsTheMeasuredSweep) {
  const cost::Profile p =
      scenario::load_profile(cs::test_paths::source_dir() + "/profiles/h100_sxm.yaml");
  const cost::AttentionByHeadDim& t = p.compute.attention_by_head_dim.at(ir::DType::bf16);
  // Forward 3.7671 ms for 2,199,023,255,552 FLOPs: 583.7 TFLOP/s = 0.590 of 989.4.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 2199023255552.0, false), 0.590);
  // Backward (14.773 - 3.7671) ms for 2.5x those FLOPs: 499.5 TFLOP/s = 0.505.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 2.5 * 2199023255552.0, true), 0.505);
  // Head dim 64 at 8192 (16 heads, batch 4): forward 1.2596 ms for 549,755,813,888 FLOPs = 0.441.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 64, 549755813888.0, false), 0.441);
  // So in the compute model: a forward at bh 128 (4 x 32), s 8192, d 128 runs at 0.590 of the peak.
  const cost::ComputeModel model(p.device, p.compute);
  const ir::ComputeOp fwd = attention(128, 8192, 128, 1.0);
  EXPECT_NEAR(model.time(fwd).seconds(),
              p.compute.launch_gap.seconds() + 2199023255552.0 / (989.4e12 * 0.590), 1e-9);
}

// --- training.attention_backend: cudnn (default) | flash2 -------------------------------------

// A GPT-2 small scenario (12 heads of 64) with `extra` appended to its training block; the
// training keys start on line 6, so extra's first line is line 9.
std::string backend_scenario(const std::string& extra) {
  return "name: s\nmodel: {preset: gpt2-small}\ncluster: {preset: dgx_h100}\nlayout: {dp: "
         "8}\ntraining:\n"
         "  global_batch: 8\n  micro_batch: 1\n  seq_len: 1024\n" +
         extra;
}

std::string scenario_refusal(const std::string& text) {
  try {
    scenario::parse_scenario(text, "b.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// The attention ops of the scenario's training step (one representative rank per stage), by kernel.
std::pair<int, int> attention_ops_by_kernel(const scenario::Scenario& s) {
  strategy::StepOptions o;
  o.representative_ranks = true;
  const strategy::StepGraph step = strategy::build_training_step(s.model, s.layout, s.training, o);
  int cudnn = 0, flash2 = 0;
  for (const ir::Task& t : step.graph.tasks()) {
    if (t.kind != ir::TaskKind::compute || step.graph.compute(t).op != ir::OpClass::attention)
      continue;
    (step.graph.compute(t).attention_kernel == ir::AttentionKernel::flash2 ? flash2 : cudnn) += 1;
  }
  return {cudnn, flash2};
}

TEST(AttentionBackend, TheKeyParsesAndReachesEveryAttentionOp) {
  // Unset: cudnn, what the profiles' attention_by_head_dim holds.
  const scenario::Scenario plain = scenario::parse_scenario(backend_scenario(""), "a.yaml");
  EXPECT_EQ(plain.training.attention_kernel, ir::AttentionKernel::cudnn);
  const scenario::Scenario cudnn =
      scenario::parse_scenario(backend_scenario("  attention_backend: cudnn\n"), "a.yaml");
  EXPECT_EQ(cudnn.training.attention_kernel, ir::AttentionKernel::cudnn);
  const scenario::Scenario flash2 =
      scenario::parse_scenario(backend_scenario("  attention_backend: flash2\n"), "a.yaml");
  EXPECT_EQ(flash2.training.attention_kernel, ir::AttentionKernel::flash2);
  // GPT-2 small has 12 layers, each with one forward and one backward attention op (fused, no
  // recomputation, one micro-batch: global 8 / (micro 1 x dp 8)): 24, all of the run's kernel.
  EXPECT_EQ(attention_ops_by_kernel(plain), std::make_pair(24, 0));
  EXPECT_EQ(attention_ops_by_kernel(flash2), std::make_pair(0, 24));
}

TEST(AttentionBackend, ABadValueIsRefusedWithFileLineAndKey) {
  // "  attention_backend: " is 21 characters: the value starts at column 22 of line 9.
  std::string m = scenario_refusal(backend_scenario("  attention_backend: flash3\n"));
  EXPECT_NE(m.find("b.yaml:9:22: training.attention_backend: unknown value 'flash3'; valid values: "
                   "cudnn, flash2"),
            std::string::npos)
      << m;
  m = scenario_refusal(backend_scenario("  attention_backend: [flash2]\n"));
  EXPECT_NE(m.find("b.yaml:9:22: training.attention_backend"), std::string::npos) << m;
  // Eager attention runs no fused kernel: flash2 there is refused rather than ignored (line 10).
  m = scenario_refusal(backend_scenario("  attention: eager\n  attention_backend: flash2\n"));
  EXPECT_NE(m.find("b.yaml:10:22: training.attention_backend: names a fused kernel: applies to "
                   "attention: fused only"),
            std::string::npos)
      << m;
  // cudnn with eager is the default spelled out: accepted.
  EXPECT_EQ(scenario_refusal(backend_scenario("  attention: eager\n  attention_backend: cudnn\n")),
            "");
}

// A flash2 op reads the shipped profiles' flash2 table at a measured point of the sweep
// (validate/data/attention_sdpa_{h100,h200}_202611.csv, backend `flash`, bf16, causal).
TEST(AttentionBackend, AFlash2OpReadsTheMeasuredFlashAttention2Curve) {
  const cost::Profile p =
      scenario::load_profile(cs::test_paths::source_dir() + "/profiles/h100_sxm.yaml");
  const cost::AttentionByHeadDim& t = p.compute.flash2_attention_by_head_dim.at(ir::DType::bf16);
  // H100, head dim 128, 32 heads, seq 8192, batch 4: forward 6.5757 ms for 4 x 4 x 32 x 8192^2 x
  // 128 / 2 = 2,199,023,255,552 FLOPs = 334.4 TFLOP/s = 0.338 of 989.4.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 2199023255552.0, false), 0.338);
  // Backward: (26.2784 - 6.5757) = 19.7027 ms for 2.5 x those FLOPs (5,497,558,138,880):
  // 279.0 TFLOP/s = 0.282.
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(t, 128, 5497558138880.0, true), 0.282);
  // fp16 reuses bf16's rows (the forced backends were measured in bf16 only).
  EXPECT_DOUBLE_EQ(
      cost::attention_efficiency(p.compute.flash2_attention_by_head_dim.at(ir::DType::fp16), 128,
                                 2199023255552.0, false),
      0.338);
  // In the compute model, the same forward op (bh 128 = 4 x 32) marked flash2 runs at 0.338 of
  // the peak, marked cudnn (the default) at the default table's 0.590 (3.7671 ms measured).
  const cost::ComputeModel model(p.device, p.compute);
  ir::ComputeOp fwd = attention(128, 8192, 128, 1.0);
  EXPECT_NEAR(model.time(fwd).seconds(),
              p.compute.launch_gap.seconds() + 2199023255552.0 / (989.4e12 * 0.590), 1e-9);
  fwd.attention_kernel = ir::AttentionKernel::flash2;
  EXPECT_NEAR(model.time(fwd).seconds(),
              p.compute.launch_gap.seconds() + 2199023255552.0 / (989.4e12 * 0.338), 1e-9);
  ir::ComputeOp bwd = attention(128, 8192, 128, 2.5);
  bwd.attention_kernel = ir::AttentionKernel::flash2;
  EXPECT_NEAR(model.time(bwd).seconds(),
              p.compute.launch_gap.seconds() + 5497558138880.0 / (989.4e12 * 0.282), 1e-9);

  // H200, head dim 64, 16 heads, seq 8192, batch 4: forward 1.9439 ms for 4 x 4 x 16 x 8192^2 x 64
  // / 2 = 549,755,813,888 FLOPs = 282.8 TFLOP/s = 0.286 of 989.4; backward (7.402 - 1.9439) =
  // 5.4581 ms for 2.5x (1,374,389,534,720): 251.8 TFLOP/s = 0.255.
  const cost::Profile h200 =
      scenario::load_profile(cs::test_paths::source_dir() + "/profiles/h200.yaml");
  const cost::AttentionByHeadDim& u = h200.compute.flash2_attention_by_head_dim.at(ir::DType::bf16);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(u, 64, 549755813888.0, false), 0.286);
  EXPECT_DOUBLE_EQ(cost::attention_efficiency(u, 64, 1374389534720.0, true), 0.255);
}

TEST(AttentionBackend, WithoutAFlash2TableAFlash2OpIsPricedAsTheDefaultKernel) {
  // Flat one-point curves: bf16 default 0.60 / 0.48, bf16 flash2 0.34 / 0.28, fp16 default only
  // 0.55 / 0.45; tf32 has no table (attention_curve 0.25).
  cost::ComputeEfficiency e;
  e.launch_gap = SimTime{};
  e.attention_curve = cost::EfficiencyCurve({{1e9, 0.25}});
  cost::AttentionByHeadDim def, fl2, def16;
  def[128] = {cost::EfficiencyCurve({{1e12, 0.60}}), cost::EfficiencyCurve({{1e12, 0.48}})};
  fl2[128] = {cost::EfficiencyCurve({{1e12, 0.34}}), cost::EfficiencyCurve({{1e12, 0.28}})};
  def16[128] = {cost::EfficiencyCurve({{1e12, 0.55}}), cost::EfficiencyCurve({{1e12, 0.45}})};
  e.attention_by_head_dim[ir::DType::bf16] = def;
  e.attention_by_head_dim[ir::DType::fp16] = def16;
  const double F = 6.8719476736e10;  // bh 4, s 8192, d 128, causal: 2 x 4 x 8192^2 x 128
  auto op = [](ir::DType dt, double factor, ir::AttentionKernel k) {
    ir::ComputeOp o = attention(4, 8192, 128, factor, dt);
    o.attention_kernel = k;
    return o;
  };
  const auto cudnn = ir::AttentionKernel::cudnn, flash2 = ir::AttentionKernel::flash2;
  {
    // No flash2 table at all: a flash2 op is the cudnn op, forward and backward.
    const cost::ComputeModel model(device(), e);
    EXPECT_EQ(model.time(op(ir::DType::bf16, 1.0, flash2)).ps,
              model.time(op(ir::DType::bf16, 1.0, cudnn)).ps);
    EXPECT_NEAR(model.time(op(ir::DType::bf16, 1.0, flash2)).seconds(), F / (989.4e12 * 0.60),
                1e-12);
    EXPECT_NEAR(model.time(op(ir::DType::bf16, 2.5, flash2)).seconds(), 2.5 * F / (989.4e12 * 0.48),
                1e-12);
  }
  e.flash2_attention_by_head_dim[ir::DType::bf16] = fl2;
  const cost::ComputeModel model(device(), e);
  // bf16 flash2: its own table; bf16 cudnn: the default one, unchanged.
  EXPECT_NEAR(model.time(op(ir::DType::bf16, 1.0, flash2)).seconds(), F / (989.4e12 * 0.34), 1e-12);
  EXPECT_NEAR(model.time(op(ir::DType::bf16, 2.5, flash2)).seconds(), 2.5 * F / (989.4e12 * 0.28),
              1e-12);
  EXPECT_NEAR(model.time(op(ir::DType::bf16, 1.0, cudnn)).seconds(), F / (989.4e12 * 0.60), 1e-12);
  // fp16 has no flash2 table here: its default table (0.55), per dtype.
  EXPECT_NEAR(model.time(op(ir::DType::fp16, 1.0, flash2)).seconds(), F / (989.4e12 * 0.55), 1e-12);
  // tf32 has neither: the FLOPs-only curve (0.25 of tf32's 494.7e12 peak).
  EXPECT_NEAR(model.time(op(ir::DType::tf32, 1.0, flash2)).seconds(), F / (494.7e12 * 0.25), 1e-12);
  // The executor's runs drop the flash2 table as the default one.
  cost::Profile p;
  p.device = device();
  p.compute = e;
  p.executor =
      cost::ExecutorKernels{{{ir::DType::bf16, cost::EfficiencyCurve({{1e9, 0.02}})}}, {}, {}};
  EXPECT_TRUE(cost::for_executor(p).compute.flash2_attention_by_head_dim.empty());
}

TEST(AttentionBackend, AProfilesFlash2TableIsRangeCheckedAndRoundTrips) {
  const std::string path = testing::TempDir() + "/attention_flash2.yaml";
  const std::string good = "        backward: [[2.5e12, 0.3]]\n";
  // Line 10 is flash2_attention_by_head_dim, 11 the dtype, 12 the head dim, 13 forward.
  std::string m = refusal(
      path,
      "  flash2_attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[1e12, 1.5]]\n" +
          good);
  EXPECT_NE(m.find(path + ":13:26: flash2_attention_by_head_dim: bf16: 128: forward: efficiency: "
                          "expected a share of the peak in (0, 1.2], got '1.5'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  flash2_attention_by_head_dim:\n    bf16:\n      4096:\n        forward: [[1e12, 0.3]]\n" +
          good);
  EXPECT_NE(m.find(path + ":12:7: flash2_attention_by_head_dim: bf16: head dimension: expected an "
                          "integer in 1..1024, got '4096'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  flash2_attention_by_head_dim:\n    bf16:\n      128:\n        backward: [[1e12, 0.3]]\n");
  EXPECT_NE(m.find(":13:9: flash2_attention_by_head_dim: bf16: 128: missing 'forward'"),
            std::string::npos)
      << m;
  m = refusal(
      path,
      "  flash2_attention_by_head_dim:\n    bf16:\n      128:\n        forward: [[-1, 0.3]]\n" +
          good);
  EXPECT_NE(m.find(":13:20: flash2_attention_by_head_dim: bf16: 128: forward: FLOPs: expected a "
                   "finite positive number, got '-1'"),
            std::string::npos)
      << m;
  m = refusal(path, "  flash2_attention_by_head_dim: [1, 2]\n");
  EXPECT_NE(m.find(":10:33: flash2_attention_by_head_dim: expected a mapping of dtype"),
            std::string::npos)
      << m;
  // A good one loads beside no default table, and is written back and read again the same.
  ASSERT_EQ(refusal(path,
                    "  flash2_attention_by_head_dim:\n    bf16:\n      128:\n        forward: "
                    "[[1e12, 0.34]]\n" +
                        good),
            "");
  cost::Profile p = scenario::load_profile(path);
  EXPECT_TRUE(p.compute.attention_by_head_dim.empty());
  ASSERT_EQ(p.compute.flash2_attention_by_head_dim.count(ir::DType::bf16), 1u);
  scenario::save_profile(path, p);
  const cost::Profile q = scenario::load_profile(path);
  EXPECT_TRUE(q.compute.attention_by_head_dim.empty());
  EXPECT_DOUBLE_EQ(
      cost::attention_efficiency(q.compute.flash2_attention_by_head_dim.at(ir::DType::bf16), 128,
                                 1e12, false),
      0.34);
  EXPECT_DOUBLE_EQ(
      cost::attention_efficiency(q.compute.flash2_attention_by_head_dim.at(ir::DType::bf16), 128,
                                 2.5e12, true),
      0.3);
}

}  // namespace
}  // namespace cs
