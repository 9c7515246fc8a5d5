#include "validate/kineto_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "reports/schema_version.h"

namespace cs::validate {
namespace {

// Every name either side has, in order.
std::set<std::string> names_of(const std::map<std::string, double>& predicted,
                               const std::map<std::string, double>& measured) {
  std::set<std::string> keys;
  for (const auto& [k, v] : predicted) keys.insert(k);
  for (const auto& [k, v] : measured) keys.insert(k);
  return keys;
}

double at(const std::map<std::string, double>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? 0.0 : it->second;
}

void print_table(std::ostream& out, const char* title, const std::map<std::string, double>& pred,
                 const std::map<std::string, double>& meas) {
  char line[240];
  out << "\n" << title << "\n";
  for (const auto& k : names_of(pred, meas)) {
    const double a = at(pred, k), b = at(meas, k);
    if (b > 0)
      std::snprintf(line, sizeof line,
                    "  %-16s predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", k.c_str(),
                    a * 1e-3, b * 1e-3, error_percent(a, b));
    else
      std::snprintf(line, sizeof line,
                    "  %-16s predicted %10.3f ms  measured %10.3f ms  (none measured)\n", k.c_str(),
                    a * 1e-3, b * 1e-3);
    out << line;
  }
}

nlohmann::json rows_json(const std::map<std::string, double>& pred,
                         const std::map<std::string, double>& meas) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& k : names_of(pred, meas)) {
    const double a = at(pred, k), b = at(meas, k);
    out.push_back({{"name", k},
                   {"predicted_ms", a * 1e-3},
                   {"measured_ms", b * 1e-3},
                   {"error_percent", b > 0 ? json(error_percent(a, b)) : json(nullptr)}});
  }
  return out;
}

}  // namespace

double error_percent(double predicted, double measured) {
  return measured > 0 ? 100 * (predicted / measured - 1) : 0.0;
}

void print_kineto_comparison(std::ostream& out, const StepBreakdown& p, const StepBreakdown& m) {
  char line[240];
  std::snprintf(line, sizeof line,
                "step time   predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", p.step_us * 1e-3,
                m.step_us * 1e-3, error_percent(p.step_us, m.step_us));
  out << line;
  print_table(out, "kernel time by class", p.by_class, m.by_class);
  print_table(out, "communication by collective (NCCL kernels)", p.by_collective, m.by_collective);
  out << "\n";
  std::snprintf(line, sizeof line,
                "exposed communication (NCCL time under no compute kernel)\n  %-16s predicted "
                "%10.3f ms  measured %10.3f ms  %+7.1f%%\n",
                "exposed", p.exposed_us * 1e-3, m.exposed_us * 1e-3,
                error_percent(p.exposed_us, m.exposed_us));
  out << line;
}

namespace {

double share(double part, double whole) { return whole > 0 ? 100 * part / whole : 0.0; }

void print_shares(std::ostream& out, const char* title, const std::map<std::string, double>& m,
                  double step_us) {
  char line[240];
  out << title << "\n";
  for (const auto& [k, v] : m) {
    std::snprintf(line, sizeof line, "  %-16s %10.3f ms  %5.1f%% of the step\n", k.c_str(),
                  v * 1e-3, share(v, step_us));
    out << line;
  }
}

nlohmann::json ms_rows(const std::map<std::string, double>& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [k, v] : m) out.push_back({{"name", k}, {"measured_ms", v * 1e-3}});
  return out;
}

}  // namespace

void print_kineto_breakdown(std::ostream& out, int device, const StepBreakdown& m) {
  char line[240];
  std::snprintf(line, sizeof line, "device %d    step %10.3f ms (%s)\n", device, m.step_us * 1e-3,
                m.step_from.c_str());
  out << line;
  print_shares(out, "  kernel time by class", m.by_class, m.step_us);
  if (!m.by_collective.empty())
    print_shares(out, "  communication by collective (NCCL kernels)", m.by_collective, m.step_us);
  if (m.communication_us <= 0) {
    out << "  no communication kernels\n";
    return;
  }
  std::snprintf(line, sizeof line,
                "  communication %.3f ms, exposed (under no compute kernel) %.3f ms: %.1f%% "
                "hidden, %.1f%% of the step exposed\n",
                m.communication_us * 1e-3, m.exposed_us * 1e-3,
                100 - share(m.exposed_us, m.communication_us), share(m.exposed_us, m.step_us));
  out << line;
}

void write_kineto_analysis_json(std::ostream& out, const KinetoTrace& trace,
                                const std::vector<std::pair<int, StepBreakdown>>& devices) {
  using nlohmann::json;
  json rows = json::array();
  for (const auto& [device, m] : devices) {
    rows.push_back({{"device", device},
                    {"steps", m.steps},
                    {"step_from", m.step_from},
                    {"step_ms", m.step_us * 1e-3},
                    {"by_class", ms_rows(m.by_class)},
                    {"by_collective", ms_rows(m.by_collective)},
                    {"communication_ms", m.communication_us * 1e-3},
                    {"exposed_communication_ms", m.exposed_us * 1e-3}});
  }
  const json j = {{"schema_version", reports::kSchemaVersion},
                  {"kind", "validate"},
                  {"mode", "kineto_analysis"},
                  {"trace", trace.file},
                  {"gpu", trace.gpu_name},
                  {"rank", trace.rank >= 0 ? json(trace.rank) : json(nullptr)},
                  {"world_size", trace.world_size > 0 ? json(trace.world_size) : json(nullptr)},
                  {"breakdowns", rows}};
  out << j.dump(2) << "\n";
}

void write_kineto_comparison_json(std::ostream& out, const KinetoComparisonFacts& facts,
                                  const StepBreakdown& p, const StepBreakdown& m) {
  using nlohmann::json;
  const json j = {
      {"schema_version", reports::kSchemaVersion},
      {"kind", "validate"},
      {"mode", "kineto"},
      {"trace", facts.trace},
      {"scenario", facts.scenario},
      {"device", facts.device},
      {"devices", facts.devices},
      {"profile", facts.profile},
      {"steps", m.steps},
      {"step_from", m.step_from},
      {"step",
       {{"predicted_ms", p.step_us * 1e-3},
        {"measured_ms", m.step_us * 1e-3},
        {"error_percent", error_percent(p.step_us, m.step_us)}}},
      {"by_class", rows_json(p.by_class, m.by_class)},
      {"by_collective", rows_json(p.by_collective, m.by_collective)},
      {"exposed_communication",
       {{"predicted_ms", p.exposed_us * 1e-3},
        {"measured_ms", m.exposed_us * 1e-3},
        {"error_percent",
         m.exposed_us > 0 ? json(error_percent(p.exposed_us, m.exposed_us)) : json(nullptr)}}}};
  out << j.dump(2) << "\n";
}

}  // namespace cs::validate
