// The cpu executor: real processes, OpenBLAS and Gloo running the scenario's own task graph.
#include "executor/executor.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "common/error.h"
#include "executor/launch_env.h"
#include "scenarios/scenario.h"
#include "strategies/training_step.h"
#include "test_paths.h"

namespace cs {
namespace {

std::string scenario_path(const std::string& name) {
  return cs::test_paths::source_dir() + "/scenarios/" + name;
}

struct Executed {
  strategy::StepGraph step;
  exec::Measured measured;
};

exec::LaunchOptions options_for(const std::string& scenario) {
  exec::LaunchOptions o;
  o.program = cs::test_paths::clustersim_binary();
  o.args = {scenario_path(scenario)};
  o.warmup = 1;
  o.steps = 2;
  o.timeout = std::chrono::milliseconds(20000);
  return o;
}

Executed execute(const std::string& scenario, exec::Faults faults = {}) {
  const auto s = scenario::load_scenario(scenario_path(scenario));
  Executed r;
  r.step = strategy::build_training_step(s.model, s.layout, s.training, {false});
  auto o = options_for(scenario);
  o.faults = faults;
  r.measured = exec::launch(r.step.graph, o);
  return r;
}

// Every task ran (the launcher refuses a run where a task is missing or reported twice, and marks
// unreported ones with a negative start), and on each (rank, stream) no task started before the
// previous one ended: CUDA-stream order.
void expect_every_task_once_in_stream_order(const Executed& r) {
  const auto& g = r.step.graph;
  const auto& tl = r.measured.timeline;
  ASSERT_EQ(tl.tasks.size(), g.size());
  std::vector<std::vector<ir::TaskId>> last(
      g.ranks(), std::vector<ir::TaskId>(g.stream_names().size(), UINT32_MAX));
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const auto& task = g.task(t);
    EXPECT_GE(tl.tasks[t].start, SimTime{}) << g.task_name(t) << " has no measurement";
    ir::TaskId& prev = last[task.rank][task.stream];
    if (prev != UINT32_MAX) {
      EXPECT_GE(tl.tasks[t].start, tl.tasks[prev].end)
          << g.task_name(prev) << " then " << g.task_name(t);
    }
    prev = t;
  }
}

TEST(CpuExecutor, MlpDdpRanksEndBitIdenticalBecauseTheCollectivesReduced) {
  const Executed r = execute("cpu-mlp-2rank-ddp.yaml");
  expect_every_task_once_in_stream_order(r);
  ASSERT_EQ(r.measured.parameter_hashes.size(), 2u);
  // Each rank adds its own gradient values (scaled by rank + 1) before every all-reduce: had the
  // all-reduce not averaged them, AdamW would have moved the two ranks' parameters differently.
  EXPECT_TRUE(r.measured.gradients_differed);
  EXPECT_EQ(r.measured.parameter_hashes[0], r.measured.parameter_hashes[1]);
  EXPECT_EQ(r.measured.step_times.size(), 2u);
}

TEST(CpuExecutor, SmallGptDdpAndPipelineRunEveryTaskInStreamOrder) {
  const Executed ddp = execute("cpu-gpt-tiny-2rank-ddp.yaml");
  expect_every_task_once_in_stream_order(ddp);
  EXPECT_TRUE(ddp.measured.gradients_differed);
  EXPECT_EQ(ddp.measured.parameter_hashes[0], ddp.measured.parameter_hashes[1]);
  const Executed pp = execute("cpu-gpt-tiny-2stage-pp.yaml");
  expect_every_task_once_in_stream_order(pp);
  // The measured memory follows the memory tasks, as the simulator's does. The model state is
  // alive all step, so at the peak it is each stage's own, exactly. GPT with hidden h = 256: a
  // layer holds ln_1, qkv, proj, ln_2, fc1, fc2 with biases = 12 h^2 + 13 h = 789,760
  // parameters. Stage 0: the embedding 2048 x 256 = 524,288, learned positions 128 x 256 =
  // 32,768 and layer 0: 1,346,816. Stage 1: layer 1, ln_f (2 h = 512) and the tied copy of the
  // embedding for the head (524,288): 1,314,560. fp32 training: 4 B weights, 4 B gradients,
  // 8 B for Adam's two moments, per parameter.
  ASSERT_EQ(pp.measured.timeline.memory.size(), 2u);
  const int64_t stage_params[2] = {1'346'816, 1'314'560};
  for (size_t r = 0; r < 2; ++r) {
    const auto& m = pp.measured.timeline.memory[r];
    const auto at = [&](ir::MemoryCategory c) { return m.at_peak[static_cast<size_t>(c)]; };
    EXPECT_EQ(at(ir::MemoryCategory::parameters), 4 * stage_params[r]) << "rank " << r;
    EXPECT_EQ(at(ir::MemoryCategory::gradients), 4 * stage_params[r]) << "rank " << r;
    EXPECT_EQ(at(ir::MemoryCategory::optimizer_state), 8 * stage_params[r]) << "rank " << r;
    // The peak comes inside the step, with activations alive beside the model state.
    EXPECT_GT(m.peak, 16 * stage_params[r]) << "rank " << r;
    EXPECT_GT(at(ir::MemoryCategory::activations), 0) << "rank " << r;
  }
}

// The error of a one-step run of `scenario` ("no error" when it succeeds), its ranks started as
// `program` (clustersim itself, or a wrapper that delays one).
std::string failure_of(const std::string& scenario, const exec::Faults& f,
                       std::chrono::milliseconds timeout,
                       const std::string& program = cs::test_paths::clustersim_binary()) {
  const auto s = scenario::load_scenario(scenario_path(scenario));
  const auto step = strategy::build_training_step(s.model, s.layout, s.training, {false});
  auto o = options_for(scenario);
  o.program = program;
  o.faults = f;
  o.timeout = timeout;
  o.warmup = 0;
  o.steps = 1;
  try {
    exec::launch(step.graph, o);
  } catch (const exec::ExecutionError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CpuExecutor, AFailingKernelNamesTheTaskRankAndStream) {
  exec::Faults f;
  f.failing_task = "L1.fc1.fwd";
  f.failing_rank = 1;
  const std::string msg = failure_of("cpu-mlp-2rank-ddp.yaml", f, std::chrono::milliseconds(3000));
  // Rank 1 fails first, in its forward pass; rank 0's all-reduce gives up after it: the cause
  // comes first, though rank 0 comes first in rank order.
  EXPECT_EQ(
      msg.rfind("rank 1: task 'L1.fc1.fwd' (compute) on rank 1, stream compute: kernel failed "
                "(injected failure)",
                0),
      0u)
      << msg;
}

TEST(CpuExecutor, AnImpossibleAllocationSaysWhoAskedAndWhatWasAlive) {
  exec::Faults f;
  f.memory_limit = 2 << 20;  // 2 MiB: the MLP's 1 MiB of parameters fit, its gradients do not
  const std::string msg = failure_of("cpu-mlp-2rank-ddp.yaml", f, std::chrono::milliseconds(3000));
  EXPECT_NE(msg.find("out of memory: task '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("alive of a 2.00 MiB limit: parameters 1.00 MiB"), std::string::npos) << msg;
}

TEST(CpuExecutor, ACollectiveWhosePeerNeverArrivesTimesOut) {
  exec::Faults f;
  f.skipped_collective = "dp.bucket0.all_reduce";
  f.skipping_rank = 1;
  const std::string msg = failure_of("cpu-mlp-2rank-ddp.yaml", f, std::chrono::milliseconds(2000));
  EXPECT_NE(
      msg.find("rank 0: task 'dp.bucket0.all_reduce' (collective) on rank 0, stream dp.grad: "
               "all_reduce of 1.00 MiB over 2 ranks gave up after 2.00 s waiting for its peers"),
      std::string::npos)
      << msg;
}

// Rank 1 starts 3 s after rank 0, under a 2-s collective timeout (on a loaded machine, or a fresh
// clone reading a 130 MB program from disk, a start took seconds): the timeout counts from the
// moment every rank has started, so the injected fault is still the cause, and reported first.
// Before, rank 0's first all-reduce gave up while rank 1 was starting: rank 0's time-out came
// first, and a clean run failed the same way.
TEST(CpuExecutor, ARankThatStartsLateIsNotAFailure) {
  setenv("CLUSTERSIM_REAL_BINARY", cs::test_paths::clustersim_binary().c_str(), 1);
  setenv("CLUSTERSIM_LATE_SECONDS", "3", 1);
  // The cpu backend plugin is looked for beside the program `execute` runs: here a wrapper script
  // in the source tree, so name the one built beside the real binary.
  const std::string binary = cs::test_paths::clustersim_binary();
  const std::string plugin = binary.substr(0, binary.rfind('/') + 1) + "libclustersim_cpu.so";
  setenv("CLUSTERSIM_CPU_PLUGIN", plugin.c_str(), 1);
  exec::Faults f;
  f.failing_task = "L1.fc1.fwd";
  f.failing_rank = 1;
  const std::string msg =
      failure_of("cpu-mlp-2rank-ddp.yaml", f, std::chrono::milliseconds(2000),
                 cs::test_paths::source_dir() + "/tests/data/executor/late_rank.sh");
  EXPECT_EQ(
      msg.rfind("rank 1: task 'L1.fc1.fwd' (compute) on rank 1, stream compute: kernel failed", 0),
      0u)
      << msg;
  unsetenv("CLUSTERSIM_CPU_PLUGIN");
}

// Launcher environments, handed in as maps: rank, size and local rank come from the launcher's
// own variables; the rendezvous directory from the job id on one node.
exec::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LaunchEnv, OpenMpiSlurmAndPmiVariablesNameTheRank) {
  const auto mpi =
      exec::detect_launch_env("auto", env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                              {"OMPI_COMM_WORLD_SIZE", "4"},
                                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                              {"PMIX_NAMESPACE", "prterun-host-123@1"}}));
  EXPECT_EQ(mpi.kind, exec::LauncherKind::mpi);
  EXPECT_EQ(mpi.rank, 3);
  EXPECT_EQ(mpi.world, 4);
  EXPECT_EQ(mpi.local_rank, 1);
  EXPECT_TRUE(mpi.single_node());  // 4 local ranks of 4
  // '@' is not a file-name character we keep: it becomes '_'.
  EXPECT_EQ(exec::rendezvous_dir(mpi, "", env_of({})), "/tmp/clustersim-mpi-prterun-host-123_1");
  const auto slurm = exec::detect_launch_env("auto", env_of({{"SLURM_PROCID", "5"},
                                                             {"SLURM_NTASKS", "16"},
                                                             {"SLURM_LOCALID", "5"},
                                                             {"SLURM_JOB_NUM_NODES", "2"},
                                                             {"SLURM_JOB_ID", "77"},
                                                             {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(slurm.kind, exec::LauncherKind::slurm);
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.world, 16);
  EXPECT_FALSE(slurm.single_node());
  // Two nodes cannot meet in /tmp: a shared directory must be named.
  EXPECT_THROW(exec::rendezvous_dir(slurm, "", env_of({})), UserError);
  EXPECT_EQ(exec::rendezvous_dir(slurm, "", env_of({{"CLUSTERSIM_RENDEZVOUS", "/shared/run1"}})),
            "/shared/run1");
  const auto pmi = exec::detect_launch_env(
      "pmi", env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}}));
  EXPECT_EQ(pmi.kind, exec::LauncherKind::pmi);
  EXPECT_EQ(pmi.world, 2);
  // No launcher variables: auto means "not launched", none is asked for explicitly.
  EXPECT_EQ(exec::detect_launch_env("auto", env_of({})).kind, exec::LauncherKind::none);
}

TEST(LaunchEnv, BadOrMissingVariablesAreNamed) {
  try {
    exec::detect_launch_env("auto", env_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}));
    ADD_FAILURE() << "rank 4 of 4 should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "launcher: SLURM_PROCID=4 is not below SLURM_NTASKS=4");
  }
  try {
    exec::detect_launch_env(
        "mpi", env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "two"}}));
    ADD_FAILURE() << "a size that is not a number should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "launcher: OMPI_COMM_WORLD_SIZE='two' is not a whole number of at least 1");
  }
  try {
    exec::detect_launch_env("slurm", env_of({}));
    ADD_FAILURE() << "--launcher slurm outside Slurm should be refused";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "launcher: SLURM_PROCID is not set");
  }
  EXPECT_THROW(exec::detect_launch_env("torchrun", env_of({})), UserError);
}

}  // namespace
}  // namespace cs
