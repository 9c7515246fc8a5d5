#include "python/result_json.h"

#include <cmath>
#include <string>

#include "taskgraph/task_graph.h"

namespace py = pybind11;
using nlohmann::json;

namespace cs::python {

namespace {

// The "schema_version" the command line writes beside "kind" (cli/report_output.h).
constexpr const char* kSchemaVersion = "1";

json layout_json(const driver::SimulationResult& r) {
  const auto& l = r.scenario.layout;
  return {{"tp", l.tp},
          {"pp", l.pp},
          {"dp", l.dp},
          {"data_parallel", strategy::to_string(l.data_parallel)},
          {"bucket_size_bytes", l.bucket_size.count},
          {"sync_units", r.step.buckets.size()},
          {"sequence_parallel", l.sequence_parallel},
          {"schedule", strategy::to_string(l.schedule)},
          {"virtual_stages", l.virtual_stages},
          {"order", strategy::order_string(l)},
          {"cp", l.cp},
          {"ep", l.ep},
          {"etp", l.etp},
          {"first_stage_layers", l.first_stage_layers},
          {"last_stage_layers", l.last_stage_layers}};
}

json rank_json(const sim::RankReport& rr) {
  json cats = json::object();
  for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
    cats[std::string(ir::to_string(static_cast<ir::MemoryCategory>(c)))] =
        rr.memory.at_peak[static_cast<size_t>(c)];
  }
  return {{"rank", rr.cluster_rank},
          {"stage", rr.stage},
          {"compute_s", rr.compute.seconds()},
          {"communication_s", rr.communication.seconds()},
          {"exposed_communication_s", rr.exposed_communication.seconds()},
          {"idle_s", rr.idle.seconds()},
          {"peer_wait_s", rr.peer_wait.seconds()},
          {"overlap_percent", rr.overlap_percent},
          {"peak_memory_bytes", rr.memory.peak},
          {"peak_time_s", rr.memory.peak_time.seconds()},
          {"memory_at_peak", cats}};
}

// Per-rank and per-stage figures, collectives, suggestions and links.
void add_breakdowns(json& j, const driver::SimulationResult& r) {
  const auto& rep = r.report;
  json coll = json::object();
  for (const auto& [type, stat] : rep.collectives) {
    coll[type] = {
        {"calls", stat.calls}, {"bytes", stat.bytes.count}, {"busy_s", stat.time.seconds()}};
  }
  j["collectives_per_step_rank0"] = coll;
  json ranks = json::array();
  for (const auto& rr : rep.ranks) ranks.push_back(rank_json(rr));
  j["ranks"] = ranks;
  json stages = json::array();
  for (size_t st = 0; st < rep.stages.size(); ++st) {
    stages.push_back(
        {{"bubble_fraction", rep.bubble_fraction(st)}, {"idle_s", rep.stages[st].idle.seconds()}});
  }
  j["stages"] = stages;
  json suggestions = json::array();
  for (const auto& sg : r.suggestions) {
    suggestions.push_back({{"change", sg.change},
                           {"peak_memory_bytes", sg.peak_memory},
                           {"step_time_s", sg.step_time.seconds()},
                           {"fits", sg.fits}});
  }
  j["suggestions"] = suggestions;
  json links = json::array();
  for (const auto& l : rep.links) {
    links.push_back({{"link", l.name},
                     {"kind", l.kind},
                     {"bytes", l.bytes},
                     {"busy_s", l.busy_seconds},
                     {"utilisation", l.utilisation}});
  }
  j["network"] = {{"fidelity", cost::to_string(r.scenario.fidelity)}, {"links", links}};
}

}  // namespace

json report_json(const driver::SimulationResult& r) {
  const auto& rep = r.report;
  const auto& s = r.scenario;
  json j;
  j["schema_version"] = kSchemaVersion;
  j["kind"] = "report";
  j["scenario"] = s.name;
  j["model"] = {{"name", s.model.name}, {"parameters", r.step.parameters}};
  j["cluster"] = {{"name", s.cluster_name}, {"gpu", s.gpu}, {"gpus", s.gpus}, {"nodes", s.nodes}};
  j["layout"] = layout_json(r);
  j["profile"] = {{"name", s.profile ? s.profile->name : std::string()},
                  {"file", s.profile ? s.profile->file : std::string()},
                  {"summary", driver::profile_summary(s)}};
  j["representative_ranks"] = r.step.graph.representative();
  j["accumulation_steps"] = r.step.micro_batches;
  j["tasks"] = rep.tasks;
  j["step_time_s"] = rep.step_time.seconds();
  j["tokens_per_s"] = rep.tokens_per_second;
  j["samples_per_s"] = rep.samples_per_second;
  j["mfu"] = rep.mfu;
  if (r.baseline) {
    j["speedup"] = r.speedup;
    j["baseline_step_time_s"] = r.baseline->step_time.seconds();
    j["scaling_efficiency"] = r.speedup / s.gpus;
  }
  add_breakdowns(j, r);
  j["memory"] = {{"peak_bytes", rep.peak_memory},
                 {"peak_rank", rep.ranks[rep.peak_index].cluster_rank},
                 {"capacity_bytes", rep.memory_capacity.count},
                 {"fits", rep.fits}};
  return j;
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
