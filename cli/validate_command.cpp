
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/execute_command.h"
#include "cli/flags.h"
#include "cli/kineto_command.h"
#include "cli/nccl_tests_command.h"
#include "cli/options.h"
#include "cli/report_output.h"
#include "common/error.h"
#include "cost_models/profile.h"
#include "driver/simulation.h"
#include "reports/html_report.h"
#include "scenarios/named_models.h"
#include "scenarios/profile_io.h"
#include "validate/calibration.h"
#include "validate/loop_statistics.h"
#include "validate/measured.h"
#include "validate/suite.h"
#include "validate/table_validation.h"

namespace cs::cli {
namespace {

struct Args {
  std::vector<std::string> files;
  std::string table, csv, backend, out, measured, scenario, profile, trace, raw, suite, kineto;
  std::string json, html;  // --suite (both), --table (--json)
  unsigned seed = 42;
  int ranks = 2, runs = 5, steps = 5;
  double max_error = -1;
  bool loop = false;
  bool no_profile = false, markdown = false, rows = false;  // --suite
  NcclTestsOptions
      nccl;  // --nccl-tests (its --profile, --out and --max-error are copied in at check())
};

constexpr const char* kValidateHelp =
    "usage: clustersim validate --suite validate/suites [--no-profile] [--rows] [--markdown] "
    "[--json FILE] [--html FILE]\n"
    "       clustersim validate --table FILE [--seed N] [--csv FILE] [--json FILE]\n"
    "       clustersim validate --measured RUN.json SCENARIO.yaml [--profile P.yaml] [--trace "
    "FILE]\n"
    "       clustersim validate --loop SCENARIO.yaml [--runs N] [--steps S] [--max-error PCT]\n"
    "       clustersim validate --kineto TRACE.json SCENARIO.yaml [--profile P.yaml | "
    "--no-profile] [--json FILE]\n"
    "  With --kineto: a PyTorch profiler Chrome trace of your run against the scenario's simulated "
    "step:\n"
    "  step time, kernel time by class (gemm, attention, nccl, memory_bound by kernel name), NCCL "
    "time\n"
    "  by collective and exposed communication (NCCL time under no compute kernel), per step.\n"
    "       clustersim validate --nccl-tests LOG... [--collective C] [--cluster PRESET] [--profile "
    "P.yaml] [--max-error PCT] [--json FILE]\n"
    "  With --nccl-tests: each nccl-tests output log (all_reduce_perf, all_gather_perf, "
    "reduce_scatter_perf,\n"
    "  broadcast_perf, alltoall_perf) against our prediction of the same collective over the same "
    "GPUs\n"
    "  (its Rank lines: GPUs per host; the cluster from the GPU's name unless --cluster): per size "
    "the\n"
    "  measured time (the better of out-of-place and in-place), the predicted one and the error, "
    "then\n"
    "  MAPE and the worst size. --profile: predict with the profile's measured collective line\n"
    "  (calibrate --nccl-tests). --max-error: exit status 1 when a log's MAPE is beyond PCT.\n"
    "  With --loop (cpu backend): N times over (default 5), calibrate, simulate with that "
    "profile,\n"
    "  execute S steps (default 5) and compare the median step; prints each error and the median\n"
    "  error. --max-error: exit status 1 when the median error's magnitude is beyond PCT, 77 when\n"
    "  the machine's speed moved by more than 20% across runs (the error is then not judged).\n"
    "  With --suite (a folder of suite files, or one): every row of each published table "
    "predicted\n"
    "  with the GPU's shipped profile (--no-profile: datasheet figures); per source the rows run,\n"
    "  MAPE, median, worst, signed bias and each row not expressible with the reason; exit status "
    "1\n"
    "  when a source is beyond its bound. --rows: every row's prediction; --markdown: the summary\n"
    "  as a markdown table (the README's accuracy section). --json FILE: every source and row as "
    "JSON\n"
    "  (docs/schemas/validate.schema.json); --html FILE: one self-contained page with the "
    "summary,\n"
    "  a chart of every row's error per source and the error by profile and stack.\n"
    "  With --measured: the scenario simulated (with the profile) against an executor run\n"
    "  (`execute --timeline`): step-time error, error per op class and phase, the 10 tasks with "
    "the\n"
    "  largest error, and a Chrome trace with predicted and measured side by side.\n"
    "  Predicts every row of a published table (vTrain's format: GPUs, global batch, micro batch,\n"
    "  hidden, heads, layers, sequence, TP, DP, PP, iteration ms), fits a few global factors on a\n"
    "  random half (seed N, default 42) and reports the error on the other half: MAPE, median,\n"
    "  worst, and by parallelism type. --csv writes every row's prediction.\n";

constexpr const char* kCalibrateHelp =
    "usage: clustersim calibrate --backend cpu --out profiles/NAME.yaml [--ranks N] [--raw "
    "FILE.csv]\n"
    "       clustersim calibrate --from-table FILE\n"
    "       clustersim calibrate --nccl-tests LOG... --out profiles/NAME.yaml [--profile "
    "BASE.yaml]\n"
    "       clustersim calibrate --kineto TRACE.json SCENARIO.yaml --out profiles/NAME.yaml "
    "[--profile BASE.yaml]\n"
    "  --kineto: fits three kernel rates (GEMMs, attention, memory-bound kernels, each a multiple "
    "of\n"
    "  BASE's rate; default BASE: the GPU's shipped profile) so that the scenario's simulated "
    "step\n"
    "  spends what the trace spends per step in each class; writes BASE with them as rate_scale.\n"
    "  --nccl-tests: fits the profile's collective line, latency + bus bytes / bus bandwidth, on "
    "every\n"
    "  size of the logs (least squares of the relative error), into a copy of BASE (default: the\n"
    "  GPU's shipped profile); simulate --profile then prices every collective with that line.\n"
    "  --backend cpu: runs microbenchmark suites through the executor on N ranks at once (default "
    "2,\n"
    "  one per core): a GEMM grid (m, n, k in 128..1024), causal attention, streaming kernels,\n"
    "  AdamW, near-empty kernels, all-reduces of 64 KiB-16 MiB, and GEMMs beside all-reduces. Fits "
    "a\n"
    "  Profile that `simulate --profile` uses: GEMM efficiency by shape, kernel efficiency by "
    "size,\n"
    "  per-task overhead, all-reduce latency and bandwidth, and how much compute and "
    "communication\n"
    "  slow each other when they overlap. Takes a few seconds.\n"
    "  --backend cuda: the same suites on GPU 0 at a GPU's scale (GEMMs 512..32768 in bf16, fp16, "
    "tf32\n"
    "  and fp8 where the GPU has it; attention at the GPT-2 scenarios' shapes; streams to 4 GiB;\n"
    "  launch overhead; GEMMs beside a copy), fitted on the GPU's device preset (about 2 "
    "minutes).\n"
    "  --raw FILE.csv: also write every benchmark's start and end (suite, name, rank).\n"
    "  --from-table: fits the table model's global factors on every row of a published table.\n";

// The options validate and calibrate share (each takes what its help lists; both read all).
std::shared_ptr<Args> add_options(CLI::App& sub) {
  auto a = std::make_shared<Args>();
  sub.add_option("SCENARIO", a->files, "the scenario (--loop, --measured)")->type_name("FILE");
  text_option(sub, "--table,--from-table", a->table,
              "a published table of measured iterations (vTrain's format)");
  text_option(sub, "--suite", a->suite, "a folder of suite files, or one", "PATH");
  text_option(sub, "--kineto", a->kineto,
              "a PyTorch profiler (Kineto) Chrome trace of the scenario's run (validate: compare; "
              "calibrate: fit the kernel rates into --out)",
              "TRACE.json");
  text_option(sub, "--measured", a->measured, "an executor run (execute --timeline)", "RUN.json");
  sub.add_flag("--loop", a->loop,
               "calibrate, simulate with that profile, execute and compare, --runs times over (cpu "
               "backend)");
  text_option(sub, "--backend", a->backend, "calibrate on this backend", "cpu|cuda");
  text_option(sub, "--out", a->out, "where calibrate writes the profile", "profiles/NAME.yaml");
  text_option(sub, "--profile", a->profile, "the profile to simulate with (--measured)", "P.yaml");
  text_option(sub, "--trace", a->trace,
              "predicted and measured side by side as a Chrome trace (--measured)");
  text_option(sub, "--csv", a->csv, "every row's prediction as CSV (--table)");
  text_option(sub, "--raw", a->raw, "every benchmark's start and end (calibrate)", "FILE.csv");
  sub.add_flag("--no-profile", a->no_profile,
               "datasheet figures instead of the GPUs' shipped profiles (--suite)");
  sub.add_flag("--markdown", a->markdown, "the summary as a markdown table (--suite)");
  sub.add_flag("--rows", a->rows, "every row's prediction (--suite)");
  text_option(sub, "--json", a->json,
              "the result as JSON (validate --suite, --table, --kineto, --nccl-tests; "
              "docs/schemas/validate.schema.json)",
              "FILE");
  text_option(sub, "--html", a->html, "a self-contained HTML page of the result (validate --suite)",
              "FILE");
  text_option(
      sub, "--runs", [a](const std::string& v) { a->runs = int_flag("--runs", v, 1); },
      "loops (--loop, default 5)", "N");
  text_option(
      sub, "--steps", [a](const std::string& v) { a->steps = int_flag("--steps", v, 1); },
      "measured steps per loop (--loop, default 5)", "S");
  text_option(
      sub, "--max-error",
      [a](const std::string& v) { a->max_error = number_flag("--max-error", v, 0.0, true); },
      "exit status 1 when the median error's magnitude (--loop) or a log's MAPE (--nccl-tests) is "
      "beyond PCT",
      "PCT");
  text_option(
      sub, "--ranks", [a](const std::string& v) { a->ranks = int_flag("--ranks", v, 1); },
      "ranks of the cpu calibration (default 2)", "N");
  sub.add_option(
         "--nccl-tests", a->nccl.logs,
         "nccl-tests output logs (validate: error per size; calibrate: fit the collective line)")
      ->type_name("LOG...")
      ->expected(1, 1 << 20);
  const auto collectives = names_of(every_value<ir::CollectiveType>());
  text_option(sub, "--collective", a->nccl.collective,
              "the collective of the logs, where they do not name their binary (--nccl-tests)",
              choice_type(collectives));
  text_option(sub, "--cluster", a->nccl.cluster,
              "cluster preset the logs ran on (--nccl-tests; default from the GPU's name)",
              "PRESET");
  text_option(
      sub, "--gpus", [a](const std::string& v) { a->nccl.gpus = int_flag("--gpus", v, 2); },
      "GPUs of logs without Rank lines (--nccl-tests)", "N");
  text_option(
      sub, "--nodes", [a](const std::string& v) { a->nccl.nodes = int_flag("--nodes", v, 1); },
      "hosts of logs without Rank lines (--nccl-tests)", "M");
  text_option(
      sub, "--fidelity",
      [a](const std::string& v) {
        a->nccl.fidelity = scenario::find_named_model(scenario::network_models(), "--fidelity", v);
      },
      "network model of the prediction (--nccl-tests; default analytic)",
      choice_type(scenario::model_names(scenario::network_models())));
  text_option(
      sub, "--seed",
      [a](const std::string& v) { a->seed = static_cast<unsigned>(int_flag("--seed", v, 0)); },
      "the random half fitted on (--table, default 42)", "N");
  return a;
}

// What parse() checked once every option is read.
void check(Args& a, const char* command) {
  if (a.files.size() > 1) throw UserError("unknown option '" + a.files[1] + "' for " + command);
  a.scenario = a.files.empty() ? "" : a.files[0];
  a.nccl.profile = a.profile;
  a.nccl.out = a.out;
  a.nccl.max_error = a.max_error;
  if (a.table.empty() && a.backend.empty() && a.measured.empty() && !a.loop && a.suite.empty() &&
      a.nccl.logs.empty() && a.kineto.empty()) {
    throw UserError(std::string(command) + ": nothing to do (clustersim " + command +
                    " --help lists the options)");
  }
  // Only the suite and the table have one result to write; elsewhere the flags would be ignored.
  const bool suite = !a.suite.empty() && a.nccl.logs.empty() && a.kineto.empty();
  const bool table = !suite && !a.table.empty() && a.nccl.logs.empty() && a.kineto.empty() &&
                     a.measured.empty() && !a.loop;
  if (std::string(command) == "calibrate" && (!a.json.empty() || !a.html.empty()))
    throw UserError("calibrate writes no --json or --html (validate does)");
  const bool kineto = !a.kineto.empty() && a.nccl.logs.empty();
  const bool nccl = !a.nccl.logs.empty();
  if (!a.json.empty() && !suite && !table && !kineto && !nccl)
    throw UserError(
        "validate --json is written for --suite, --table, --kineto and --nccl-tests only");
  a.nccl.json = a.json;
  if (!a.html.empty() && !suite) throw UserError("validate --html is written for --suite only");
}

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

int validate_measured(const Args& a, std::ostream& out);

using nlohmann::json;

json or_null(bool has, double v) { return has ? json(v) : json(nullptr); }

std::ofstream open_file(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw UserError("cannot write '" + path + "'");
  return f;
}

json profile_errors_json(const std::vector<validate::ProfileError>& errors, bool with_stack) {
  json out = json::array();
  for (const auto& p : errors) {
    json j = {{"profile", p.profile},
              {"sources", p.sources},
              {"runs", p.runs},
              {"mape", p.mape},
              {"worst", p.worst}};
    if (with_stack) j["stack"] = p.stack;
    out.push_back(j);
  }
  return out;
}

// `validate --suite --json`: every source with its figures, bounds and verdict, every row, and
// the step-time error by profile and by (profile, stack); docs/schemas/validate.schema.json.
void write_suite_json(const std::string& path, const Args& a,
                      const std::vector<validate::SourceResult>& results) {
  json sources = json::array();
  bool pass = true;
  for (const auto& r : results) {
    pass = pass && r.pass;
    json rows = json::array();
    for (const auto& x : r.rows) {
      // An out-of-memory row measures no figure: its verdict is whether we also predict no fit.
      json verdict = nullptr;
      if (x.verdict_row)
        verdict = !x.not_expressible.empty() ? "not_expressible" : x.verdict_ok ? "right" : "wrong";
      // Peak memory where the suite has a memory_column and the row has a measured peak.
      json memory = nullptr;
      if (x.memory_measured_mib) {
        memory = {{"measured_mib", *x.memory_measured_mib},
                  {"predicted_mib",
                   or_null(x.memory_predicted_mib.has_value(), x.memory_predicted_mib.value_or(0))},
                  {"error_percent", or_null(x.memory_error_percent.has_value(),
                                            x.memory_error_percent.value_or(0))}};
      }
      rows.push_back({{"index", x.index},
                      {"line", x.line},
                      {"label", x.label},
                      {"run", x.run},
                      {"measured", or_null(!x.verdict_row, x.measured)},
                      {"predicted", or_null(x.run, x.predicted)},
                      {"error_percent", or_null(x.run, x.error_percent)},
                      {"step_error_percent",
                       or_null(x.step_error_percent.has_value(), x.step_error_percent.value_or(0))},
                      {"profile", x.profile},
                      {"stack", x.stack},
                      {"not_expressible", x.not_expressible},
                      {"reasons", x.reasons},
                      {"out_of_memory_verdict", verdict},
                      {"memory", memory}});
    }
    const bool any = r.rows_run > 0;  // the error figures mean nothing over no row
    json memory = nullptr;  // the source's peak-memory comparison (null: no memory_column)
    if (!r.memory_column.empty()) {
      const bool m = r.memory_rows > 0;
      memory = {{"column", r.memory_column},
                {"rows", r.memory_rows},
                {"mape", or_null(m, r.memory_mape)},
                {"worst", or_null(m, r.memory_worst)},
                {"bias", or_null(m, r.memory_bias)}};
    }
    sources.push_back(
        {{"file", r.file},
         {"source", r.source},
         {"citation", r.citation},
         {"kind", r.kind},
         {"figure", r.figure},
         {"unit", r.unit},
         {"rows_total", r.rows_total},
         {"rows_run", r.rows_run},
         {"verdicts", r.verdicts},
         {"verdicts_ok", r.verdicts_ok},
         {"mape", or_null(any, r.mape)},
         {"median", or_null(any, r.median)},
         {"worst", or_null(any, r.worst)},
         {"bias", or_null(any, r.bias)},
         {"bounds",
          {{"mape_percent", or_null(r.bound_mape.has_value(), r.bound_mape.value_or(0))},
           {"worst_percent", or_null(r.bound_worst.has_value(), r.bound_worst.value_or(0))},
           {"memory_mape_percent",
            or_null(r.bound_memory_mape.has_value(), r.bound_memory_mape.value_or(0))}}},
         {"memory", memory},
         {"pass", r.pass},
         {"profiles", r.profiles},
         {"rows", rows}});
  }
  const json j = {
      {"schema_version", kSchemaVersion},
      {"kind", "validate"},
      {"mode", "suite"},
      {"suite", a.suite},
      {"use_profiles", !a.no_profile},
      {"pass", pass},
      {"sources", sources},
      {"profile_errors", profile_errors_json(validate::profile_errors(results), false)},
      {"profile_stack_errors", profile_errors_json(validate::profile_stack_errors(results), true)}};
  open_file(path) << j.dump(2) << "\n";
}

std::string percent(double v, const char* f = "%.2f%%") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string bound_cell(const validate::SourceResult& r) {
  std::string b;
  if (r.bound_mape) b += "MAPE <= " + percent(*r.bound_mape, "%g%%");
  if (r.bound_worst)
    b += (b.empty() ? "" : ", ") + std::string("worst <= ") + percent(*r.bound_worst, "%g%%");
  if (r.bound_memory_mape)
    b += (b.empty() ? "" : ", ") + std::string("memory MAPE <= ") +
         percent(*r.bound_memory_mape, "%g%%");
  return b.empty() ? "none" : b;
}

std::string sources_cell(const std::vector<std::string>& sources) {
  std::string s;
  for (const auto& x : sources) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// `validate --suite --html`: the page reports/html_report.h draws, its tables formatted here.
void write_suite_html(const std::string& path, const Args& a,
                      const std::vector<validate::SourceResult>& results) {
  reports::ValidateHtmlInput in;
  in.title = "validate: " + a.suite;
  size_t failed = 0, rows = 0, run = 0;
  for (const auto& r : results) {
    failed += r.pass ? 0 : 1;
    rows += r.rows_total;
    run += r.rows_run;
  }
  in.facts = {{"suite", a.suite},
              {"sources", std::to_string(results.size()) + " (" + std::to_string(run) + " of " +
                              std::to_string(rows) + " rows run)"},
              {"predicted with",
               a.no_profile ? "datasheet figures (--no-profile)" : "each GPU's shipped profile"},
              {"verdict", failed ? std::to_string(failed) + " source(s) beyond their bound"
                                 : "every source within its bound"},
              {"clustersim", version_text()}};
  in.summary.header = {"source", "figure", "rows run", "MAPE",   "median",
                       "worst",  "bias",   "bound",    "verdict"};
  for (const auto& r : results) {
    const bool any = r.rows_run > 0;
    // A short unit (ms, us, x) is named; a long one repeats the figure ("tokens/s/GPU").
    in.summary.rows.push_back({r.source,
                               r.unit.size() <= 3 && !r.unit.empty() && r.unit != r.figure
                                   ? r.figure + " (" + r.unit + ")"
                                   : r.figure,
                               std::to_string(r.rows_run) + "/" + std::to_string(r.rows_total),
                               any ? percent(r.mape) : "-", any ? percent(r.median) : "-",
                               any ? percent(r.worst) : "-", any ? percent(r.bias, "%+.2f%%") : "-",
                               bound_cell(r),
                               !r.pass                   ? "FAIL"
                               : !any && r.verdicts == 0 ? "n/a"
                                                         : "pass"});
    reports::ValidateSource s{r.source, r.figure, r.unit, {}, r.bound_worst.value_or(0)};
    for (const auto& x : r.rows) {
      std::string note = x.not_expressible;
      if (x.verdict_row)
        note = "measured out of memory; " + (!x.not_expressible.empty()
                                                 ? "not expressible: " + x.not_expressible
                                             : x.verdict_ok ? "predicted out of memory"
                                                            : "PREDICTED TO FIT");
      s.rows.push_back({x.index, x.label, x.run, x.verdict_row ? 0.0 : x.measured, x.predicted,
                        x.error_percent, x.profile, x.stack, note});
    }
    in.sources.push_back(std::move(s));
  }
  in.by_profile.header = {"profile", "runs", "MAPE", "worst", "sources"};
  for (const auto& p : validate::profile_errors(results)) {
    in.by_profile.rows.push_back({p.profile, std::to_string(p.runs), percent(p.mape),
                                  percent(p.worst), sources_cell(p.sources)});
  }
  in.by_profile_stack.header = {"profile", "stack", "runs", "MAPE", "worst", "sources"};
  for (const auto& p : validate::profile_stack_errors(results)) {
    in.by_profile_stack.rows.push_back({p.profile, p.stack, std::to_string(p.runs), percent(p.mape),
                                        percent(p.worst), sources_cell(p.sources)});
  }
  auto f = open_file(path);
  reports::write_validate_html(f, in);
}

// `validate --suite`: every source of the suite, then the summary (or the markdown table alone).
int validate_suite(const Args& a, std::ostream& out) {
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
  if (!a.json.empty()) write_suite_json(a.json, a, results);
  if (!a.html.empty()) write_suite_html(a.html, a, results);
  bool pass = true;
  for (const auto& r : results) pass = pass && r.pass;
  if (!pass && !a.markdown) out << "\nat least one source is beyond its bound\n";
  return pass ? 0 : 1;
}

void print_gemm_curve(std::ostream& out, double half) {
  char line[200];
  std::snprintf(line, sizeof line, "  %-52s %9.3f GFLOP (of %.1f-%.0f, on the fitting rows)\n",
                "GEMM curve half-rate point", half * 1e-9, validate::kGemmHalfCandidates[0] * 1e-9,
                validate::kGemmHalfCandidates[std::size(validate::kGemmHalfCandidates) - 1] * 1e-9);
  out << line;
}

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
    std::ofstream f(raw);
    if (!f) throw UserError("cannot write '" + raw + "'");
    f << "suite,benchmark,rank,start_s,end_s\n";
    f.precision(12);  // microseconds well into a suite (the default 6 digits kept 0.1 ms)
    auto dump = [&](const char* suite, const validate::TaskDurations& d) {
      for (ir::TaskId t = 0; t < d.graph->size(); ++t) {
        if (d.graph->task(t).kind == ir::TaskKind::memory) continue;
        f << suite << "," << d.graph->task_name(t) << "," << d.graph->task(t).rank << ","
          << d.start[t] << "," << d.end[t] << "\n";
      }
    };
    dump("compute", m.compute);
    if (m.collectives) dump("collectives", *m.collectives);
    if (m.interference) dump("interference", *m.interference);
    out << "  wrote every measurement to " << raw << "\n";
  }
  return validate::fit_profile(
      m, "cpu: " + std::to_string(ranks) +
             " ranks, 1 core each, OpenBLAS sgemm (1 thread), Gloo TCP loopback");
}

// `validate --loop --max-error` exit status when the machine's speed moved too much to judge.
constexpr int kExitUnsteady = 77;  // automake's "skipped", which ctest's SKIP_RETURN_CODE takes

// `validate --loop`: calibrate, simulate with that profile, execute and compare, `runs` times over
// (each pass calibrates afresh: a shared machine's speed drifts over minutes, and each pass should
// compare a prediction with a measurement taken under the same conditions).
int validate_loop(const Args& a, std::ostream& out) {
  if (a.scenario.empty()) throw UserError("validate --loop needs a scenario");
  scenario::Scenario s = scenario::load_scenario(a.scenario);
  std::vector<double> errors, predicted_s, measured_s;
  char line[240];
  for (int run = 1; run <= a.runs; ++run) {
    std::ostringstream quiet;
    s.profile = calibrate_cpu(a.ranks, "", quiet);
    const auto predicted = driver::simulate(s, {false, false, driver::RankMode::all, false});
    const validate::MeasuredRun m = execute_on_cpu(a.scenario, 1, a.steps);
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
  if (a.max_error >= 0 && !sum.steady) return kExitUnsteady;
  if (a.max_error >= 0 && std::abs(sum.median_error) > a.max_error) {
    std::snprintf(line, sizeof line, "the median error is beyond --max-error %.1f%%\n",
                  a.max_error);
    out << line;
    return 1;
  }
  return 0;
}

}  // namespace

namespace {

// `validate --table --json`: the fitted factors, the error on each half and by parallelism, and
// every row (measured, predicted with the fitted factors, the half it was in, or why it did not
// run).
struct TableErrors {
  validate::ErrorSummary held, fitting, default_model;
};
void write_table_json(const std::string& path, const Args& a,
                      const std::vector<validate::TableRow>& rows, const validate::TableFit& tf,
                      const std::vector<size_t>& train, const std::vector<size_t>& test,
                      const TableErrors& e, size_t failed) {
  auto summary = [](const validate::ErrorSummary& x) {
    return json{{"rows", x.rows}, {"mape", x.mape}, {"median", x.median}, {"worst", x.worst}};
  };
  json factors = json::array();
  for (int i = 0; i < validate::kFactorCount; ++i) {
    // In the unit the text report prints (us and ms rather than seconds).
    const std::string unit = validate::Factors::unit(i);
    const double scale = unit == "us" ? 1e6 : unit == "ms" ? 1e3 : 1.0;
    factors.push_back({{"name", validate::Factors::name(i)},
                       {"value", tf.factors.v[static_cast<size_t>(i)] * scale},
                       {"unit", unit}});
  }
  std::vector<char> held_out(rows.size(), 0);
  for (size_t i : test) held_out[i] = 1;
  json by_parallelism = json::array();
  for (const auto& [type, x] : validate::errors_by_parallelism(rows, tf.parts, tf.factors, test)) {
    by_parallelism.push_back(
        {{"type", type}, {"rows", x.rows}, {"mape", x.mape}, {"worst", x.worst}});
  }
  json out_rows = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& p = tf.parts[i];
    const bool ok = p.error.empty();
    const double predicted = ok ? tf.factors.predict(p) : 0;
    out_rows.push_back(
        {{"line", r.line},
         {"gpus", r.gpus},
         {"tp", r.tp},
         {"dp", r.dp},
         {"pp", r.pp},
         {"global_batch", r.global_batch},
         {"micro_batch", r.micro_batch},
         {"parallelism", validate::parallelism_type(r)},
         {"held_out", held_out[i] != 0},
         {"measured_s", r.measured_s},
         {"predicted_s", or_null(ok, predicted)},
         {"error_percent", or_null(ok, 100 * (predicted - r.measured_s) / r.measured_s)},
         {"error", p.error}});
  }
  const json j = {{"schema_version", kSchemaVersion},
                  {"kind", "validate"},
                  {"mode", "table"},
                  {"table", a.table},
                  {"seed", a.seed},
                  {"rows_total", rows.size()},
                  {"not_simulated", failed},
                  {"fit_rows", train.size()},
                  {"test_rows", test.size()},
                  {"gemm_half_flops", tf.gemm_half_flops},
                  {"factors", factors},
                  {"held_out", summary(e.held)},
                  {"fitting", summary(e.fitting)},
                  {"default_model", summary(e.default_model)},
                  {"by_parallelism", by_parallelism},
                  {"rows", out_rows}};
  open_file(path) << j.dump(2) << "\n";
}

int run_validate(const Args& a, std::ostream& out) {
  if (!a.nccl.logs.empty()) return validate_nccl_tests(a.nccl, out);
  if (!a.kineto.empty())
    return validate_kineto({a.kineto, a.scenario, a.profile, a.no_profile, -1, a.json, ""}, out);
  if (!a.suite.empty()) return validate_suite(a, out);
  if (a.loop) return validate_loop(a, out);
  if (!a.measured.empty()) return validate_measured(a, out);
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
    std::ofstream f(a.csv);
    if (!f) throw UserError("cannot write '" + a.csv + "'");
    validate::write_rows_csv(f, rows, tf.parts, fitted, test);
    out << "\nwrote " << a.csv << "\n";
  }
  if (!a.json.empty())
    write_table_json(a.json, a, rows, tf, train, test, {held, seen, def}, failed);
  return 0;
}

int validate_measured(const Args& a, std::ostream& out) {
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
    std::ofstream f(a.trace);
    if (!f) throw UserError("cannot write '" + a.trace + "'");
    validate::write_side_by_side_trace(f, predicted.step.graph, predicted.timeline, m.timeline);
    out << "wrote " << a.trace << " (predicted: processes 0.., measured: 1000..)\n";
  }
  return 0;
}

// What a fitted profile says, in the units a reader checks against the machine.
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

int run_calibrate(const Args& a, std::ostream& out) {
  if (!a.nccl.logs.empty()) return calibrate_nccl_tests(a.nccl, out);
  if (!a.kineto.empty())
    return calibrate_kineto({a.kineto, a.scenario, a.profile, a.no_profile, -1, "", a.out}, out);
  if (!a.backend.empty()) {
    if (a.backend != "cpu" && a.backend != "cuda")
      throw UserError("calibrate --backend '" + a.backend + "': valid values are cpu, cuda");
    if (a.out.empty())
      throw UserError("calibrate --backend " + a.backend + " needs --out profiles/NAME.yaml");
    if (a.backend == "cuda") {  // the GPU's suites (cli/execute_command.cpp, calibrate_cuda)
      const cost::Profile p = calibrate_cuda(a.raw, out);
      scenario::save_profile(a.out, p);
      print_profile(out, p);
      out << "wrote " << a.out << "\n";
      return 0;
    }
    const cost::Profile p = calibrate_cpu(a.ranks, a.raw, out);
    scenario::save_profile(a.out, p);
    print_profile(out, p);
    out << "wrote " << a.out << "\n";
    return 0;
  }
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

}  // namespace

namespace {

// validate and calibrate share one option set; each checks it against its own mode, then runs.
void add_command(CLI::App& app, Context& ctx, const char* name, const char* description,
                 const char* help, int (*run)(const Args&, std::ostream&)) {
  CLI::App* sub = app.add_subcommand(name, description);
  auto a = add_options(*sub);
  sub->footer(help);
  sub->callback([a, &ctx, name, run] {
    check(*a, name);
    ctx.status = run(*a, ctx.out);
  });
}

}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  add_command(app, ctx, "validate",
              "predictions against published tables, suites and executor runs (exit status 1 "
              "beyond a bound)",
              kValidateHelp, run_validate);
}

void add_calibrate_command(CLI::App& app, Context& ctx) {
  add_command(app, ctx, "calibrate",
              "fit a profile from microbenchmarks (--backend cpu|cuda) or a table model's factors "
              "(--from-table)",
              kCalibrateHelp, run_calibrate);
}

}  // namespace cs::cli
