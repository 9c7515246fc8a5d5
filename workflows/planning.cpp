// `clustersim plan` and `clustersim sweep`: the planner's search and the sweep run, printed and
// written as JSON, CSV and HTML.
#include "workflows/planning.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "common/output_file.h"
#include "cost_models/device_spec.h"
#include "driver/simulation_report.h"
#include "interop/launch_writers.h"
#include "planner/plan_summary.h"
#include "planner/preset_scenario.h"
#include "reports/html_report.h"
#include "reports/schema_version.h"
#include "scenarios/scenario_writers.h"
#include "workflows/simulate.h"
#include "workflows/stragglers.h"

namespace cs::workflows {

const std::vector<std::pair<std::string, planner::Objective>>& objective_names() {
  static const std::vector<std::pair<std::string, planner::Objective>> names{
      {"throughput", planner::Objective::throughput}, {"memory", planner::Objective::memory}};
  return names;
}

std::string to_string(planner::Objective o) {
  for (const auto& [name, value] : objective_names()) {
    if (value == o) return name;
  }
  return "?";
}

// Progress on stderr. On a terminal, a bar redrawn in place. Otherwise (CI logs, `2> file`) a
// line after 5 s and then every 10 s of a long search, and a closing line for a stage that printed
// one, so a short run prints nothing (tests and scripts match the output) and a long one is not
// silent.
std::function<void(const char*, size_t, size_t)> progress_bar() {
  if (!isatty(STDERR_FILENO)) {
    using Clock = std::chrono::steady_clock;
    struct State {
      Clock::time_point start = Clock::now(), last = start;
      bool printed = false;  // a line of the current stage is out (it gets a closing line)
      bool any = false;      // any line is out: the next comes 10 s after it, the first after 5 s
    };
    return [st = std::make_shared<State>()](const char* stage, size_t done, size_t total) {
      const Clock::time_point now = Clock::now();
      const bool finished = done == total;
      if (now - st->last < std::chrono::seconds(st->any ? 10 : 5) && !(finished && st->printed))
        return;
      const double elapsed = std::chrono::duration<double>(now - st->start).count();
      std::fprintf(stderr, "plan: %s %zu/%zu (%.0f s)\n", stage, done, total, elapsed);
      std::fflush(stderr);
      st->last = now;
      st->printed = !finished;
      st->any = true;
    };
  }
  return [](const char* stage, size_t done, size_t total) {
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r%-9s [%s%s] %zu/%zu", stage,
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

std::string format_gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

namespace {

// The category that dominates a memory breakdown, as "optimizer_state (31.53 GiB, 59%)".
std::string dominant(const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak) {
  const auto best = static_cast<size_t>(planner::dominant_category(at_peak));
  int64_t total = 0;
  for (int64_t b : at_peak) total += b;
  char buf[128];
  std::snprintf(
      buf, sizeof buf, "%s (%s, %.0f%%)",
      std::string(ir::to_string(static_cast<ir::MemoryCategory>(best))).c_str(),
      format_gib(at_peak[best]).c_str(),
      total ? 100.0 * static_cast<double>(at_peak[best]) / static_cast<double>(total) : 0.0);
  return buf;
}

// One ranked row; `note` after the level (a tie, the folded alternatives).
void print_row(std::ostream& out, size_t rank, const planner::Candidate& c,
               const planner::Evaluation& e, const std::string& note) {
  char line[400];
  std::snprintf(line, sizeof line, "%4zu  %-68s %10s %10.0f %5.1f%% %10s %6.1f%% %10s  %s", rank,
                c.describe().c_str(), format_time(e.step_time).c_str(), e.tokens_per_second,
                100 * e.mfu, format_gib(e.peak_memory).c_str(), 100 * e.bubble,
                format_time(e.exposed_communication).c_str(), e.detailed ? "detailed" : "fast");
  out << line << note << "\n";
}

// "  (tie: within the expected error of 1; also b:100MiB)" for the ranked row `i`.
std::string row_note(const planner::PlanResult& r, size_t i) {
  std::vector<std::string> parts;
  if (i > 0 && i < r.tied) parts.emplace_back("tie: within the expected error of 1");
  if (const auto it = r.folded.find(r.ranked[i]); it != r.folded.end()) {
    std::string also = "also";
    for (size_t k : it->second) {
      const auto& l = r.enumeration.candidates[r.evaluations[k].candidate].layout;
      also += " b:" + std::to_string(l.bucket_size.count >> 20) + "MiB";
    }
    parts.push_back(also);
  }
  if (parts.empty()) return "";
  std::string out = "  (" + parts[0];
  for (size_t p = 1; p < parts.size(); ++p) out += "; " + parts[p];
  return out + ")";
}

// Which communication overlap a layout runs with (the stack's defaults where the layout admits
// them, or the scenario's flags): part of why one layout hides more than another.
std::string overlap_text(const planner::Candidate& c) {
  std::string out = std::string("tp_comm_overlap ") + (c.training.tp_comm_overlap ? "on" : "off") +
                    ", overlap_param_gather " + (c.training.overlap_param_gather ? "on" : "off") +
                    ", gradient reduction overlapped with backward";
  return out;
}

// Why a tied winner is first (the robustness figure), or nullptr when it did not tie.
const char* tied_reason(planner::WinReason reason) {
  switch (reason) {
    case planner::WinReason::more_memory_left:
      return "its memory left";
    case planner::WinReason::less_exposed_when_tied:
      return "its less exposed communication";
    case planner::WinReason::smaller_bubble_when_tied:
      return "its smaller pipeline bubble";
    default:
      return nullptr;
  }
}

void explain(std::ostream& out, const planner::PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  const auto& w = r.evaluations[r.ranked[0]];
  out << "\nwhy the winner wins\n";
  out << "  winner     " << cands[w.candidate].describe() << "\n";
  out << "             " << overlap_text(cands[w.candidate]) << "\n";
  if (r.ranked.size() < 2) {
    out << "  it is the only layout that fits\n";
    return;
  }
  const auto& u = r.evaluations[r.ranked[1]];
  out << "  runner-up  " << cands[u.candidate].describe() << "\n";
  out << "             " << overlap_text(cands[u.candidate]) << "\n";
  auto row = [&](const char* what, SimTime a, SimTime b) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-28s %12s %12s %+12.3f ms\n", what, format_time(a).c_str(),
                  format_time(b).c_str(), (a - b).ms());
    out << line;
  };
  char head[160];
  std::snprintf(head, sizeof head, "  %-28s %12s %12s %15s\n", "per rank (mean)", "winner",
                "runner-up", "difference");
  out << head;
  row("step time", w.step_time, u.step_time);
  row("compute", w.compute, u.compute);
  row("exposed communication", w.exposed_communication, u.exposed_communication);
  row("idle (bubble, waiting)", w.idle, u.idle);
  out << "  peak memory                  " << format_gib(w.peak_memory) << " vs "
      << format_gib(u.peak_memory) << "\n";
  // The component that moved the most decides the verdict; a tie on time is broken by memory.
  const planner::WinnerVerdict v = planner::winner_verdict(r);
  if (const char* robust = tied_reason(v.reason)) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  within the expected error of the runner-up (its step %+.2f%% against the "
                  "runner-up's); ranked first for %s\n",
                  -100 * v.gap, robust);
    out << line;
    return;
  }
  if (v.reason == planner::WinReason::tie_lower_memory ||
      v.reason == planner::WinReason::tie_order) {
    out << "  as fast as the runner-up (within 0.05%); ranked first for "
        << (v.reason == planner::WinReason::tie_lower_memory ? "its lower peak memory"
                                                             : "coming first in enumeration order")
        << "\n";
    return;
  }
  const char* why =
      "less compute per GPU (less recomputation, better-shaped kernels, less replicated work)";
  if (v.reason == planner::WinReason::less_exposed_communication)
    why = "less exposed communication";
  else if (v.reason == planner::WinReason::less_idle)
    why = "a smaller pipeline bubble and less waiting";
  char line[160];
  std::snprintf(line, sizeof line, "  it is %.2f%% faster, mainly by ", 100 * v.gap);
  out << line << why << "\n";
}

void write_json(const std::string& path, const scenario::Scenario& base,
                const planner::PlanOptions& options, const planner::PlanResult& r, bool timing) {
  using nlohmann::json;
  json rows = json::array();
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    const auto& e = r.evaluations[k];
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
  const auto& cands = r.enumeration.candidates;
  auto name = [&](size_t k) { return cands[r.evaluations[k].candidate].describe(); };
  json ranked = json::array(), pareto = json::array(), folded = json::object();
  for (size_t k : r.ranked) ranked.push_back(name(k));
  for (const auto& [k, twins] : r.folded) {
    json alternatives = json::array();
    for (size_t t : twins) alternatives.push_back(name(t));
    folded[name(k)] = alternatives;
  }
  for (size_t k : r.pareto) pareto.push_back(name(k));
  json j = {
      {"schema_version", reports::kSchemaVersion},
      {"kind", "plan"},
      {"considered", r.enumeration.considered},
      {"valid", r.enumeration.candidates.size()},
      {"pruned", r.pruned.size()},
      {"simulated", r.evaluations.size()},
      {"unpriced", r.unpriced},
      {"out_of_memory", r.out_of_memory()},
      {"stack", model::to_string(base.training.stack)},
      {"memory_headroom_bytes", options.headroom.of(driver::device_of(base).memory_capacity.count)},
      {"usable_memory_bytes", r.usable_memory},
      {"expected_error", options.expected_error > 0 ? json(options.expected_error) : json(nullptr)},
      {"tied", r.tied},
      {"ranked", ranked},
      {"folded", folded},
      {"pareto", pareto},
      {"evaluations", rows}};
  // The search's wall-clock time only when asked: without it two runs write the same bytes.
  if (timing) j["seconds"] = r.seconds;
  OutputFile file(path);
  std::ostream& f = file.stream();
  f << j.dump(2) << "\n";
  file.commit();
}

void write_csv(const std::string& path, const planner::PlanResult& r) {
  OutputFile file(path);
  std::ostream& f = file.stream();
  f << "rank,layout,tp,cp,pp,dp,ep,data_parallel,micro_batch,schedule,virtual_stages,recompute,"
       "bucket_bytes,level,step_time_s,tokens_per_s,mfu,"
       "peak_memory_bytes,fits,bubble,exposed_communication_s\n";
  std::vector<size_t> rank_of(r.evaluations.size(), 0);
  for (size_t i = 0; i < r.ranked.size(); ++i) rank_of[r.ranked[i]] = i + 1;
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    const auto& e = r.evaluations[k];
    const auto& c = r.enumeration.candidates[e.candidate];
    f << (rank_of[k] ? std::to_string(rank_of[k]) : "") << ",\"" << c.describe() << "\","
      << c.layout.tp << "," << c.layout.cp << "," << c.layout.pp << "," << c.layout.dp << ","
      << c.layout.ep << "," << strategy::to_string(c.layout.data_parallel) << ","
      << c.training.micro_batch << "," << strategy::to_string(c.layout.schedule) << ","
      << c.layout.virtual_stages << "," << model::to_string(c.training.recompute) << ","
      << c.layout.bucket_size.count << "," << (e.detailed ? "detailed" : "fast") << ","
      << e.step_time.seconds() << "," << e.tokens_per_second << "," << e.mfu << "," << e.peak_memory
      << "," << (e.fits ? "true" : "false") << "," << e.bubble << ","
      << e.exposed_communication.seconds() << "\n";
  }
  file.commit();
}

// `plan --html`: the frontier chart and the ranked table (reports/html_report.h).
void write_plan_html(const std::string& path, const scenario::Scenario& base,
                     const cost::DeviceSpec& device, const planner::PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  reports::PlanHtmlInput in;
  in.title = "plan: " + base.model.name + " on " + std::to_string(base.gpus) + " x " + device.name;
  in.facts = {
      {"model", base.model.name},
      {"cluster", std::to_string(base.gpus) + " x " + device.name + " (" +
                      std::to_string(base.nodes) + " x " + base.cluster_name + ")"},
      {"training", "global batch " + std::to_string(base.training.global_batch) + ", seq " +
                       std::to_string(base.training.seq_len) + ", " +
                       std::string(model::to_string(base.training.precision))},
      {"layouts", std::to_string(r.enumeration.considered) + " enumerated, " +
                      std::to_string(cands.size()) + " valid, " + std::to_string(r.pruned.size()) +
                      " pruned by the memory bound, " + std::to_string(r.evaluations.size()) +
                      " simulated, " + std::to_string(r.ranked.size()) + " fit"}};
  in.capacity_gib = static_cast<double>(device.memory_capacity.count) / (1024.0 * 1024 * 1024);
  std::vector<size_t> rank_of(r.evaluations.size(), 0);
  std::vector<bool> on_front(r.evaluations.size(), false);
  for (size_t i = 0; i < r.ranked.size(); ++i) rank_of[r.ranked[i]] = i + 1;
  for (size_t k : r.pareto) on_front[k] = true;
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    const auto& e = r.evaluations[k];
    if (!e.error.empty() || e.step_time.ps <= 0) continue;  // failed to simulate: no point to draw
    in.points.push_back({cands[e.candidate].describe(), e.step_time.ms(),
                         static_cast<double>(e.peak_memory) / (1024.0 * 1024 * 1024), e.fits,
                         on_front[k], rank_of[k]});
  }
  in.ranked.header = {"rank",        "layout", "step",          "tokens/s", "MFU",
                      "peak memory", "bubble", "exposed comm.", "level"};
  char buf[64];
  for (size_t i = 0; i < r.ranked.size() && i < 100; ++i) {
    const auto& e = r.evaluations[r.ranked[i]];
    std::vector<std::string> row{std::to_string(i + 1),
                                 cands[e.candidate].describe() + row_note(r, i),
                                 format_time(e.step_time)};
    std::snprintf(buf, sizeof buf, "%.0f", e.tokens_per_second);
    row.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * e.mfu);
    row.emplace_back(buf);
    row.push_back(format_gib(e.peak_memory));
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * e.bubble);
    row.emplace_back(buf);
    row.push_back(format_time(e.exposed_communication));
    row.emplace_back(e.detailed ? "detailed" : "fast");
    in.ranked.rows.push_back(std::move(row));
  }
  OutputFile file(path);
  std::ostream& f = file.stream();
  reports::write_plan_html(f, in);
  file.commit();
}

void write_sweep_json(const std::string& path, const planner::SweepResult& r) {
  using nlohmann::json;
  json rows = json::array();
  for (const auto& row : r.rows) {
    json j = {{"value", row.value}, {"gpus", row.gpus}, {"error", row.error}};
    if (row.error.empty()) {
      j.update({{"step_time_s", row.step_time.seconds()},
                {"tokens_per_s", row.tokens_per_second},
                {"mfu", row.mfu},
                {"speedup", row.speedup},
                {"efficiency", row.efficiency >= 0 ? json(row.efficiency) : json(nullptr)},
                {"compute_s", row.compute.seconds()},
                {"exposed_communication_s", row.exposed_communication.seconds()},
                {"idle_s", row.idle.seconds()},
                {"peak_memory_bytes", row.peak_memory},
                {"fits", row.fits}});
    }
    rows.push_back(j);
  }
  const json j = {{"schema_version", reports::kSchemaVersion},
                  {"kind", "sweep"},
                  {"scenario", r.scenario},
                  {"axis", planner::to_string(r.axis)},
                  {"rows", rows}};
  OutputFile file(path);
  std::ostream& f = file.stream();
  f << j.dump(2) << "\n";
  file.commit();
}

// `sweep --html`: the sweep's SVG inline (its xmlns is not needed inside HTML, and the page
// names no address at all) and the table.
void write_sweep_html(const std::string& path, const planner::SweepResult& r) {
  reports::SweepHtmlInput in;
  in.title = "sweep: " + r.scenario + " over " + std::string(planner::to_string(r.axis));
  std::ostringstream svg;
  planner::write_sweep_svg(svg, r);
  in.svg = svg.str();
  const std::string xmlns = " xmlns=\"http://www.w3.org/2000/svg\"";
  if (const size_t at = in.svg.find(xmlns); at != std::string::npos) in.svg.erase(at, xmlns.size());
  size_t ran = 0;
  for (const auto& row : r.rows) ran += row.error.empty() ? 1 : 0;
  in.facts = {{"scenario", r.scenario},
              {"axis", std::string(planner::to_string(r.axis))},
              {"points", std::to_string(r.rows.size()) + " (" + std::to_string(ran) + " ran)"}};
  in.table.header = {std::string(planner::to_string(r.axis)),
                     "GPUs",
                     "step",
                     "tokens/s",
                     "MFU",
                     "speedup",
                     "efficiency",
                     "compute",
                     "exposed",
                     "idle",
                     "peak memory"};
  char buf[64];
  for (const auto& row : r.rows) {
    if (!row.error.empty()) {
      in.table.rows.push_back({row.value, "", row.error});
      continue;
    }
    std::vector<std::string> cells{row.value, std::to_string(row.gpus), format_time(row.step_time)};
    std::snprintf(buf, sizeof buf, "%.0f", row.tokens_per_second);
    cells.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * row.mfu);
    cells.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.3fx", row.speedup);
    cells.emplace_back(buf);
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * row.efficiency);
    cells.emplace_back(row.efficiency >= 0 ? buf : "-");
    cells.push_back(format_time(row.compute));
    cells.push_back(format_time(row.exposed_communication));
    cells.push_back(format_time(row.idle));
    cells.push_back(format_gib(row.peak_memory) + (row.fits ? "" : " (does not fit)"));
    in.table.rows.push_back(std::move(cells));
  }
  OutputFile file(path);
  std::ostream& f = file.stream();
  reports::write_sweep_html(f, in);
  file.commit();
}

scenario::Scenario plan_base(const std::string& file, const std::string& model,
                             const std::string& cluster, int gpus, int64_t global_batch,
                             int64_t seq, model::Precision precision,
                             model::AttentionImpl attention) {
  if (!file.empty()) {
    if (!model.empty() || !cluster.empty() || gpus || global_batch || seq) {
      throw UserError(
          "plan: give a scenario file or --model/--cluster/--gpus/--global-batch/--seq, not both");
    }
    return scenario::load_scenario(file);
  }
  if (model.empty() || cluster.empty() || !gpus || !global_batch || !seq) {
    throw UserError(
        "plan needs --model, --cluster, --gpus, --global-batch and --seq (or a scenario file); "
        "clustersim plan --help lists the options");
  }
  return planner::preset_scenario({model, cluster, gpus, global_batch, seq, precision, attention});
}

}  // namespace

namespace {

// The margins a layout is judged by: the headroom it must leave, and the expected error within
// which layouts tie.
void print_margins(std::ostream& out, const scenario::Scenario& base,
                   const planner::PlanOptions& options, const planner::PlanResult& r) {
  const int64_t capacity = driver::device_of(base).memory_capacity.count;
  out << "margins     a layout leaves " << format_gib(capacity - r.usable_memory) << " of "
      << format_gib(capacity) << " free (--memory-headroom); ";
  if (options.expected_error > 0) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "layouts within %.0f%% of the fastest (the profile's MAPE above) tie and are "
                  "ordered by memory left, exposed communication, bubble\n",
                  100 * options.expected_error);
    out << line;
  } else {
    out << "no measured error: no ties\n";
  }
}

// What was searched: the base, the layouts enumerated and pruned, and why.
void print_search(std::ostream& out, const scenario::Scenario& base,
                  const planner::PlanOptions& options, const planner::PlanResult& r,
                  const std::string& stack_why) {
  const auto& cands = r.enumeration.candidates;
  const auto& device = driver::device_of(base);
  out << "plan        " << base.model.name << " on " << base.gpus << " x " << device.name << " ("
      << base.nodes << " x " << base.cluster_name << "), global batch "
      << base.training.global_batch << ", seq " << base.training.seq_len << ", "
      << model::to_string(base.training.precision) << ", objective " << to_string(options.objective)
      << "\n";
  out << "profile     " << driver::profile_summary(base) << "\n";
  out << "stack       " << model::stack_summary(base.training.stack) << " (" << stack_why << ")\n";
  print_margins(out, base, options, r);
  out << "enumerated  " << r.enumeration.considered << " layouts: " << cands.size() << " valid, "
      << r.enumeration.considered - cands.size() << " rejected by the model or batch\n";
  for (const auto& [why, n] : r.enumeration.invalid)
    out << "              " << n << " x " << why << "\n";
  out << "pruned      " << r.pruned.size() << " by the memory bound ("
      << format_gib(r.usable_memory) << " usable per GPU)\n";
  for (const auto& [why, n] : r.pruned_reasons())
    out << "              " << n << " x " << why << "\n";
}

// The search stopped before simulating: survivors of the memory bound by pipeline and
// expert-parallel size, what would be simulated.
void print_not_simulated(std::ostream& out, const planner::PlanResult& r) {
  const auto by_pp_ep = planner::survivors_by_pp_ep(r);
  out << "not simulated: " << r.not_simulated << "\n";
  out << "            " << r.enumeration.candidates.size() - r.pruned.size()
      << " layouts pass the memory bound and would be simulated";
  if (!by_pp_ep.empty()) {
    out << " (pp/ep:";
    for (const auto& [k, n] : by_pp_ep) out << " " << k.first << "/" << k.second << " x" << n;
    out << ")";
  }
  out << "\n";
}

void print_simulated(std::ostream& out, const planner::PlanResult& r) {
  size_t detailed = 0;
  for (const auto& e : r.evaluations) detailed += e.detailed ? 1 : 0;
  char line[256];
  out << "priced      " << r.priced.size()
      << " layouts by a closed-form step time; simulated from the best down (--simulate)\n";
  if (r.unpriced > 0)
    out << "            " << r.unpriced
        << " of them could not be priced and come last, in enumeration order (first: "
        << r.first_unpriced_reason << ")\n";
  std::snprintf(line, sizeof line,
                "simulated   %zu layouts, %zu of them at the detailed level, in %.1f s\n",
                r.evaluations.size(), detailed, r.seconds);
  out << line;
  out << "            " << r.out_of_memory() << " did not fit in their own simulation; "
      << r.ranked.size() << " fit";
  if (r.failed()) out << "; " << r.failed() << " failed to simulate (see --json)";
  out << "\n";
  if (r.simulated_looking_for_fit > 0)
    out << "            " << r.simulated_looking_for_fit
        << " of them simulated further down the price order because none of the best-priced "
           "fit\n";
  out << "\n";
}

// No layout fits: the smallest peak found (simulated ones first, else the bound of the leanest
// pruned one) and what dominates it.
void print_no_fit(std::ostream& out, const cost::DeviceSpec& device, const planner::PlanResult& r) {
  const std::optional<planner::LeanestLayout> leanest = planner::leanest_layout(r);
  out << "no layout fits in " << format_gib(r.usable_memory) << " per GPU ("
      << format_gib(device.memory_capacity.count) << " less the headroom).\n";
  if (leanest) {
    out << "smallest peak found: " << format_gib(leanest->peak_memory) << " with "
        << r.enumeration.candidates[leanest->candidate].describe()
        << (leanest->lower_bound ? " (lower bound, not simulated)" : "") << "\ndominated by "
        << dominant(leanest->at_peak) << "\n";
  }
  out << "more GPUs, GPUs with more memory, or a smaller micro-batch / sequence would be "
         "needed.\n";
}

// The `top` best layouts, then the Pareto frontier thinned to at most 12 evenly spaced points
// (both ends kept).
void print_ranked(std::ostream& out, const planner::PlanResult& r, int top) {
  const auto& cands = r.enumeration.candidates;
  char head[400];
  std::snprintf(head, sizeof head, "%4s  %-68s %10s %10s %6s %10s %7s %10s  %s\n", "rank", "layout",
                "step", "tokens/s", "MFU", "peak", "bubble", "exposed", "level");
  out << head;
  for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i) {
    const auto& e = r.evaluations[r.ranked[i]];
    print_row(out, i + 1, cands[e.candidate], e, row_note(r, i));
  }
  if (r.ranked.size() > static_cast<size_t>(top))
    out << "      ... " << r.ranked.size() - static_cast<size_t>(top)
        << " more (--top, --csv, --json)\n";
  const size_t shown = std::min<size_t>(r.pareto.size(), 12);
  out << "\nPareto frontier, throughput against peak memory (leanest first";
  if (shown < r.pareto.size())
    out << "; " << shown << " of " << r.pareto.size() << " points, --json lists all";
  out << ")\n";
  for (size_t i = 0; i < shown; ++i) {
    const size_t k = r.pareto[shown == 1 ? 0 : i * (r.pareto.size() - 1) / (shown - 1)];
    const auto& e = r.evaluations[k];
    char row[320];
    std::snprintf(row, sizeof row, "      %-68s %10.0f tokens/s %10s\n",
                  cands[e.candidate].describe().c_str(), e.tokens_per_second,
                  format_gib(e.peak_memory).c_str());
    out << row;
  }
}

// The winner's whole training run (training_run/: days, dollars, MWh, goodput), from its step.
void print_winner_run(std::ostream& out, const scenario::Scenario& base,
                      const planner::PlanResult& r) {
  const auto& e = r.evaluations[r.ranked.front()];
  const double tokens_per_step =
      static_cast<double>(base.training.global_batch) * static_cast<double>(base.training.seq_len);
  const auto forecast =
      driver::run_forecast(base, e.step_time, model::parameter_count(base.model), tokens_per_step);
  out << "\ntraining run of rank 1: " << training_run::summary_line(forecast)
      << " (simulate --help: --tokens, --usd-per-gpu-hour, ...)\n";
}

// The top rows by their worst slowdown under one slow GPU, node or NIC (workflows/stragglers.h):
// which layout suffers least when a piece of hardware degrades.
void print_straggler_ranking(std::ostream& out, const scenario::Scenario& base,
                             const planner::PlanResult& r, size_t rows, unsigned threads) {
  rows = std::min({rows, kStragglerRows, r.ranked.size()});
  std::vector<scenario::Scenario> layouts;
  for (size_t i = 0; i < rows; ++i) {
    const auto& e = r.evaluations[r.ranked[i]];
    layouts.push_back(planner::with_candidate(base, r.enumeration.candidates[e.candidate]));
  }
  const auto ranking = rank_by_straggler_robustness(layouts, threads);
  out << "\nstragglers  the top " << rows << " rows with one GPU at " << kSlowGpuFactor
      << "x, one node at " << kSlowNodeFactor << "x, one NIC at " << kDegradedNicFactor
      << "x bandwidth (each alone), least hurt first\n";
  for (const LayoutRobustness& l : ranking) {
    const auto& e = r.evaluations[r.ranked[l.index]];
    out << "  rank " << l.index + 1 << "  " << r.enumeration.candidates[e.candidate].describe();
    if (!l.error.empty()) {
      out << "  not simulated: " << l.error << "\n";
      continue;
    }
    char worst[64];
    std::snprintf(worst, sizeof worst, "  worst %+.1f%%", 100.0 * l.stragglers.worst_slowdown());
    out << worst;
    for (const StragglerCase& c : l.stragglers.cases) {
      char each[96];
      std::snprintf(each, sizeof each, "; %s %+.1f%%", c.degradation.describe().c_str(),
                    100.0 * c.slowdown);
      out << each;
    }
    out << "\n";
  }
}

}  // namespace

PlanRun plan(PlanRequest a, std::ostream& out) {
  const planner::PlanSpace& space = a.space;
  if (space.micro_batches.empty() || space.bucket_sizes.empty()) {
    throw UserError("--micro-batches and --buckets need at least one value");
  }
  PlanRun run;
  run.base = plan_base(a.scenario_file, a.model, a.cluster, a.gpus, a.global_batch, a.seq,
                       a.precision, a.attention);
  scenario::Scenario& base = run.base;
  base.run.override_with(a.run);
  if (a.grad_reduce_in_bf16) base.training.grad_reduce_in_bf16 = true;
  const std::string stack_why = planner::choose_plan_stack(
      base, a.stack, !a.scenario_file.empty() && YAML::LoadFile(a.scenario_file)["stack"]);
  apply_profile_flags(base, a.profile, a.no_profile);
  a.options.take_expected_error(base);
  if (!a.options.progress) a.options.progress = progress_bar();
  run.result = planner::plan(base, space, a.options);
  const planner::PlanResult& r = run.result;
  // The scenario's device: a GPU declared in its YAML as well as a preset.
  const auto& device = driver::device_of(base);
  print_search(out, base, a.options, r, stack_why);
  if (!r.not_simulated.empty()) {
    print_not_simulated(out, r);
    run.status = 1;
    return run;
  }
  print_simulated(out, r);
  if (!a.json_path.empty()) write_json(a.json_path, base, a.options, r, a.timing);
  if (!a.csv_path.empty()) write_csv(a.csv_path, r);
  if (!a.html_path.empty()) write_plan_html(a.html_path, base, device, r);
  if (!r.any_fits()) {
    print_no_fit(out, device, r);
    run.status = 1;
    return run;
  }
  print_ranked(out, r, a.top);
  print_winner_run(out, base, r);
  if (a.stragglers)
    print_straggler_ranking(out, base, r, static_cast<size_t>(a.top), a.options.threads);
  if (a.want_explain) explain(out, r);
  return run;
}

int sweep(const SweepRequest& a, std::ostream& out) {
  const std::string& file = a.scenario_file;
  const std::string &csv_path = a.csv_path, &plot_path = a.plot_path;
  if (file.empty() || !a.axis)
    throw UserError(
        "sweep needs a scenario file and one of --gpus, --nodes, --batch, --seq, --bandwidth "
        "(clustersim sweep --help)");
  const auto axis = a.axis;
  const auto& values = a.values;
  const unsigned threads = a.threads;
  scenario::Scenario base = scenario::load_scenario(file);
  apply_profile_flags(base, a.profile, a.no_profile);
  const planner::SweepResult r = planner::run_sweep(base, *axis, values, threads);
  out << "sweep       " << base.name << " over " << planner::to_string(*axis) << "\n\n";
  char head[256];
  std::snprintf(head, sizeof head, "%10s %5s %12s %11s %6s %8s %8s %11s %11s %11s %10s\n",
                planner::to_string(*axis).data(), "GPUs", "step", "tokens/s", "MFU", "speedup",
                "effic.", "compute", "exposed", "idle", "peak");
  out << head;
  for (const auto& row : r.rows) {
    if (!row.error.empty()) {
      out << std::string(10 - std::min<size_t>(10, row.value.size()), ' ') << row.value
          << "     -  not run (see the error below)\n";
      continue;
    }
    char line[320];
    std::snprintf(
        line, sizeof line, "%10s %5d %12s %11.0f %5.1f%% %7.3fx %8s %11s %11s %11s %10s%s\n",
        row.value.c_str(), row.gpus, format_time(row.step_time).c_str(), row.tokens_per_second,
        100 * row.mfu, row.speedup,
        row.efficiency >= 0
            ? (std::to_string(static_cast<int>(std::lround(row.efficiency * 1000)) / 10) + "." +
               std::to_string(static_cast<int>(std::lround(row.efficiency * 1000)) % 10) + "%")
                  .c_str()
            : "-",
        format_time(row.compute).c_str(), format_time(row.exposed_communication).c_str(),
        format_time(row.idle).c_str(), format_gib(row.peak_memory).c_str(),
        row.fits ? "" : " (does not fit)");
    out << line;
  }
  if (!csv_path.empty()) {
    OutputFile file(csv_path);
    std::ostream& f = file.stream();
    planner::write_sweep_csv(f, r);
    file.commit();
    out << "\nwrote " << csv_path << "\n";
  }
  if (!a.json_path.empty()) write_sweep_json(a.json_path, r);
  if (!a.html_path.empty()) write_sweep_html(a.html_path, r);
  if (!plot_path.empty()) {
    OutputFile file(plot_path);
    std::ostream& f = file.stream();
    planner::write_sweep_svg(f, r);
    file.commit();
    out << (csv_path.empty() ? "\n" : "") << "wrote " << plot_path << "\n";
  }
  // Points that could not run: the table and the files keep the others; the reasons go to
  // standard error with a non-zero exit, where a script or a reader of the table sees them.
  std::string not_run;
  size_t failed = 0;
  for (const auto& row : r.rows) {
    if (row.error.empty()) continue;
    ++failed;
    not_run += "\n  " + row.value + ": " + row.error;
  }
  if (failed > 0) {
    throw UserError("sweep --" + std::string(planner::to_string(*axis)) + ": " +
                    std::to_string(failed) + " of " + std::to_string(r.rows.size()) +
                    " points could not run:" + not_run);
  }
  return 0;
}

// `plan --emit DIR`: each printed layout as a scenario, Megatron-LM arguments and a torchrun
// sketch. The scenario runs at the plan's own settings (analytic network, the plan's profile or
// datasheet figures), so `simulate` gives the step the plan printed for detailed-level rows.
void emit_layouts(const std::string& dir, const scenario::Scenario& base,
                  const planner::PlanResult& r, int top, std::ostream& out) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw UserError("--emit '" + dir + "': cannot create the folder" +
                    (ec ? " (" + ec.message() + ")" : ""));
  // plan predicts with the scenario's own profile only; simulate would add the GPU's shipped one.
  const bool needs_no_profile =
      !base.profile && !base.declared_gpu && !driver::default_profile_path(base.gpu).empty();
  const auto& cands = r.enumeration.candidates;
  size_t written = 0;
  for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(top); ++i) {
    const auto& e = r.evaluations[r.ranked[i]];
    scenario::Scenario s = planner::with_candidate(base, cands[e.candidate]);
    s.name = base.name + "-rank" + std::to_string(i + 1);
    const std::string stem = dir + "/rank" + std::to_string(i + 1);
    const std::vector<std::string> header{
        "clustersim plan, rank " + std::to_string(i + 1) + ": " + cands[e.candidate].describe(),
        "predicted step " + format_time(e.step_time) + ", peak " + format_gib(e.peak_memory) +
            " (" +
            (e.detailed ? "detailed level: simulated at the real micro-batch count"
                        : "fast level: extrapolated from two short runs") +
            ")",
        std::string("simulate it: clustersim simulate ") + stem + ".yaml" +
            (needs_no_profile ? " --no-profile (plan used datasheet figures)" : "")};
    auto write = [](const std::string& path, const std::string& text) {
      write_output_file(path, [&](std::ostream& f) { f << text; });
    };
    const interop::LaunchTarget target = scenario::launch_target(s);
    write(stem + ".yaml", scenario::scenario_yaml(s, header));
    if (s.model.family != model::Family::mlp)
      write(stem + ".megatron.sh", interop::megatron_launch_script(target));
    write(stem + ".torchrun.py", interop::torchrun_sketch(target));
    ++written;
  }
  out << "\nwrote " << written << " layout" << (written == 1 ? "" : "s") << " to " << dir
      << "/: rankN.yaml (scenario), rankN.megatron.sh (Megatron-LM), rankN.torchrun.py "
         "(torchrun/FSDP sketch)\n";
}

}  // namespace cs::workflows
