// The files `validate --suite` and `validate --table` write: JSON
// (docs/schemas/validate.schema.json) and the suite's HTML page (drawn by reports/html_report.h,
// its tables formatted here).
#include "validate/report_files.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "reports/html_report.h"
#include "reports/schema_version.h"

namespace cs::validate {
namespace {

using nlohmann::json;

json or_null(bool has, double v) { return has ? json(v) : json(nullptr); }

json profile_errors_json(const std::vector<ProfileError>& errors, bool with_stack) {
  json out = json::array();
  for (const auto& p : errors) {
    json j = {{"profile", p.profile}, {"sources", p.sources}, {"precisions", p.precisions},
              {"runs", p.runs},       {"mape", p.mape},       {"worst", p.worst}};
    if (with_stack) j["stack"] = p.stack;
    out.push_back(j);
  }
  return out;
}

}  // namespace

void write_suite_json(std::ostream& out, const std::string& suite, bool use_profiles,
                      const std::vector<SourceResult>& results) {
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
         {"role", role_name(r.role)},
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
         {"median_step_error",
          or_null(r.median_step_error.has_value(), r.median_step_error.value_or(0))},
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
      {"schema_version", reports::kSchemaVersion},
      {"kind", "validate"},
      {"mode", "suite"},
      {"suite", suite},
      {"use_profiles", use_profiles},
      {"pass", pass},
      {"sources", sources},
      {"profile_errors", profile_errors_json(profile_errors(results), false)},
      {"profile_stack_errors", profile_errors_json(profile_stack_errors(results), true)}};
  out << j.dump(2) << "\n";
}

namespace {

std::string percent(double v, const char* f = "%.2f%%") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string bound_cell(const SourceResult& r) {
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

// A source's row of the suite page's summary table.
std::vector<std::string> summary_row(const SourceResult& r) {
  const bool any = r.rows_run > 0;
  // A short unit (ms, us, x) is named; a long one repeats the figure ("tokens/s/GPU").
  return {r.source,
          r.unit.size() <= 3 && !r.unit.empty() && r.unit != r.figure
              ? r.figure + " (" + r.unit + ")"
              : r.figure,
          std::to_string(r.rows_run) + "/" + std::to_string(r.rows_total),
          any ? percent(r.mape) : "-",
          any ? percent(r.median) : "-",
          any ? percent(r.worst) : "-",
          any ? percent(r.bias, "%+.2f%%") : "-",
          r.median_step_error ? percent(*r.median_step_error, "%+.2f%%") : "-",
          bound_cell(r),
          !r.pass                   ? "FAIL"
          : !any && r.verdicts == 0 ? "n/a"
                                    : "pass"};
}

// A source's rows for the page's error chart, each with why it did not run or its out-of-memory
// verdict.
reports::ValidateSource html_source(const SourceResult& r) {
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
  return s;
}

}  // namespace

void write_suite_html(std::ostream& out, const std::string& suite, bool use_profiles,
                      const std::string& generator, const std::vector<SourceResult>& results) {
  reports::ValidateHtmlInput in;
  in.title = "validate: " + suite;
  size_t failed = 0, rows = 0, run = 0;
  for (const auto& r : results) {
    failed += r.pass ? 0 : 1;
    rows += r.rows_total;
    run += r.rows_run;
  }
  in.facts = {{"suite", suite},
              {"sources", std::to_string(results.size()) + " (" + std::to_string(run) + " of " +
                              std::to_string(rows) + " rows run)"},
              {"predicted with",
               !use_profiles ? "datasheet figures (--no-profile)" : "each GPU's shipped profile"},
              {"verdict", failed ? std::to_string(failed) + " source(s) beyond their bound"
                                 : "every source within its bound"},
              {"clustersim", generator}};
  in.summary.header = {"source", "figure", "rows run",          "MAPE",  "median",
                       "worst",  "bias",   "median step error", "bound", "verdict"};
  for (const auto& r : results) {
    in.summary.rows.push_back(summary_row(r));
    in.sources.push_back(html_source(r));
  }
  in.by_profile.header = {"profile", "runs", "precisions", "MAPE", "worst", "sources"};
  for (const auto& p : profile_errors(results)) {
    in.by_profile.rows.push_back({p.profile, std::to_string(p.runs), sources_cell(p.precisions),
                                  percent(p.mape), percent(p.worst), sources_cell(p.sources)});
  }
  in.by_profile_stack.header = {"profile", "stack", "runs",   "precisions",
                                "MAPE",    "worst", "sources"};
  for (const auto& p : profile_stack_errors(results)) {
    in.by_profile_stack.rows.push_back({p.profile, p.stack, std::to_string(p.runs),
                                        sources_cell(p.precisions), percent(p.mape),
                                        percent(p.worst), sources_cell(p.sources)});
  }
  reports::write_validate_html(out, in);
}

void write_table_json(std::ostream& out, const std::string& table, unsigned seed,
                      const std::vector<TableRow>& rows, const TableFit& tf,
                      const std::vector<size_t>& train, const std::vector<size_t>& test,
                      const TableErrors& e, size_t failed) {
  auto summary = [](const ErrorSummary& x) {
    return json{{"rows", x.rows}, {"mape", x.mape}, {"median", x.median}, {"worst", x.worst}};
  };
  json factors = json::array();
  for (int i = 0; i < kFactorCount; ++i) {
    // In the unit the text report prints (us and ms rather than seconds).
    const std::string unit = Factors::unit(i);
    const double scale = unit == "us" ? 1e6 : unit == "ms" ? 1e3 : 1.0;
    factors.push_back({{"name", Factors::name(i)},
                       {"value", tf.factors.v[static_cast<size_t>(i)] * scale},
                       {"unit", unit}});
  }
  std::vector<char> held_out(rows.size(), 0);
  for (size_t i : test) held_out[i] = 1;
  json by_parallelism = json::array();
  for (const auto& [type, x] : errors_by_parallelism(rows, tf.parts, tf.factors, test)) {
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
         {"parallelism", parallelism_type(r)},
         {"held_out", held_out[i] != 0},
         {"measured_s", r.measured_s},
         {"predicted_s", or_null(ok, predicted)},
         {"error_percent", or_null(ok, 100 * (predicted - r.measured_s) / r.measured_s)},
         {"error", p.error}});
  }
  const json j = {{"schema_version", reports::kSchemaVersion},
                  {"kind", "validate"},
                  {"mode", "table"},
                  {"table", table},
                  {"seed", seed},
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
  out << j.dump(2) << "\n";
}

}  // namespace cs::validate
