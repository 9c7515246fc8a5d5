#include "workflows/execution.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation.h"
#include "driver/simulation_report.h"
#include "executor/cuda_backend.h"
#include "executor/executor.h"
#include "executor/launch_env.h"
#include "scenarios/profile_io.h"
#include "sim/chrome_trace.h"
#include "validate/calibration.h"
#include "validate/measured.h"

namespace cs::workflows {
namespace {

// This program's path: the cpu backend starts one copy of it per rank.
std::string self_path() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw UserError("cannot find this program's path to start the ranks");
  self[len] = '\0';
  return self;
}

// The scenario's full task graph (every rank: the executor runs them all).
strategy::StepGraph full_graph(const scenario::Scenario& s) {
  return strategy::build_training_step(s.model, s.layout, s.training, {false});
}

// How the cpu backend starts a scenario's ranks: this program, re-run per rank on the same file.
exec::LaunchOptions scenario_launch(const std::string& scenario_path, int warmup, int steps) {
  exec::LaunchOptions o;
  o.program = self_path();
  o.args = {scenario_path};
  o.warmup = warmup;
  o.steps = steps;
  return o;
}

// A measurement as `validate` reads it (`execute --timeline`), with the shown step's timeline.
validate::MeasuredRun measured_run(const exec::Measured& m, sim::Timeline timeline) {
  validate::MeasuredRun run{
      m.device, {}, m.median_step.seconds(), m.fastest_step.seconds(), std::move(timeline)};
  for (SimTime t : m.step_times) run.step_times_s.push_back(t.seconds());
  return run;
}

// Fault injection that matches nothing would run a clean step and look like a passing test.
void check_faults(const exec::Faults& faults, const ir::TaskGraph& graph) {
  const auto ranks = static_cast<int64_t>(graph.ranks());
  if (faults.failing_rank >= ranks) {
    throw UserError("--inject-rank " + std::to_string(faults.failing_rank) +
                    ": the scenario has ranks 0 to " + std::to_string(ranks - 1));
  }
  if (faults.failing_rank >= 0 && faults.failing_task.empty())
    throw UserError("--inject-rank needs --inject-kernel-failure TASK");
  if (!faults.failing_task.empty()) {
    bool found = false;
    for (ir::TaskId t = 0; t < graph.size() && !found; ++t)
      found = graph.task_name(t) == faults.failing_task;
    if (!found)
      throw UserError("--inject-kernel-failure '" + faults.failing_task +
                      "': no task of that name in the step graph");
  }
}

exec::CudaOptions cuda_options(const ExecuteRequest& p) {
  exec::CudaOptions co;
  co.warmup = p.warmup;
  co.steps = p.steps;
  co.timeout = std::chrono::milliseconds(p.timeout_ms);
  co.faults = p.faults;
  return co;
}

// Under mpirun / srun: this process runs one rank; rank 0 gets the job's measurement, the others
// nothing.
std::optional<exec::Measured> run_launched(const ExecuteRequest& p, const ir::TaskGraph& graph,
                                           const exec::LaunchEnv& env) {
  const int ranks = static_cast<int>(graph.ranks());
  if (ranks != env.world) {
    throw UserError(
        "the scenario has " + std::to_string(ranks) + " ranks but " +
        std::string(exec::to_string(env.kind)) + " started " + std::to_string(env.world) +
        " processes; start one process per rank (e.g. mpirun -np " + std::to_string(ranks) + ")");
  }
  const std::string dir = exec::rendezvous_dir(env, p.rendezvous, exec::process_env());
  std::optional<exec::Measured> merged;
  if (p.backend == "cuda") {
    merged =
        exec::run_cuda_launched(graph, cuda_options(p), {env.rank, env.world, env.local_rank, dir});
  } else {
    exec::RankOptions o;
    o.rank = env.rank;
    o.dir = dir;
    o.warmup = p.warmup;
    o.steps = p.steps;
    o.timeout = std::chrono::milliseconds(p.timeout_ms);
    o.faults = p.faults;
    o.barrier_clock = true;
    const auto host = exec::process_env()("CLUSTERSIM_GLOO_HOST");
    char name[256] = {};
    o.gloo_host = host ? *host
                  : env.single_node() || gethostname(name, sizeof name - 1) != 0
                      ? "127.0.0.1"
                      : std::string(name);
    merged = exec::run_launched_cpu(graph, o);
  }
  if (merged)
    merged->device += " (started by " + std::string(exec::to_string(env.kind)) + ", " +
                      std::to_string(env.world) + " ranks)";
  return merged;
}

// Runs the step: under a launcher, on the GPUs of this machine, or one forked process per rank.
// Nothing for the ranks other than 0 of a launched job (rank 0 reports for the job).
std::optional<exec::Measured> run_step(const ExecuteRequest& p, const ir::TaskGraph& graph) {
  const exec::LaunchEnv env = exec::detect_launch_env(p.launcher, exec::process_env());
  if (env.kind != exec::LauncherKind::none && env.world > 1) return run_launched(p, graph, env);
  if (p.backend == "cuda") {
    std::string why;
    if (exec::cuda_device_count(&why) == 0) throw UserError("--backend cuda: " + why);
    return exec::run_cuda(graph, cuda_options(p));
  }
  exec::LaunchOptions o = scenario_launch(p.scenario, p.warmup, p.steps);
  o.timeout = std::chrono::milliseconds(p.timeout_ms);
  o.faults = p.faults;
  return exec::launch(graph, o);
}

// The measured step as the simulate report has it.
void set_report(driver::SimulationResult& r, const exec::Measured& m) {
  sim::WorkloadFacts facts;
  facts.tokens_per_step = r.step.tokens_per_step;
  facts.samples_per_step = r.step.samples_per_step;
  facts.model_flops_per_step = r.step.model_flops_per_step;
  facts.stage_of_rank = r.step.stage_of_rank;
  r.report = sim::make_report(r.step.graph, r.timeline, facts);
  // The step time is the median period across steps (executor.h), not the shown step's span.
  sim::set_step_time(r.report, m.median_step);
}

// What was measured, before the report: the step times and, for pure data parallelism on the cpu
// backend, whether the ranks ended with the same parameters.
void print_measured(std::ostream& out, const ExecuteRequest& p, const scenario::Scenario& s,
                    const exec::Measured& m) {
  out << "measured    " << m.device << "; " << p.warmup << " warm-up + " << p.steps
      << " measured steps\n";
  out << "step times ";
  for (SimTime t : m.step_times) out << " " << format_time(t);
  out << " (median " << format_time(m.median_step) << ", fastest " << format_time(m.fastest_step)
      << "; the report below is " << (p.backend == "cpu" ? "the median" : "the last") << " step)\n";
  bool identical = true;
  for (const auto& h : m.parameter_hashes) identical = identical && h == m.parameter_hashes[0];
  if (p.backend == "cpu" && m.parameter_hashes.size() > 1 && s.layout.dp > 1 && s.layout.tp == 1 &&
      s.layout.pp == 1) {
    out << "parameters  " << (identical ? "bit-identical on every rank" : "DIFFER between ranks")
        << " after the last step (hash " << m.parameter_hashes[0] << "); gradients "
        << (m.gradients_differed ? "differed" : "did not differ") << " before reduction\n";
  }
  out << "\n";
}

// `execute --timeline`: validate/ writes the run; the version and kind go in front (read_measured
// ignores them).
void write_timeline(const std::string& path, const exec::Measured& m, const sim::Timeline& t) {
  OutputFile file(path);
  std::ostream& f = file.stream();
  std::ostringstream run;
  validate::write_measured(run, measured_run(m, t));
  nlohmann::ordered_json j = {{"schema_version", reports::kSchemaVersion}, {"kind", "measured"}};
  const nlohmann::ordered_json written = nlohmann::ordered_json::parse(run.str());
  for (const auto& [k, v] : written.items()) j[k] = v;
  f << j.dump() << "\n";
  file.commit();
}

}  // namespace

int execute_rank(const ExecuteRequest& p) {
  strategy::StepGraph step;
  if (!p.calibration.empty())
    step.graph = validate::calibration_graph(p.calibration, p.calibration_ranks);
  else
    step = full_graph(scenario::load_scenario(p.scenario));
  exec::RankOptions o;
  o.rank = p.rank;
  o.dir = p.dir;
  o.warmup = p.warmup;
  o.steps = p.steps;
  o.timeout = std::chrono::milliseconds(p.timeout_ms);
  o.faults = p.faults;
  return exec::run_forked_rank(step.graph, o);
}

int execute(const ExecuteRequest& p, std::ostream& out, std::ostream& err) {
  const scenario::Scenario s = scenario::load_scenario(p.scenario);
  driver::SimulationResult r;
  r.scenario = s;
  r.step = full_graph(s);
  check_faults(p.faults, r.step.graph);
  std::optional<exec::Measured> measured;
  try {
    measured = run_step(p, r.step.graph);
  } catch (const exec::ExecutionError& e) {
    err << "execution failed:\n" << e.what() << "\n";
    return exec::kExitExecutionFailed;
  }
  if (!measured) return 0;
  exec::Measured& m = *measured;
  r.timeline = std::move(m.timeline);
  set_report(r, m);
  print_measured(out, p, s, m);
  driver::print_report(out, r);
  if (!p.json.empty()) {
    OutputFile file(p.json);
    std::ostream& f = file.stream();
    driver::write_report_json(f, r);
    file.commit();
  }
  if (!p.trace.empty()) {
    OutputFile file(p.trace);
    std::ostream& f = file.stream();
    sim::write_chrome_trace(f, r.step.graph, r.timeline);
    file.commit();
  }
  if (!p.timeline.empty()) write_timeline(p.timeline, m, r.timeline);
  return 0;
}

validate::MeasuredRun execute_on_cpu(const std::string& scenario_path, int warmup, int steps) {
  const strategy::StepGraph step = full_graph(scenario::load_scenario(scenario_path));
  try {
    exec::Measured m = exec::launch(step.graph, scenario_launch(scenario_path, warmup, steps));
    return measured_run(m, std::move(m.timeline));
  } catch (const exec::ExecutionError& e) {
    throw UserError("executing " + scenario_path + " failed:\n" + e.what());
  }
}

// Every task's start and end of a measured suite run, as the calibration fit reads them.
namespace {
validate::TaskDurations durations(const ir::TaskGraph& graph, const exec::Measured& m) {
  validate::TaskDurations d;
  d.graph = &graph;
  for (const auto& t : m.timeline.tasks) {
    d.start.push_back(t.start.seconds());
    d.end.push_back(t.end.seconds());
  }
  return d;
}
}  // namespace

// Runs a calibration suite through the cpu backend: every task's start and end, one step.
validate::TaskDurations run_suite(const std::string& suite, const ir::TaskGraph& graph) {
  exec::LaunchOptions o;
  o.program = self_path();
  o.args = {"--calibration", suite, "--calibration-ranks", std::to_string(graph.ranks())};
  // No warm-up step: each benchmark repeats, and the median drops a cold first repeat.
  o.warmup = 0;
  o.steps = 1;
  exec::Measured m;
  try {
    m = exec::launch(graph, o);
  } catch (const exec::ExecutionError& e) {
    throw UserError("calibration suite '" + suite + "' failed:\n" + e.what());
  }
  return durations(graph, m);
}

cost::Profile calibrate_cuda(const std::string& raw, std::ostream& out) {
  std::string why;
  const int gpus = exec::cuda_device_count(&why);
  if (gpus == 0) throw UserError("calibrate --backend cuda: " + why);
  const std::string env = exec::cuda_environment(&why);
  const std::string gpu = env.substr(0, env.find(" (sm_"));
  const std::string preset = validate::device_preset_for_gpu(gpu);
  const bool fp8 = exec::cuda_has_fp8();
  const validate::CalibrationPlan plan = validate::cuda_plan(fp8);
  out << "calibrate   cuda backend on " << env << "\n";
  out << "            device preset " << preset << "; GEMM dtypes";
  for (ir::DType d : plan.gemm_dtypes) out << " " << ir::to_string(d);
  out << (fp8 ? "" : " (no FP8 on this GPU)") << "\n" << std::flush;
  exec::CudaOptions o;
  o.warmup = 0;  // each benchmark repeats; the median drops a cold first repeat
  o.steps = 1;
  o.timeout = std::chrono::milliseconds(600000);
  auto run = [&](const char* suite, const ir::TaskGraph& g) {
    const auto t0 = std::chrono::steady_clock::now();
    out << "  running " << suite << " suite (" << g.size() / g.ranks() << " tasks per GPU on "
        << g.ranks() << " GPU" << (g.ranks() > 1 ? "s" : "") << ")..." << std::flush;
    try {
      exec::Measured m = exec::run_cuda(g, o);
      out << " "
          << std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - t0)
                     .count() /
                 1000.0
          << " s\n"
          << std::flush;
      return m;
    } catch (const exec::ExecutionError& e) {
      throw UserError(std::string("calibration suite '") + suite + "' failed on the GPU:\n" +
                      e.what());
    }
  };
  const ir::TaskGraph compute = validate::calibration_graph("compute", 1, plan);
  const ir::TaskGraph load = validate::calibration_graph("interference", 1, plan);
  const exec::Measured mc = run("compute", compute);
  const exec::Measured mi = run("interference", load);
  validate::Measurements m;
  m.compute = durations(compute, mc);
  const validate::TaskDurations di = durations(load, mi);
  m.interference = &di;
  // The all-reduce line needs two GPUs or more: one GPU cannot host two NCCL ranks.
  std::optional<ir::TaskGraph> coll;
  std::optional<validate::TaskDurations> dk;
  if (gpus >= 2) {
    coll.emplace(validate::calibration_graph("collectives", gpus, plan));
    const exec::Measured mk = run("collectives", *coll);
    dk = durations(*coll, mk);
    m.collectives = &*dk;
  } else {
    out << "  collectives suite skipped: one GPU cannot host two NCCL ranks (collective costs stay "
           "the topology model's)\n";
  }
  if (!raw.empty()) {
    std::vector<validate::NamedDurations> suites{{"compute", &m.compute}, {"interference", &di}};
    if (m.collectives) suites.push_back({"collectives", m.collectives});
    OutputFile file(raw);
    std::ostream& f = file.stream();
    validate::write_measurements_csv(f, suites);
    file.commit();
    out << "  wrote every measurement to " << raw << "\n";
  }
  cost::Profile p = validate::fit_profile(m, "cuda: " + env, plan, &cost::find_device(preset));
  // The executor's attention is not a framework's fused kernel: its curve went to
  // executor_kernels, and a framework's attention keeps the shipped profile's published curve.
  const std::string shipped = driver::default_profile_path(preset);
  p.sources.push_back(
      "GEMM tables (bf16, fp16, tf32, fp8), misaligned-GEMM share, memory bandwidth and curves, "
      "launch gap, interference, executor_kernels: measured by `clustersim calibrate --backend "
      "cuda` on " +
      env + ", " + p.date);
  if (!shipped.empty()) {
    validate::keep_published_attention(p, scenario::load_profile(shipped));
    out << "  framework attention       kept from " << shipped
        << " (the executor's own is in executor_kernels)\n";
  } else {
    out << "  framework attention       no shipped profile for " << preset
        << ": the datasheet default (" << p.compute.attention << " of peak) stands\n";
  }
  char line[200];
  for (ir::DType d : plan.gemm_dtypes) {
    double best = 0;
    const auto& table =
        d == plan.gemm_dtypes.at(0) ? p.compute.gemm_table : p.compute.gemm_tables.at(d);
    for (const auto& g : table.points()) best = std::max(best, g.efficiency);
    std::snprintf(
        line, sizeof line, "  GEMM best (%s)%*s%9.1f TFLOP/s = %.3f of the datasheet's %.0f\n",
        std::string(ir::to_string(d)).c_str(), static_cast<int>(12 - ir::to_string(d).size()), "",
        best * p.device.peak(d).value * 1e-12, best, p.device.peak(d).value * 1e-12);
    out << line;
  }
  return p;
}

}  // namespace cs::workflows
