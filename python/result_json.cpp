#include "python/result_json.h"

#include <cmath>
#include <sstream>
#include <string>

#include "driver/simulation_report.h"
#include "taskgraph/task_graph.h"

namespace py = pybind11;
using nlohmann::json;

namespace cs::python {

// The report exactly as `clustersim simulate --json` writes it: the one writer, read back.
json report_json(const driver::SimulationResult& r) {
  std::ostringstream out;
  driver::write_report_json(out, r);
  return json::parse(out.str());
}

json plan_rows_json(const planner::PlanResult& r) {
  json rows = json::array();
  for (const auto& e : r.evaluations) {
    const auto& c = r.enumeration.candidates[e.candidate];
    rows.push_back({{"layout", c.describe()},
                    {"tp", c.layout.tp},
                    {"cp", c.layout.cp},
                    {"pp", c.layout.pp},
                    {"dp", c.layout.dp},
                    {"ep", c.layout.ep},
                    {"etp", c.layout.etp},
                    {"first_stage_layers", c.layout.first_stage_layers},
                    {"last_stage_layers", c.layout.last_stage_layers},
                    {"stage_layers", c.split},
                    {"data_parallel", strategy::to_string(c.layout.data_parallel)},
                    {"micro_batch", c.training.micro_batch},
                    {"schedule", strategy::to_string(c.layout.schedule)},
                    {"virtual_stages", c.layout.virtual_stages},
                    {"recompute", model::to_string(c.training.recompute)},
                    {"bucket_size_bytes", c.layout.bucket_size.count},
                    {"level", e.detailed ? "detailed" : "fast"},
                    {"step_time_s", e.step_time.seconds()},
                    {"tokens_per_s", e.tokens_per_second},
                    {"mfu", e.mfu},
                    {"peak_memory_bytes", e.peak_memory},
                    {"fits", e.fits},
                    {"bubble", e.bubble},
                    {"exposed_communication_s", e.exposed_communication.seconds()},
                    {"error", e.error}});
  }
  return rows;
}

namespace {

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json suite_row_json(const validate::SuiteRow& row) {
  return {{"index", row.index},
          {"line", row.line},
          {"label", row.label},
          {"run", row.run},
          {"not_expressible", row.not_expressible},
          {"reasons", row.reasons},
          {"measured", row.measured},
          {"predicted", row.predicted},
          {"error_percent", row.error_percent},
          {"step_error_percent", optional_json(row.step_error_percent)},
          {"profile", row.profile},
          {"stack", row.stack},
          {"verdict_row", row.verdict_row},
          {"verdict_ok", row.verdict_ok},
          {"memory_measured_mib", optional_json(row.memory_measured_mib)},
          {"memory_predicted_mib", optional_json(row.memory_predicted_mib)},
          {"memory_error_percent", optional_json(row.memory_error_percent)}};
}

}  // namespace

json suite_source_json(const validate::SourceResult& r) {
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(suite_row_json(row));
  return {{"file", r.file},
          {"source", r.source},
          {"citation", r.citation},
          {"kind", r.kind},
          {"figure", r.figure},
          {"unit", r.unit},
          {"rows_total", r.rows_total},
          {"rows_run", r.rows_run},
          {"verdicts", r.verdicts},
          {"verdicts_ok", r.verdicts_ok},
          {"mape", r.mape},
          {"median", r.median},
          {"worst", r.worst},
          {"bias", r.bias},
          {"bound_mape", optional_json(r.bound_mape)},
          {"bound_worst", optional_json(r.bound_worst)},
          {"memory_column", r.memory_column},
          {"memory_rows", r.memory_rows},
          {"memory_mape", r.memory_mape},
          {"memory_worst", r.memory_worst},
          {"memory_bias", r.memory_bias},
          {"bound_memory_mape", optional_json(r.bound_memory_mape)},
          {"passed", r.pass},  // `pass` is a Python keyword
          {"profiles", r.profiles},
          {"rows", rows}};
}

py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return d;
    }
    case json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case json::value_t::string:
      return py::str(j.get<std::string>());
    case json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case json::value_t::number_float: {
      const double d = j.get<double>();
      return std::isfinite(d) ? py::object(py::float_(d)) : py::none();
    }
    default:
      return py::none();
  }
}

}  // namespace cs::python
