#include "workflows/stragglers.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/parallel.h"

namespace cs::workflows {
namespace {

// The planner's options: what a step costs, not traces or alternatives.
driver::SimulateOptions case_options(driver::SimulateOptions o) {
  o.with_baseline = false;
  o.suggest = false;
  o.memory_samples = false;
  return o;
}

}  // namespace

std::vector<scenario::Degradation> straggler_cases(const scenario::Scenario& s) {
  using Target = scenario::Degradation::Target;
  std::vector<scenario::Degradation> cases{{Target::gpu, 0, kSlowGpuFactor}};
  if (s.nodes > 1) {
    cases.push_back({Target::node, 0, kSlowNodeFactor});
    if (scenario::build_topology(s).nic_of(0))
      cases.push_back({Target::nic_of_gpu, 0, kDegradedNicFactor});
  }
  return cases;
}

double StragglerReport::worst_slowdown() const {
  double worst = 0;
  for (const auto& c : cases) worst = std::max(worst, c.slowdown);
  return worst;
}

StragglerReport analyse_stragglers(const scenario::Scenario& s, SimTime healthy,
                                   const driver::SimulateOptions& options) {
  StragglerReport r;
  r.healthy = healthy;
  // GPU and node cases change no link: they share the healthy platform.
  const driver::Platform platform(s);
  for (const scenario::Degradation& d : straggler_cases(s)) {
    scenario::Scenario degraded = s;
    degraded.degraded.push_back(d);
    const bool links_change = d.target == scenario::Degradation::Target::nic_of_gpu;
    const auto result =
        driver::simulate(degraded, case_options(options), links_change ? nullptr : &platform);
    const SimTime t = result.report.step_time;
    r.cases.push_back({d, t, healthy.ps > 0 ? t.seconds() / healthy.seconds() - 1.0 : 0.0});
  }
  return r;
}

void print_stragglers(std::ostream& out, const StragglerReport& r) {
  out << "stragglers  one piece of hardware degraded at a time; healthy step "
      << format_time(r.healthy) << "\n";
  char line[160];
  for (const auto& c : r.cases) {
    std::snprintf(line, sizeof line, "  %-30s step %12s  %+6.1f%%\n",
                  c.degradation.describe().c_str(), format_time(c.step_time).c_str(),
                  100.0 * c.slowdown);
    out << line;
  }
}

void write_stragglers_json(std::ostream& out, const StragglerReport& r) {
  using nlohmann::json;
  json cases = json::array();
  for (const auto& c : r.cases) {
    cases.push_back({{"degraded", c.degradation.describe()},
                     {"factor", c.degradation.factor},
                     {"step_time_s", c.step_time.seconds()},
                     {"slowdown", c.slowdown}});
  }
  const json j = {{"kind", "stragglers"},
                  {"healthy_step_time_s", r.healthy.seconds()},
                  {"cases", cases},
                  {"worst_slowdown", r.worst_slowdown()}};
  out << j.dump(2) << '\n';
}

std::vector<LayoutRobustness> rank_by_straggler_robustness(
    const std::vector<scenario::Scenario>& layouts, unsigned threads) {
  std::vector<LayoutRobustness> out(layouts.size());
  const driver::SimulateOptions options = case_options({});
  parallel_for(layouts.size(), threads, [&](size_t i) {
    out[i].index = i;
    try {
      const auto healthy = driver::simulate(layouts[i], options);
      out[i].stragglers = analyse_stragglers(layouts[i], healthy.report.step_time, options);
    } catch (const std::exception& e) {  // a worker must not throw: the row says why
      out[i].error = e.what();
    }
  });
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    return a.stragglers.worst_slowdown() < b.stragglers.worst_slowdown();
  });
  return out;
}

}  // namespace cs::workflows
