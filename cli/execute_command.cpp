#include "cli/execute_command.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/flags.h"
#include "cli/options.h"
#include "cli/report_output.h"
#include "common/error.h"
#include "driver/simulation.h"
#include "executor/cuda_backend.h"
#include "executor/executor.h"
#include "executor/launch_env.h"
#include "scenarios/profile_io.h"
#include "sim/chrome_trace.h"
#include "validate/calibration.h"
#include "validate/measured.h"

namespace cs::cli {
namespace {

constexpr const char* kHelp =
    "usage: clustersim execute SCENARIO.yaml [--backend cpu|cuda] [--warmup W] [--steps N] "
    "[--trace FILE]\n"
    "                          [--json FILE] [--timeline FILE] [--timeout SECONDS]\n"
    "                          [--launcher auto|mpi|pmi|slurm|none] [--rendezvous DIR]\n"
    "  Runs the scenario's task graph with real kernels and collectives and prints the simulate\n"
    "  report from the measurements (the last measured step; step time is the median of N).\n"
    "  --backend cpu      one process per rank, OpenBLAS GEMMs, Gloo collectives over loopback "
    "(default)\n"
    "  --backend cuda     one GPU per rank on this machine, cuBLASLt and NCCL (untested on "
    "hardware so far)\n"
    "  --warmup W         unmeasured steps first (default 1)\n"
    "  --steps N          measured steps (default 3)\n"
    "  --timeout SECONDS  a collective or transfer that waits longer fails the run (default 30)\n"
    "  --timeline FILE    the measured timeline (every task's start and end) for `validate "
    "--measured`\n"
    "  --launcher L       under mpirun / srun every process runs one rank: auto (default) detects "
    "the\n"
    "                     launcher from OMPI_COMM_WORLD_*, PMI_* or SLURM_* when it started more "
    "than\n"
    "                     one process; rank 0 prints the report. none: start the ranks here "
    "(fork).\n"
    "                     e.g. mpirun -np 4 clustersim execute SCENARIO.yaml; srun -n 16 "
    "clustersim execute ...\n"
    "  --rendezvous DIR   where the ranks meet (Gloo's file store, the NCCL unique id, result "
    "files);\n"
    "                     default $CLUSTERSIM_RENDEZVOUS or /tmp/clustersim-<job id> (one node "
    "only:\n"
    "                     several nodes need a shared directory). The Gloo TCP device binds to\n"
    "                     $CLUSTERSIM_GLOO_HOST, else 127.0.0.1 on one node and this host's name "
    "on several.\n"
    "  Testing the error paths: --inject-kernel-failure TASK [--inject-rank R], --memory-limit "
    "BYTES,\n"
    "  --skip-collective TASK --skip-rank R (that rank never joins, its peers time out).\n"
    "  Exit status 5 when execution fails, naming the task, rank and stream.\n";

struct Parsed {
  std::vector<std::string> files;
  std::string scenario, backend = "cpu", trace, json, calibration, timeline, launcher = "auto",
                        rendezvous;
  int warmup = 1, steps = 3, rank = -1, calibration_ranks = 2;
  int64_t timeout_ms = 30000;
  std::string dir;
  exec::Faults faults;
};

// The options of execute (people) and execute-rank (the processes execute starts, rank_mode).
std::shared_ptr<Parsed> add_options(CLI::App& sub, bool rank_mode) {
  auto p = std::make_shared<Parsed>();
  sub.add_option("SCENARIO", p->files, "the scenario file (YAML)")->type_name("FILE");
  text_option(
      sub, "--backend",
      [p](const std::string& v) {
        check_choice("--backend", v, {"cpu", "cuda"});
        p->backend = v;
      },
      "cpu: one process per rank, OpenBLAS GEMMs, Gloo collectives over loopback (default); cuda: "
      "one GPU per rank on this machine, "
      "cuBLASLt and NCCL",
      "cpu|cuda");
  text_option(
      sub, "--warmup", [p](const std::string& v) { p->warmup = int_flag("--warmup", v, 0); },
      "unmeasured steps first (default 1)", "W");
  text_option(
      sub, "--steps", [p](const std::string& v) { p->steps = int_flag("--steps", v, 1); },
      "measured steps (default 3)", "N");
  text_option(sub, "--trace", p->trace, "the measured step as a Chrome trace");
  text_option(sub, "--json", p->json, "the report as JSON (docs/schemas/report.schema.json)");
  text_option(sub, "--timeline", p->timeline,
              "the measured timeline (every task's start and end) for `validate --measured`");
  text_option(
      sub, "--timeout",
      [p](const std::string& v) { p->timeout_ms = 1000LL * int_flag("--timeout", v, 1); },
      "a collective or transfer that waits longer fails the run (default 30)", "SECONDS");
  text_option(
      sub, "--timeout-ms",
      [p](const std::string& v) { p->timeout_ms = int_flag("--timeout-ms", v, 1); },
      "the same in milliseconds", "MS");
  text_option(sub, "--inject-kernel-failure", p->faults.failing_task,
              "testing: this task's kernel fails", "TASK");
  text_option(
      sub, "--inject-rank",
      [p](const std::string& v) { p->faults.failing_rank = int_flag("--inject-rank", v, -1); },
      "testing: only on this rank", "R");
  text_option(
      sub, "--memory-limit",
      [p](const std::string& v) {
        try {
          p->faults.memory_limit = parse_bytes(v).count;
        } catch (const UnitError& e) {
          throw UserError(std::string("--memory-limit: ") + e.what());
        }
      },
      "testing: allocations beyond this fail", "BYTES");
  text_option(sub, "--skip-collective", p->faults.skipped_collective,
              "testing: a rank never joins this collective (its peers time out)", "TASK");
  text_option(
      sub, "--skip-rank",
      [p](const std::string& v) { p->faults.skipping_rank = int_flag("--skip-rank", v, 0); },
      "testing: the rank that skips", "R");
  if (rank_mode) {
    text_option(
        sub, "--rank", [p](const std::string& v) { p->rank = int_flag("--rank", v, 0); },
        "this process's rank", "R");
    text_option(sub, "--dir", p->dir, "the rendezvous directory", "DIR");
    text_option(sub, "--calibration", p->calibration, "a calibration suite instead of a scenario",
                "SUITE");
    text_option(
        sub, "--calibration-ranks",
        [p](const std::string& v) { p->calibration_ranks = int_flag("--calibration-ranks", v, 1); },
        "the suite's ranks", "N");
  } else {
    std::vector<std::string> launchers{"auto"};
    for (auto k : every_value<exec::LauncherKind>()) launchers.emplace_back(exec::to_string(k));
    text_option(
        sub, "--launcher",
        [p, launchers](const std::string& v) {
          check_choice("--launcher", v, launchers);
          p->launcher = v;
        },
        "under mpirun / srun every process runs one rank: auto (default) detects the launcher from "
        "OMPI_COMM_WORLD_*, PMI_* or "
        "SLURM_* when it started more than one process; rank 0 prints the report. none: start the "
        "ranks here (fork). "
        "e.g. mpirun -np 4 clustersim execute SCENARIO.yaml",
        choice_type(launchers));
    text_option(sub, "--rendezvous", p->rendezvous,
                "where the ranks meet (Gloo's file store, the NCCL unique id, result files); "
                "default $CLUSTERSIM_RENDEZVOUS or "
                "/tmp/clustersim-<job id> (one node only: several nodes need a shared directory)",
                "DIR");
  }
  return p;
}

// What needs every option read.
void check(Parsed& p) {
  p.scenario = one_file(p.files, "execute");
  if (p.scenario.empty() && p.calibration.empty())
    throw UserError("execute needs a scenario file (clustersim execute --help)");
}

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

}  // namespace

namespace {

int execute_rank(const Parsed& p) {
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
  return exec::run_cpu_rank(step.graph, o);
}

int execute(const Parsed& p, std::ostream& out, std::ostream& err) {
  const scenario::Scenario s = scenario::load_scenario(p.scenario);
  driver::SimulationResult r;
  r.scenario = s;
  r.step = full_graph(s);
  // Fault injection that matches nothing would run a clean step and look like a passing test.
  const auto ranks = static_cast<int64_t>(r.step.graph.ranks());
  if (p.faults.failing_rank >= ranks) {
    throw UserError("--inject-rank " + std::to_string(p.faults.failing_rank) +
                    ": the scenario has ranks 0 to " + std::to_string(ranks - 1));
  }
  if (p.faults.failing_rank >= 0 && p.faults.failing_task.empty())
    throw UserError("--inject-rank needs --inject-kernel-failure TASK");
  if (!p.faults.failing_task.empty()) {
    bool found = false;
    for (ir::TaskId t = 0; t < r.step.graph.size() && !found; ++t)
      found = r.step.graph.task_name(t) == p.faults.failing_task;
    if (!found)
      throw UserError("--inject-kernel-failure '" + p.faults.failing_task +
                      "': no task of that name in the step graph");
  }
  const exec::LaunchEnv env = exec::detect_launch_env(p.launcher, exec::process_env());
  const bool launched = env.kind != exec::LauncherKind::none && env.world > 1;
  exec::Measured m;
  try {
    if (launched) {
      const int ranks = static_cast<int>(r.step.graph.ranks());
      if (ranks != env.world) {
        throw UserError("the scenario has " + std::to_string(ranks) + " ranks but " +
                        std::string(exec::to_string(env.kind)) + " started " +
                        std::to_string(env.world) +
                        " processes; start one process per rank (e.g. mpirun -np " +
                        std::to_string(ranks) + ")");
      }
      const std::string dir = exec::rendezvous_dir(env, p.rendezvous, exec::process_env());
      std::optional<exec::Measured> merged;
      if (p.backend == "cuda") {
        exec::CudaOptions co;
        co.warmup = p.warmup;
        co.steps = p.steps;
        co.timeout = std::chrono::milliseconds(p.timeout_ms);
        co.faults = p.faults;
        merged =
            exec::run_cuda_launched(r.step.graph, co, {env.rank, env.world, env.local_rank, dir});
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
        merged = exec::run_launched_cpu(r.step.graph, o);
      }
      if (!merged) return 0;  // ranks other than 0: rank 0 reports for the job
      m = std::move(*merged);
      m.device += " (started by " + std::string(exec::to_string(env.kind)) + ", " +
                  std::to_string(env.world) + " ranks)";
    } else if (p.backend == "cuda") {
      std::string why;
      if (exec::cuda_device_count(&why) == 0) throw UserError("--backend cuda: " + why);
      exec::CudaOptions co;
      co.warmup = p.warmup;
      co.steps = p.steps;
      co.timeout = std::chrono::milliseconds(p.timeout_ms);
      co.faults = p.faults;
      m = exec::run_cuda(r.step.graph, co);
    } else {
      exec::LaunchOptions o = scenario_launch(p.scenario, p.warmup, p.steps);
      o.timeout = std::chrono::milliseconds(p.timeout_ms);
      o.faults = p.faults;
      m = exec::launch(r.step.graph, o);
    }
  } catch (const exec::ExecutionError& e) {
    err << "execution failed:\n" << e.what() << "\n";
    return exec::kExitExecutionFailed;
  }
  r.timeline = std::move(m.timeline);
  sim::WorkloadFacts facts;
  facts.tokens_per_step = r.step.tokens_per_step;
  facts.samples_per_step = r.step.samples_per_step;
  facts.model_flops_per_step = r.step.model_flops_per_step;
  facts.stage_of_rank = r.step.stage_of_rank;
  r.report = sim::make_report(r.step.graph, r.timeline, facts);
  // The step time is the median period across steps (executor.h), not the shown step's span.
  sim::set_step_time(r.report, m.median_step);
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
  print_report(out, r);
  if (!p.json.empty()) {
    std::ofstream f(p.json);
    if (!f) throw UserError("cannot write '" + p.json + "'");
    write_report_json(f, r);
  }
  if (!p.trace.empty()) {
    std::ofstream f(p.trace);
    if (!f) throw UserError("cannot write '" + p.trace + "'");
    sim::write_chrome_trace(f, r.step.graph, r.timeline);
  }
  if (!p.timeline.empty()) {
    std::ofstream f(p.timeline);
    if (!f) throw UserError("cannot write '" + p.timeline + "'");
    // validate/ writes the run; the version and kind go in front (read_measured ignores them).
    std::ostringstream run;
    validate::write_measured(run, measured_run(m, r.timeline));
    nlohmann::ordered_json j = {{"schema_version", kSchemaVersion}, {"kind", "measured"}};
    const nlohmann::ordered_json written = nlohmann::ordered_json::parse(run.str());
    for (const auto& [k, v] : written.items()) j[k] = v;
    f << j.dump() << "\n";
  }
  return 0;
}

}  // namespace

void add_execute_commands(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "execute",
      "run the same task graph with real kernels and collectives, report the measured step");
  auto p = add_options(*sub, false);
  sub->footer(kHelp);
  sub->callback([p, &ctx] {
    check(*p);
    ctx.status = execute(*p, ctx.out, ctx.err);
  });
  // What each process `execute` starts runs: not for people, hidden from --help.
  CLI::App* rank = app.add_subcommand("execute-rank", "one rank of an execute run")->group("");
  auto r = add_options(*rank, true);
  rank->callback([r, &ctx] {
    check(*r);
    ctx.status = execute_rank(*r);
  });
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
static validate::TaskDurations durations(const ir::TaskGraph& graph, const exec::Measured& m) {
  validate::TaskDurations d;
  d.graph = &graph;
  for (const auto& t : m.timeline.tasks) {
    d.start.push_back(t.start.seconds());
    d.end.push_back(t.end.seconds());
  }
  return d;
}

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
    std::ofstream f(raw);
    if (!f) throw UserError("cannot write '" + raw + "'");
    f << "suite,benchmark,rank,start_s,end_s\n";
    f.precision(12);  // microseconds at a minute into a suite (the default 6 digits kept 0.1 ms)
    auto dump = [&](const char* suite, const validate::TaskDurations& d) {
      for (ir::TaskId t = 0; t < d.graph->size(); ++t) {
        if (d.graph->task(t).kind == ir::TaskKind::memory) continue;
        f << suite << "," << d.graph->task_name(t) << "," << d.graph->task(t).rank << ","
          << d.start[t] << "," << d.end[t] << "\n";
      }
    };
    dump("compute", m.compute);
    dump("interference", di);
    if (m.collectives) dump("collectives", *m.collectives);
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

}  // namespace cs::cli
