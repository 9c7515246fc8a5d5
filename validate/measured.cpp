#include "validate/measured.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/text_file.h"

namespace cs::validate {
namespace {

std::string class_of(const ir::TaskGraph& g, ir::TaskId t) {
  const ir::Task& task = g.task(t);
  switch (task.kind) {
    case ir::TaskKind::compute:
      return std::string(ir::to_string(g.compute(task).op));
    case ir::TaskKind::collective:
      return std::string(ir::to_string(g.collective(task).type));
    case ir::TaskKind::send:
    case ir::TaskKind::recv:
      return "send/recv";
    default:
      return "";
  }
}

double seconds(const sim::TaskTiming& t) { return (t.end - t.start).seconds(); }

}  // namespace

void write_measured(std::ostream& out, const MeasuredRun& m) {
  nlohmann::json j;
  j["device"] = m.device;
  j["step_times_s"] = m.step_times_s;
  j["median_step_s"] = m.median_step_s;
  j["fastest_step_s"] = m.fastest_step_s;
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : m.timeline.tasks) tasks.push_back({t.start.seconds(), t.end.seconds()});
  j["tasks"] = tasks;
  nlohmann::json peaks = nlohmann::json::array();
  for (const auto& r : m.timeline.memory) peaks.push_back(r.peak);
  j["peak_memory_bytes"] = peaks;
  out << j.dump() << "\n";
}

MeasuredRun read_measured(const std::string& path) {
  // Bounded (common/text_file.h) at 1 GiB: every task's start and end of up to 128 ranks.
  std::istringstream in(read_text_file(path, "measured run", int64_t{1} << 30));
  nlohmann::json j;
  try {
    in >> j;
    MeasuredRun m;
    m.device = j.at("device").get<std::string>();
    m.step_times_s = j.at("step_times_s").get<std::vector<double>>();
    m.median_step_s = j.at("median_step_s").get<double>();
    if (m.step_times_s.empty()) throw UserError(path + ": the measured run has no steps");
    m.fastest_step_s = j.contains("fastest_step_s")
                           ? j.at("fastest_step_s").get<double>()
                           : *std::min_element(m.step_times_s.begin(), m.step_times_s.end());
    for (const auto& t : j.at("tasks")) {
      const SimTime a = SimTime::from_seconds(t.at(0).get<double>()),
                    b = SimTime::from_seconds(t.at(1).get<double>());
      m.timeline.tasks.push_back({a, a, b});
      m.timeline.makespan = std::max(m.timeline.makespan, b);
    }
    for (const auto& p : j.at("peak_memory_bytes")) {
      sim::RankMemory r;
      r.peak = p.get<int64_t>();
      m.timeline.memory.push_back(r);
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": not a measured run written by `clustersim execute --timeline` (" +
                    e.what() + ")");
  }
}

Comparison compare(const ir::TaskGraph& g, const sim::Timeline& predicted,
                   const MeasuredRun& measured) {
  if (measured.timeline.tasks.size() != g.size()) {
    throw UserError("the measured run has " + std::to_string(measured.timeline.tasks.size()) +
                    " tasks but the scenario's graph has " + std::to_string(g.size()) +
                    ": it was measured on a different scenario");
  }
  Comparison c;
  c.predicted_step_s = predicted.makespan.seconds();
  c.measured_step_s = measured.median_step_s;
  c.step_error_percent = 100 * (c.predicted_step_s - c.measured_step_s) / c.measured_step_s;
  std::map<std::string, std::pair<double, double>> cls, phase;
  std::vector<std::pair<double, ir::TaskId>> err;
  std::vector<double> gemm_errors;
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    const std::string k = class_of(g, t);
    if (k.empty()) continue;
    const double p = seconds(predicted.tasks[t]), m = seconds(measured.timeline.tasks[t]);
    cls[k].first += p;
    cls[k].second += m;
    auto& ph = phase[std::string(ir::to_string(g.task(t).phase))];
    ph.first += p;
    ph.second += m;
    err.emplace_back(std::abs(p - m), t);
    if (g.task(t).kind == ir::TaskKind::compute && g.compute(g.task(t)).op == ir::OpClass::gemm &&
        m > 0)
      gemm_errors.push_back(100 * std::abs(p - m) / m);
  }
  if (!gemm_errors.empty()) {
    std::sort(gemm_errors.begin(), gemm_errors.end());
    const size_t n = gemm_errors.size();
    c.gemm_median_error_percent =
        n % 2 ? gemm_errors[n / 2] : (gemm_errors[n / 2 - 1] + gemm_errors[n / 2]) / 2;
    c.gemm_tasks = n;
  }
  for (const auto& [k, v] : cls) c.by_class.push_back({k, v.first, v.second});
  for (const auto& [k, v] : phase) c.by_phase.push_back({k, v.first, v.second});
  std::sort(err.begin(), err.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < err.size() && i < 10; ++i) {
    const ir::TaskId t = err[i].second;
    c.worst.push_back({g.task_name(t) + " (rank " + std::to_string(g.task(t).rank) + ")",
                       seconds(predicted.tasks[t]), seconds(measured.timeline.tasks[t])});
  }
  return c;
}

void write_side_by_side_trace(std::ostream& out, const ir::TaskGraph& g,
                              const sim::Timeline& predicted, const sim::Timeline& measured) {
  nlohmann::json events = nlohmann::json::array();
  for (int side = 0; side < 2; ++side) {
    const sim::Timeline& tl = side == 0 ? predicted : measured;
    const int base = side == 0 ? 0 : 1000;
    for (ir::RankId r = 0; r < g.ranks(); ++r) {
      events.push_back({{"ph", "M"},
                        {"name", "process_name"},
                        {"pid", base + static_cast<int>(r)},
                        {"args",
                         {{"name", std::string(side == 0 ? "predicted" : "measured") + " rank " +
                                       std::to_string(r)}}}});
    }
    for (ir::TaskId t = 0; t < g.size() && t < tl.tasks.size(); ++t) {
      const ir::Task& task = g.task(t);
      if (task.kind == ir::TaskKind::memory) continue;
      events.push_back({{"ph", "X"},
                        {"name", g.task_name(t)},
                        {"pid", base + static_cast<int>(task.rank)},
                        {"tid", task.stream},
                        {"ts", tl.tasks[t].start.us()},
                        {"dur", (tl.tasks[t].end - tl.tasks[t].start).us()}});
    }
  }
  out << nlohmann::json{{"traceEvents", events}}.dump() << "\n";
}

}  // namespace cs::validate
