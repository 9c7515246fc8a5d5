// The cuda executor on a real GPU. Every test skips, saying why, where no device is present.
#include <gtest/gtest.h>

#include <cstdlib>

#include "driver/simulation.h"
#include "executor/cuda_backend.h"

namespace cs {
namespace {

#define REQUIRE_GPU(n)                                                                     \
  do {                                                                                     \
    std::string why;                                                                       \
    const int have = exec::cuda_device_count(&why);                                        \
    if (have < (n))                                                                        \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << have << ": " << why; \
  } while (0)

// The source tree: $CLUSTERSIM_SOURCE_DIR where set (scripts/gpu-validate.sh sets it: on the GPU
// machine the tree is a copy at another path than the one this binary was built in).
std::string source_dir() {
  const char* env = std::getenv("CLUSTERSIM_SOURCE_DIR");
  return env && *env ? env : CLUSTERSIM_SOURCE_DIR;
}

scenario::Scenario load(const std::string& name) {
  return scenario::load_scenario(source_dir() + "/scenarios/" + name);
}

TEST(CudaExecutor, Gpt2SingleGpuRunsEveryTaskAndItsPeakIsWithinTenPercentOfThePrediction) {
  REQUIRE_GPU(1);
  for (const char* name : {"gpt2-small-1xh100.yaml", "gpt2-large-1xh100.yaml"}) {
    const auto s = load(name);
    const auto predicted = driver::simulate(s, {false, false, driver::RankMode::all});
    exec::CudaOptions o;
    o.warmup = 1;
    o.steps = 2;
    const exec::Measured m = exec::run_cuda(predicted.step.graph, o);
    const auto& g = predicted.step.graph;
    for (ir::TaskId t = 0; t < g.size(); ++t)
      EXPECT_GE(m.timeline.tasks[t].end, m.timeline.tasks[t].start) << g.task_name(t);
    // The stream-ordered pool's high-water mark against the simulator's peak for the same graph.
    const double ratio = static_cast<double>(m.timeline.memory[0].peak) /
                         static_cast<double>(predicted.report.peak_memory);
    EXPECT_NEAR(ratio, 1.0, 0.10) << name << ": measured " << m.timeline.memory[0].peak << " B";
  }
}

// Attention whose fp32 scores exceed the backend's 1 GiB cap runs in row passes: at sequence
// 32,768 one (batch, head) item holds 32768^2 x 4 B = 4 GiB of scores, so each item runs as four
// passes of 8,192 rows. Every task must finish (a softmax that read past its scores would fault),
// and, since the passes do each item's whole work, the forward attention takes at least its
// causal FLOPs at the bf16 datasheet peak.
TEST(CudaExecutor, LongSequenceAttentionRunsInRowPasses) {
  REQUIRE_GPU(1);
  const auto s = scenario::load_scenario(source_dir() + "/tests/data/gpu/long-seq-attention.yaml");
  const auto predicted = driver::simulate(s, {false, false, driver::RankMode::all});
  exec::CudaOptions o;
  o.warmup = 0;
  o.steps = 1;
  const exec::Measured m = exec::run_cuda(predicted.step.graph, o);
  const auto& g = predicted.step.graph;
  double attention_fwd_s = 0;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    EXPECT_GE(m.timeline.tasks[t].end, m.timeline.tasks[t].start) << g.task_name(t);
    if (g.task(t).kind == ir::TaskKind::compute &&
        g.compute(g.task(t)).op == ir::OpClass::attention &&
        g.task(t).phase == ir::Phase::forward) {
      attention_fwd_s += (m.timeline.tasks[t].end - m.timeline.tasks[t].start).seconds();
    }
  }
  // 2 layers x 8 heads x 2 x 32768^2 x 64 = 2.2e12 FLOPs; at 989.4e12 FLOP/s, 2.22 ms.
  EXPECT_GT(attention_fwd_s, 2.0 * 8 * 2.0 * 32768.0 * 32768.0 * 64 / 989.4e12);
}

// GPT-2 small's one-GPU step, run once with `faults`; the error message, or "" if none.
std::string failure_of(const exec::Faults& faults) {
  const auto s = load("gpt2-small-1xh100.yaml");
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {false});
  exec::CudaOptions o;
  o.warmup = 0;
  o.steps = 1;
  o.faults = faults;
  try {
    exec::run_cuda(step.graph, o);
  } catch (const exec::ExecutionError& e) {
    return e.what();
  }
  return "";
}

// A kernel fault is sticky (every later CUDA call reports it): the backend blames the injected
// task by name, as the cpu backend words it. The fault ruins this process's CUDA context, so
// ctest runs each test in a process of its own (gtest_discover_tests).
TEST(CudaExecutor, AFailingKernelNamesItsTask) {
  REQUIRE_GPU(1);
  exec::Faults f;
  f.failing_task = "L0.attn.qkv.fwd";
  const std::string msg = failure_of(f);
  EXPECT_NE(msg.find("task 'L0.attn.qkv.fwd' (compute) on rank 0, stream compute: kernel failed "
                     "(injected failure): CUDA error"),
            std::string::npos)
      << "the injected kernel failure went unnoticed or was blamed elsewhere: " << msg;
}

TEST(CudaExecutor, AnImpossibleAllocationSaysWhatWasAlive) {
  REQUIRE_GPU(1);
  exec::Faults f;
  // 256 MiB: GPT-2 small's fp32 parameters alone are 124.4M x 4 B = 475 MiB, so the very first
  // allocation (alloc.parameters, nothing alive yet) is refused.
  f.memory_limit = 256 << 20;
  const std::string msg = failure_of(f);
  EXPECT_NE(
      msg.find(
          "task 'alloc.parameters' (memory) on rank 0, stream compute: out of memory: asked for"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("with 0.00 MiB alive (nothing): over the 256.00 MiB limit"), std::string::npos)
      << msg;
}

// The launcher path without a launcher: the cuda backend refuses a graph with more ranks than
// GPUs, saying one GPU cannot host two NCCL ranks. Needs no GPU at all (0 < 2 as well as 1 < 2).
TEST(CudaExecutor, TwoRanksOnOneGpuAreRefusedWithTheReason) {
  if (!exec::cuda_backend_built()) GTEST_SKIP() << "this build has no cuda backend";
  std::string why;
  if (exec::cuda_device_count(&why) >= 2) GTEST_SKIP() << "this machine has 2 GPUs or more";
  const auto s = load("cpu-mlp-2rank-ddp.yaml");
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {false});
  try {
    exec::run_cuda(step.graph, exec::CudaOptions{});
    ADD_FAILURE() << "a 2-rank graph ran on fewer than 2 GPUs";
  } catch (const exec::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("the cuda backend needs 2 GPUs on this machine (one per "
                                         "rank: one GPU cannot host two NCCL ranks), found"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cs
