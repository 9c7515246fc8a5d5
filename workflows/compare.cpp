#include "workflows/compare.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation_report.h"
#include "reports/html_report.h"
#include "workflows/simulate.h"

namespace cs::workflows {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string label_of(const std::string& file, const std::vector<scenario::KeyOverride>& set) {
  std::string out = file;
  for (const auto& o : set) out += " --set " + o.key + "=" + o.value;
  return out;
}

// B against A: the relative change of a figure ("+12.3%"), "" when A's is zero or they are equal.
std::string relative(double a, double b) {
  if (a == 0 || a == b) return "";
  return fmt("%+.1f%%", 100.0 * (b / a - 1.0));
}

// B against A in percentage points ("+1.5 points"), "" when they round alike.
std::string points(double a, double b) {
  const std::string diff = fmt("%+.1f points", 100.0 * (b - a));
  return diff == "+0.0 points" || diff == "-0.0 points" ? "" : diff;
}

// One row per figure: its name, A's, B's, and how B differs.
using Row = std::array<std::string, 4>;

std::vector<Row> figure_rows(const Comparison& c) {
  const CompareSide& a = c.a;
  const CompareSide& b = c.b;
  std::vector<Row> rows;
  rows.push_back({"scenario", a.scenario, b.scenario, ""});
  rows.push_back({"layout", a.layout, b.layout, ""});
  rows.push_back({"GPUs", std::to_string(a.gpus), std::to_string(b.gpus), ""});
  rows.push_back({"step time", format_time(a.step_time), format_time(b.step_time),
                  relative(a.step_time.seconds(), b.step_time.seconds())});
  rows.push_back({"tokens/s", fmt("%.0f", a.tokens_per_second), fmt("%.0f", b.tokens_per_second),
                  relative(a.tokens_per_second, b.tokens_per_second)});
  rows.push_back(
      {"MFU", fmt("%.1f%%", 100.0 * a.mfu), fmt("%.1f%%", 100.0 * b.mfu), points(a.mfu, b.mfu)});
  auto memory = [](const CompareSide& s) {
    return format_bytes(Bytes{s.peak_memory}) +
           (s.capacity > 0 ? (s.fits ? " (fits)" : " (OOM)") : "");
  };
  rows.push_back(
      {"peak memory", memory(a), memory(b),
       relative(static_cast<double>(a.peak_memory), static_cast<double>(b.peak_memory))});
  std::map<std::string, std::pair<int64_t, int64_t>> categories;
  for (const auto& [k, v] : a.memory_at_peak) categories[k].first = v;
  for (const auto& [k, v] : b.memory_at_peak) categories[k].second = v;
  for (const auto& [k, v] : categories) {
    rows.push_back({"  " + k, format_bytes(Bytes{v.first}), format_bytes(Bytes{v.second}),
                    relative(static_cast<double>(v.first), static_cast<double>(v.second))});
  }
  rows.push_back({"exposed communication", format_time(a.exposed_communication),
                  format_time(b.exposed_communication),
                  relative(a.exposed_communication.seconds(), b.exposed_communication.seconds())});
  rows.push_back({"bubble", fmt("%.1f%%", 100.0 * a.bubble), fmt("%.1f%%", 100.0 * b.bubble),
                  points(a.bubble, b.bubble)});
  rows.push_back({"bottleneck", a.bottleneck, b.bottleneck, ""});
  return rows;
}

driver::SimulationResult simulate_side(scenario::Scenario s, const CompareRequest& r,
                                       std::unique_ptr<driver::Platform>& platform) {
  apply_profile_flags(s, r.profile, r.no_profile);
  platform = std::make_unique<driver::Platform>(s);
  driver::SimulateOptions options;
  options.with_baseline = false;
  options.suggest = false;
  options.memory_samples = false;
  return driver::simulate(s, options, platform.get());
}

}  // namespace

CompareSide compare_side(const std::string& label, const driver::SimulationResult& r,
                         const driver::Platform& platform) {
  const sim::Report& rep = r.report;
  CompareSide s;
  s.label = label;
  s.scenario = r.scenario.name;
  const auto& l = r.scenario.layout;
  s.layout = "TP " + std::to_string(l.tp) + (l.cp > 1 ? " x CP " + std::to_string(l.cp) : "") +
             " x PP " + std::to_string(l.pp) + " x DP " + std::to_string(l.dp) +
             (l.ep > 1 ? " (EP " + std::to_string(l.ep) + ")" : "") + ", " +
             std::string(strategy::to_string(l.data_parallel)) +
             (l.pp > 1 ? ", " + std::string(strategy::to_string(l.schedule)) : "");
  s.gpus = r.scenario.gpus;
  s.step_time = rep.step_time;
  s.tokens_per_second = rep.tokens_per_second;
  s.mfu = rep.mfu;
  s.peak_memory = rep.peak_memory;
  s.capacity = rep.memory_capacity.count;
  s.fits = rep.fits;
  const auto& at_peak = rep.ranks[rep.peak_index].memory.at_peak;
  for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
    if (const int64_t v = at_peak[static_cast<size_t>(c)]; v != 0)
      s.memory_at_peak[std::string(ir::to_string(static_cast<ir::MemoryCategory>(c)))] = v;
  }
  s.exposed_communication = sim::mean_rank_times(rep).exposed_communication;
  for (size_t st = 0; st < rep.stages.size(); ++st)
    s.bubble = std::max(s.bubble, rep.bubble_fraction(st));
  const auto lines = driver::bottleneck_lines(r, &platform);
  if (!lines.empty()) s.bottleneck = lines.front();
  return s;
}

std::vector<KeyChange> changed_keys(const std::map<std::string, std::string>& a,
                                    const std::map<std::string, std::string>& b) {
  std::vector<KeyChange> out;
  auto ia = a.begin();
  auto ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      out.push_back({ia->first, ia->second, ""});
      ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      out.push_back({ib->first, "", ib->second});
      ++ib;
    } else {
      if (ia->second != ib->second) out.push_back({ia->first, ia->second, ib->second});
      ++ia;
      ++ib;
    }
  }
  return out;
}

Comparison compare_scenarios(const CompareRequest& r) {
  const std::string b_file = r.b_file.empty() ? r.a_file : r.b_file;
  if (r.b_file.empty() && r.set_b.empty())
    throw UserError("compare needs two scenario files, or one and --set KEY=VALUE for the second");
  Comparison c;
  std::unique_ptr<driver::Platform> platform;
  const auto a = simulate_side(scenario::load_scenario(r.a_file, r.set_a), r, platform);
  c.a = compare_side(label_of(r.a_file, r.set_a), a, *platform);
  const auto b = simulate_side(scenario::load_scenario(b_file, r.set_b), r, platform);
  c.b = compare_side(label_of(b_file, r.set_b), b, *platform);
  c.changes = changed_keys(scenario::scenario_keys(r.a_file, r.set_a),
                           scenario::scenario_keys(b_file, r.set_b));
  return c;
}

void print_comparison(std::ostream& out, const Comparison& c) {
  out << "A  " << c.a.label << "\nB  " << c.b.label << "\n\n";
  if (c.changes.empty()) out << "changed     nothing: the two scenarios have the same keys\n";
  for (size_t i = 0; i < c.changes.size(); ++i) {
    const auto& k = c.changes[i];
    out << (i == 0 ? "changed     " : "            ") << k.key << ": "
        << (k.a.empty() ? "(absent)" : k.a) << " -> " << (k.b.empty() ? "(absent)" : k.b) << "\n";
  }
  out << "\n";
  // The layouts and bottlenecks are sentences: they go below the table.
  auto long_text = [](const Row& row) { return row[0] == "bottleneck" || row[0] == "layout"; };
  const auto rows = figure_rows(c);
  size_t width = 0;
  for (const Row& row : rows) {
    if (!long_text(row)) width = std::max({width, row[1].size(), row[2].size()});
  }
  width = std::min<size_t>(width, 40);
  char line[512];
  std::snprintf(line, sizeof line, "%-22s  %-*s  %-*s  %s\n", "", static_cast<int>(width), "A",
                static_cast<int>(width), "B", "B vs A");
  out << line;
  for (const Row& row : rows) {
    if (long_text(row)) continue;
    std::snprintf(line, sizeof line, "%-22s  %-*s  %-*s  %s\n", row[0].c_str(),
                  static_cast<int>(width), row[1].c_str(), static_cast<int>(width), row[2].c_str(),
                  row[3].c_str());
    out << line;
  }
  out << "\nlayout      A: " << c.a.layout << "\n            B: " << c.b.layout << "\n";
  out << "bottleneck  A: " << c.a.bottleneck << "\n            B: " << c.b.bottleneck << "\n";
}

void write_comparison_json(std::ostream& out, const Comparison& c) {
  using nlohmann::json;
  auto side = [](const CompareSide& s) {
    return json{{"label", s.label},
                {"scenario", s.scenario},
                {"layout", s.layout},
                {"gpus", s.gpus},
                {"step_time_s", s.step_time.seconds()},
                {"tokens_per_s", s.tokens_per_second},
                {"mfu", s.mfu},
                {"memory",
                 {{"peak_bytes", s.peak_memory},
                  {"capacity_bytes", s.capacity},
                  {"fits", s.fits},
                  {"at_peak_bytes", s.memory_at_peak}}},
                {"exposed_communication_s", s.exposed_communication.seconds()},
                {"bubble", s.bubble},
                {"bottleneck", s.bottleneck}};
  };
  json changes = json::array();
  for (const auto& k : c.changes) changes.push_back({{"key", k.key}, {"a", k.a}, {"b", k.b}});
  const json j = {{"kind", "compare"}, {"a", side(c.a)}, {"b", side(c.b)}, {"changes", changes}};
  out << j.dump(2) << '\n';
}

void write_comparison_html(std::ostream& out, const Comparison& c) {
  reports::CompareHtmlInput in;
  in.title = c.a.scenario + " vs " + c.b.scenario;
  in.facts = {{"A", c.a.label}, {"B", c.b.label}};
  in.figures.header = {"", "A", "B", "B vs A"};
  for (const Row& row : figure_rows(c)) in.figures.rows.push_back({row.begin(), row.end()});
  in.changes.header = {"key", "A", "B"};
  for (const auto& k : c.changes) in.changes.rows.push_back({k.key, k.a, k.b});
  reports::write_compare_html(out, in);
}

void compare(const CompareRequest& request, std::ostream& out) {
  const Comparison c = compare_scenarios(request);
  print_comparison(out, c);
  if (!request.json.empty())
    write_output_file(request.json, [&](std::ostream& f) { write_comparison_json(f, c); });
  if (!request.html.empty())
    write_output_file(request.html, [&](std::ostream& f) { write_comparison_html(f, c); });
}

}  // namespace cs::workflows
