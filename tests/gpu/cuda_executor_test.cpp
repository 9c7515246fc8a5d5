// The cuda executor on a real GPU. Every test skips, saying why, where no device is present.
#include <gtest/gtest.h>

#include "driver/simulation.h"
#include "executor/cuda_backend.h"

namespace cs {
namespace {

#define REQUIRE_GPU(n)                                                                        \
  do {                                                                                        \
    std::string why;                                                                          \
    const int have = exec::cuda_device_count(&why);                                           \
    if (have < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << have << ": " << why; \
  } while (0)

scenario::Scenario load(const std::string& name) {
  return scenario::load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name);
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
    for (ir::TaskId t = 0; t < g.size(); ++t) EXPECT_GE(m.timeline.tasks[t].end, m.timeline.tasks[t].start) << g.task_name(t);
    // The stream-ordered pool's high-water mark against the simulator's peak for the same graph.
    const double ratio = static_cast<double>(m.timeline.memory[0].peak) / static_cast<double>(predicted.report.peak_memory);
    EXPECT_NEAR(ratio, 1.0, 0.10) << name << ": measured " << m.timeline.memory[0].peak << " B";
  }
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

TEST(CudaExecutor, AFailingKernelNamesItsTask) {
  REQUIRE_GPU(1);
  exec::Faults f;
  f.failing_task = "L0.attn.qkv.fwd";
  const std::string msg = failure_of(f);
  EXPECT_NE(msg.find("rank 0: task '"), std::string::npos) << "the injected kernel failure went unnoticed: " << msg;
}

TEST(CudaExecutor, AnImpossibleAllocationSaysWhatWasAlive) {
  REQUIRE_GPU(1);
  exec::Faults f;
  f.memory_limit = 256 << 20;  // GPT-2 small's fp32 model state alone is ~1.9 GB
  const std::string msg = failure_of(f);
  EXPECT_NE(msg.find("out of memory: asked for"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cs
