#include "workflows/validation.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation.h"
#include "scenarios/profile_io.h"
#include "validate/calibration.h"
#include "validate/loop_statistics.h"
#include "validate/measured.h"
#include "validate/refit.h"
#include "validate/report_files.h"
#include "validate/suite.h"
#include "workflows/execution.h"
#include "workflows/kineto.h"
#include "workflows/recipe_check.h"

namespace cs::workflows {

void print_factors(std::ostream& out, const validate::Factors& f) {
  for (int i = 0; i < validate::kFactorCount; ++i) {
    const double scale = std::string(validate::Factors::unit(i)) == "us"   ? 1e6
                         : std::string(validate::Factors::unit(i)) == "ms" ? 1e3
                                                                           : 1.0;
    char line[160];
    std::snprintf(line, sizeof line, "  %-52s %9.3f %s\n", validate::Factors::name(i),
                  f.v[static_cast<size_t>(i)] * scale, validate::Factors::unit(i));
    out << line;
  }
}

void print_gemm_curve(std::ostream& out, double half) {
  char line[200];
  std::snprintf(line, sizeof line, "  %-52s %9.3f GFLOP (of %.1f-%.0f, on the fitting rows)\n",
                "GEMM curve half-rate point", half * 1e-9, validate::kGemmHalfCandidates[0] * 1e-9,
                validate::kGemmHalfCandidates[std::size(validate::kGemmHalfCandidates) - 1] * 1e-9);
  out << line;
}

namespace {

// `validate --suite --fit | --cross-validate`: the fits redone (validate/refit.h).
int refit_suite(const ValidationRequest& a, std::ostream& out) {
  validate::SuiteOptions o;
  o.use_profiles = !a.no_profile;
  const validate::SuiteSet set = validate::load_suite_set(a.suite, o);
  if (a.fit) validate::print_fits(out, set);
  if (a.fit && a.cross_validate) out << "\n";
  if (a.cross_validate) validate::print_cross_validation(out, set);
  return 0;
}

// `validate --suite`: every source of the suite, then the summary (or the markdown table alone).
int validate_suite(const ValidationRequest& a, std::ostream& out) {
  if (a.fit || a.cross_validate) return refit_suite(a, out);
  validate::SuiteOptions o;
  o.use_profiles = !a.no_profile;
  std::vector<validate::SourceResult> results;
  for (const std::string& f : validate::suite_files(a.suite)) {
    results.push_back(validate::run_suite_file(f, o));
    if (!a.markdown) validate::print_source(out, results.back(), a.rows);
  }
  if (a.markdown)
    validate::print_markdown(out, results);
  else
    validate::print_summary(out, results);
  if (!a.json.empty()) {
    OutputFile file(a.json);
    std::ostream& f = file.stream();
    validate::write_suite_json(f, a.suite, !a.no_profile, results);
    file.commit();
  }
  if (!a.html.empty()) {
    OutputFile file(a.html);
    std::ostream& f = file.stream();
    validate::write_suite_html(f, a.suite, !a.no_profile, a.generator, results);
    file.commit();
  }
  bool pass = true;
  for (const auto& r : results) pass = pass && r.pass;
  if (!pass && !a.markdown) out << "\nat least one source is beyond its bound\n";
  return pass ? 0 : 1;
}

}  // namespace

// Runs the three suites on the cpu backend (`calibrate --backend cpu`) and fits a Profile;
// progress goes to `out`, every measurement to `raw` when it is named.
cost::Profile calibrate_cpu(int ranks, const std::string& raw, std::ostream& out) {
  out << "calibrate   cpu backend, " << ranks << " ranks (one process each, all measured at once)\n"
      << std::flush;
  const ir::TaskGraph compute = validate::calibration_graph("compute", ranks);
  validate::Measurements m;
  out << "  running compute suite (" << compute.size() / static_cast<size_t>(ranks)
      << " kernels per rank)...\n"
      << std::flush;
  m.compute = run_suite("compute", compute);
  std::optional<ir::TaskGraph> coll, load;
  std::optional<validate::TaskDurations> dk, di;
  if (ranks >= 2) {
    coll.emplace(validate::calibration_graph("collectives", ranks));
    load.emplace(validate::calibration_graph("interference", ranks));
    out << "  running collectives and interference suites...\n" << std::flush;
    dk = run_suite("collectives", *coll);
    di = run_suite("interference", *load);
    m.collectives = &*dk;
    m.interference = &*di;
  }
  if (!raw.empty()) {
    std::vector<validate::NamedDurations> suites{{"compute", &m.compute}};
    if (m.collectives) suites.push_back({"collectives", m.collectives});
    if (m.interference) suites.push_back({"interference", m.interference});
    OutputFile file(raw);
    std::ostream& f = file.stream();
    validate::write_measurements_csv(f, suites);
    file.commit();
    out << "  wrote every measurement to " << raw << "\n";
  }
  return validate::fit_profile(
      m, "cpu: " + std::to_string(ranks) +
             " ranks, 1 core each, OpenBLAS sgemm (1 thread), Gloo TCP loopback");
}

namespace {

// `validate --loop --max-error` exit status when the machine's speed moved too much to judge.
constexpr int kExitUnsteady = 77;  // automake's "skipped", which ctest's SKIP_RETURN_CODE takes

// The machine's CPU seconds spent busy since boot (/proc/stat: user, nice, system, irq, softirq,
// steal), or a negative number where it cannot be read.
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return -1;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// CPU seconds this process and its finished children (the rank processes) have used.
double own_cpu_seconds() {
  double s = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    s += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return s;
}

// Runs `measure` and returns the share of the machine's CPUs other processes used meanwhile: its
// busy time less what this process and its ranks used, over wall time x cores (negative where
// /proc/stat cannot be read). A step measured beside other work times that work too: the ranks
// wait for CPUs the prediction gives them (a loaded 2-core machine measured 31% slow, steadily).
template <class Measure>
double other_load_share(Measure&& measure) {
  const double busy0 = machine_busy_seconds(), own0 = own_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  measure();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy1 = machine_busy_seconds(), own1 = own_cpu_seconds();
  const double cores = static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  if (busy0 < 0 || busy1 < 0 || wall <= 0 || cores < 1) return -1;
  return std::clamp(((busy1 - busy0) - (own1 - own0)) / (wall * cores), 0.0, 1.0);
}

// Above this share of the CPUs taken by other processes, a loop's error is not judged.
constexpr double kMaxOtherLoad = 0.25;

// `validate --loop`: calibrate, simulate with that profile, execute and compare, `runs` times over
// (each pass calibrates afresh: a shared machine's speed drifts over minutes, and each pass should
// compare a prediction with a measurement taken under the same conditions).
int validate_loop(const ValidationRequest& a, std::ostream& out) {
  if (a.scenario.empty()) throw UserError("validate --loop needs a scenario");
  scenario::Scenario s = scenario::load_scenario(a.scenario);
  std::vector<double> errors, predicted_s, measured_s;
  double other_load = -1;  // the most other processes took of the CPUs during a run's steps
  char line[240];
  for (int run = 1; run <= a.runs; ++run) {
    std::ostringstream quiet;
    s.profile = calibrate_cpu(a.ranks, "", quiet);
    const auto predicted = driver::simulate(s, {false, false, driver::RankMode::all, false});
    validate::MeasuredRun m;
    other_load =
        std::max(other_load, other_load_share([&] { m = execute_on_cpu(a.scenario, 1, a.steps); }));
    const auto c = validate::compare(predicted.step.graph, predicted.timeline, m);
    errors.push_back(c.step_error_percent);
    predicted_s.push_back(c.predicted_step_s);
    measured_s.push_back(c.measured_step_s);
    std::snprintf(
        line, sizeof line,
        "run %d/%d   predicted %8.3f ms  measured %8.3f ms (median of %zu steps)  error %+6.1f%%\n",
        run, a.runs, c.predicted_step_s * 1e3, c.measured_step_s * 1e3, m.step_times_s.size(),
        c.step_error_percent);
    out << line << std::flush;
  }
  // The typical size of the error (what --max-error judges), its bias, and whether the machine
  // held still enough for the error to measure the model (validate/loop_statistics.h).
  const validate::LoopSummary sum = validate::summarize_loop(errors, predicted_s, measured_s);
  std::snprintf(line, sizeof line,
                "median step-time error over %d runs: %+.1f%% (median of |error|; of the signed "
                "errors %+.1f%%) (%s)\n",
                a.runs, sum.median_error, sum.median_signed_error, s.name.c_str());
  out << line;
  if (!sum.judged) {
    out << "machine     steadiness not judged (it needs at least 3 runs)\n";
  } else {
    std::snprintf(line, sizeof line,
                  "machine     predictions and measurements moved by up to %.0f%% across runs (the "
                  "middle ones): %s\n",
                  100 * sum.drift,
                  sum.steady ? "steady"
                             : "NOT steady (other load on this machine); the error above is not a "
                               "measure of the model");
    out << line;
  }
  if (other_load >= 0) {
    std::snprintf(
        line, sizeof line,
        "machine     other processes used up to %.0f%% of the CPUs while the steps ran%s\n",
        100 * other_load,
        other_load > kMaxOtherLoad
            ? ": the error above measures that load, not the model (not judged)"
            : "");
    out << line;
  }
  if (a.max_error >= 0 && (!sum.steady || other_load > kMaxOtherLoad)) return kExitUnsteady;
  if (a.max_error >= 0 && std::abs(sum.median_error) > a.max_error) {
    std::snprintf(line, sizeof line, "the median error is beyond --max-error %.1f%%\n",
                  a.max_error);
    out << line;
    return 1;
  }
  return 0;
}

// `validate --table`: fitted on a random half, the error on the other.
int validate_table(const ValidationRequest& a, std::ostream& out) {
  const auto rows = validate::read_vtrain_table(a.table);
  const auto parts = validate::simulate_rows(rows);
  std::vector<size_t> train, test;
  validate::split_half(parts, a.seed, train, test);
  size_t failed = 0;
  for (const auto& p : parts) failed += p.error.empty() ? 0 : 1;
  const auto def = validate::errors(rows, parts, validate::Factors{}, test);
  const validate::TableFit tf = validate::fit_with_gemm_curve(rows, train);
  const validate::Factors& fitted = tf.factors;
  const auto held = validate::errors(rows, tf.parts, fitted, test);
  const auto seen = validate::errors(rows, tf.parts, fitted, train);
  out << "validate    " << a.table << ": " << rows.size() << " rows, " << failed
      << " could not be simulated\n";
  out << "            fitted on " << train.size() << " rows (random half, seed " << a.seed
      << "), tested on the other " << test.size() << "\n\n";
  out << "fitted parameters (" << validate::kFactorCount + 1 << ")\n";
  print_gemm_curve(out, tf.gemm_half_flops);
  print_factors(out, fitted);
  char line[200];
  std::snprintf(line, sizeof line, "\nheld-out half  MAPE %.2f%%  median %.2f%%  worst %.1f%%\n",
                held.mape, held.median, held.worst);
  out << line;
  std::snprintf(line, sizeof line, "fitting half   MAPE %.2f%%\n", seen.mape);
  out << line;
  std::snprintf(line, sizeof line,
                "default model  MAPE %.2f%% on the held-out half (no fitting)\n\n", def.mape);
  out << line;
  out << "held-out error by parallelism\n";
  for (const auto& [type, e] : validate::errors_by_parallelism(rows, tf.parts, fitted, test)) {
    std::snprintf(line, sizeof line, "  %-24s %4zu rows  MAPE %6.2f%%  worst %6.1f%%\n",
                  type.c_str(), e.rows, e.mape, e.worst);
    out << line;
  }
  if (!a.csv.empty()) {
    OutputFile file(a.csv);
    std::ostream& f = file.stream();
    validate::write_rows_csv(f, rows, tf.parts, fitted, test);
    file.commit();
    out << "\nwrote " << a.csv << "\n";
  }
  if (!a.json.empty()) {
    OutputFile file(a.json);
    std::ostream& f = file.stream();
    validate::write_table_json(f, a.table, a.seed, rows, tf, train, test, {held, seen, def},
                               failed);
    file.commit();
  }
  return 0;
}

int validate_measured(const ValidationRequest& a, std::ostream& out) {
  if (a.scenario.empty())
    throw UserError("validate --measured needs the scenario that was executed");
  scenario::Scenario s = scenario::load_scenario(a.scenario);
  if (!a.profile.empty()) s.profile = scenario::load_profile(a.profile);
  // The run was clustersim's executor: its own attention, norm and softmax kernels price it.
  if (s.profile) s.profile = cost::for_executor(*s.profile);
  const validate::MeasuredRun m = validate::read_measured(a.measured);
  const auto predicted = driver::simulate(s, {false, false, driver::RankMode::all, false});
  const auto c = validate::compare(predicted.step.graph, predicted.timeline, m);
  char line[240];
  out << "validate    " << s.name << " against " << a.measured << " (" << m.device << ")\n";
  out << "            predicted with "
      << (s.profile ? "profile " + s.profile->name + " measured " + s.profile->date
                    : std::string("datasheet figures (no profile)"))
      << "\n\n";
  std::snprintf(line, sizeof line,
                "step time   predicted %.3f ms, measured %.3f ms (median of %zu steps; fastest "
                "%.3f ms): error %+.1f%%\n",
                c.predicted_step_s * 1e3, c.measured_step_s * 1e3, m.step_times_s.size(),
                m.fastest_step_s * 1e3, c.step_error_percent);
  out << line;
  if (c.gemm_tasks > 0) {
    std::snprintf(line, sizeof line,
                  "GEMM tasks  median error %.1f%% over %zu tasks (|predicted - measured| / "
                  "measured, each task)\n",
                  c.gemm_median_error_percent, c.gemm_tasks);
    out << line;
  }
  if (!m.timeline.memory.empty() && predicted.report.peak_memory > 0) {
    int64_t measured_peak = 0;
    for (const auto& r : m.timeline.memory) measured_peak = std::max(measured_peak, r.peak);
    const auto predicted_peak = static_cast<double>(predicted.report.peak_memory);
    std::snprintf(
        line, sizeof line,
        "peak memory predicted %.2f GiB, measured %.2f GiB (the executor's pool): error %+.1f%%\n",
        predicted_peak / (1 << 30), static_cast<double>(measured_peak) / (1 << 30),
        measured_peak > 0 ? 100 * (predicted_peak - static_cast<double>(measured_peak)) /
                                static_cast<double>(measured_peak)
                          : 0.0);
    out << line;
  }
  out << "\n";
  auto table = [&](const char* title, const std::vector<validate::Comparison::Row>& rows) {
    out << title << "\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line,
                    "  %-40s predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", r.what.c_str(),
                    r.predicted_s * 1e3, r.measured_s * 1e3,
                    r.measured_s > 0 ? 100 * (r.predicted_s - r.measured_s) / r.measured_s : 0.0);
      out << line;
    }
    out << "\n";
  };
  table("summed task time by op class (all ranks)", c.by_class);
  table("by phase", c.by_phase);
  table("the 10 tasks with the largest error", c.worst);
  if (!a.trace.empty()) {
    OutputFile file(a.trace);
    std::ostream& f = file.stream();
    validate::write_side_by_side_trace(f, predicted.step.graph, predicted.timeline, m.timeline);
    file.commit();
    out << "wrote " << a.trace << " (predicted: processes 0.., measured: 1000..)\n";
  }
  return 0;
}

}  // namespace

void print_profile(std::ostream& out, const cost::Profile& p) {
  char line[200];
  auto row = [&](const char* what, const cost::EfficiencyCurve& c, double scale, const char* unit) {
    std::string s = std::string("  ") + what;
    s.resize(28, ' ');
    for (const auto& [size, eff] : c.points()) {
      std::snprintf(line, sizeof line, " %.3g%s:%.2f", size * scale, unit, eff);
      s += line;
    }
    out << s << "\n";
  };
  auto table_row = [&](const std::string& what, const cost::GemmEfficiencyGrid& t) {
    if (t.empty()) return;
    double lo = 1e9, hi = 0;
    int64_t small = INT64_MAX, large = 0;
    for (const auto& g : t.points()) {
      lo = std::min(lo, g.efficiency), hi = std::max(hi, g.efficiency);
      small = std::min({small, g.m, g.n, g.k}), large = std::max({large, g.m, g.n, g.k});
    }
    std::snprintf(line, sizeof line,
                  "  %-26s%.2f-%.2f of peak over %zu shapes (m, n, k in %lld..%lld)\n",
                  what.c_str(), lo, hi, t.points().size(), static_cast<long long>(small),
                  static_cast<long long>(large));
    out << line;
  };
  std::snprintf(line, sizeof line, "  GEMM peak (fp32)          %8.2f GFLOP/s\n",
                p.device.fp32.value * 1e-9);
  out << line;
  table_row("GEMM efficiency by shape", p.compute.gemm_table);
  for (const auto& [d, t] : p.compute.gemm_tables)
    table_row("  " + std::string(ir::to_string(d)), t);
  if (p.compute.misaligned_gemm != 1.0) {
    std::snprintf(line, sizeof line,
                  "  misaligned GEMM           %.2f of the aligned rate (m, n or k breaking "
                  "16-byte alignment)\n",
                  p.compute.misaligned_gemm);
    out << line;
  }
  if (!p.compute.attention_curve.empty())
    row("attention (MFLOP:eff)", p.compute.attention_curve, 1e-6, "");
  if (p.executor) {
    for (const auto& [d, c] : p.executor->attention)
      row(("executor attention " + std::string(ir::to_string(d))).c_str(), c, 1e-6, "");
    if (!p.executor->norm.empty())
      row("executor norm (MiB:eff)", p.executor->norm, 1.0 / (1 << 20), "");
    if (!p.executor->softmax.empty())
      row("executor softmax", p.executor->softmax, 1.0 / (1 << 20), "");
  }
  if (!p.compute.norm_curve.empty())
    row("norm (MiB:eff)", p.compute.norm_curve, 1.0 / (1 << 20), "");
  std::snprintf(line, sizeof line,
                "  memory bandwidth          %8.2f GB/s (best streaming kernel)\n",
                p.device.hbm_bandwidth.value * 1e-9);
  out << line;
  row("streaming (MiB:eff)", p.compute.memory_curve, 1.0 / (1 << 20), "");
  row("optimizer (MiB:eff)", p.compute.optimizer_curve, 1.0 / (1 << 20), "");
  std::snprintf(line, sizeof line, "  per-task overhead         %8.2f us\n",
                p.compute.launch_gap.us());
  out << line;
  if (p.collectives) {
    std::snprintf(line, sizeof line,
                  "  all-reduce                %8.2f us + bus bytes / %.2f GB/s\n",
                  p.collectives->latency.us(), p.collectives->bus_bandwidth.value * 1e-9);
    out << line;
    std::snprintf(line, sizeof line,
                  "  interference              compute x%.2f while communicating, all-reduce x%.2f "
                  "while computing\n",
                  1 + p.interference.compute_slowdown, 1 + p.interference.comm_slowdown);
    out << line;
  }
}

namespace {

// `calibrate --from-table`: the table model's factors fitted on every row.
int calibrate_table(const ValidationRequest& a, std::ostream& out) {
  const auto rows = validate::read_vtrain_table(a.table);
  const auto parts = validate::simulate_rows(rows);
  std::vector<size_t> all;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].error.empty()) all.push_back(i);
  }
  const validate::TableFit tf = validate::fit_with_gemm_curve(rows, all);
  const auto e = validate::errors(rows, tf.parts, tf.factors, all);
  out << "calibrate   " << a.table << ": fitted on " << all.size() << " of " << rows.size()
      << " rows\n";
  print_gemm_curve(out, tf.gemm_half_flops);
  print_factors(out, tf.factors);
  char line[120];
  std::snprintf(line, sizeof line,
                "in-sample MAPE %.2f%% (use `clustersim validate --table` for a held-out error)\n",
                e.mape);
  out << line;
  return 0;
}

// `calibrate --backend cpu|cuda`: the microbenchmark suites fitted into a profile.
int calibrate_backend(const ValidationRequest& a, std::ostream& out) {
  if (a.backend != "cpu" && a.backend != "cuda")
    throw UserError("calibrate --backend '" + a.backend + "': valid values are cpu, cuda");
  if (a.out.empty())
    throw UserError("calibrate --backend " + a.backend + " needs --out profiles/NAME.yaml");
  // The GPU's suites: workflows/execution.cpp, calibrate_cuda.
  const cost::Profile p =
      a.backend == "cuda" ? calibrate_cuda(a.raw, out) : calibrate_cpu(a.ranks, a.raw, out);
  scenario::save_profile(a.out, p);
  print_profile(out, p);
  out << "wrote " << a.out << "\n";
  return 0;
}

}  // namespace

int validate(const ValidationRequest& a, std::ostream& out) {
  if (!a.nccl.logs.empty()) return validate_nccl_tests(a.nccl, out);
  if (!a.kineto.empty())
    return validate_kineto({a.kineto, a.scenario, a.profile, a.no_profile, -1, a.json, ""}, out);
  if (!a.suite.empty()) return validate_suite(a, out);
  if (!a.recipes.empty())
    return check_recipes({a.recipes, a.json, a.threads, a.max_failures, a.markdown}, out);
  if (a.loop) return validate_loop(a, out);
  if (!a.measured.empty()) return validate_measured(a, out);
  return validate_table(a, out);
}

int calibrate(const ValidationRequest& a, std::ostream& out) {
  if (!a.nccl.logs.empty()) return calibrate_nccl_tests(a.nccl, out);
  if (!a.kineto.empty())
    return calibrate_kineto({a.kineto, a.scenario, a.profile, a.no_profile, -1, "", a.out}, out);
  if (!a.backend.empty()) return calibrate_backend(a, out);
  return calibrate_table(a, out);
}

}  // namespace cs::workflows
