#include "cli/kineto_command.h"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>

#include "common/error.h"
#include "driver/simulation.h"
#include "scenarios/profile_io.h"
#include "validate/kineto.h"

namespace cs::cli {

int validate_kineto(const KinetoOptions& o, std::ostream& out) {
  if (o.scenario.empty()) throw UserError("validate --kineto TRACE.json needs the scenario the trace was taken of");
  const validate::KinetoTrace trace = validate::read_kineto_trace(o.trace);
  const int device = o.device >= 0 ? o.device : trace.devices.front();
  scenario::Scenario s = scenario::load_scenario(o.scenario);
  if (!o.profile.empty() && o.no_profile) throw UserError("give --profile F or --no-profile, not both");
  if (!o.profile.empty()) s.profile = scenario::load_profile(o.profile);
  if (o.no_profile) s.profile.reset();
  else driver::apply_default_profile(s);
  const auto predicted_run = driver::simulate(s, {false, false, driver::RankMode::automatic, false});
  const validate::StepBreakdown m = validate::measured_breakdown(trace, device);
  const validate::StepBreakdown p = validate::predicted_breakdown(predicted_run.step.graph, predicted_run.timeline, 0,
                                                                  predicted_run.report.step_time.us());
  char line[240];
  auto err = [](double pred, double meas) { return meas > 0 ? 100 * (pred / meas - 1) : 0.0; };
  out << "validate    " << s.name << " against PyTorch profiler trace " << o.trace << "\n";
  out << "            device " << device << " of the trace (" << trace.devices.size() << " device" << (trace.devices.size() == 1 ? "" : "s")
      << ") against graph rank 0; predicted with " << driver::profile_summary(s) << "\n";
  out << "            measured step: " << m.step_from << "; times per step\n\n";
  std::snprintf(line, sizeof line, "step time   predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", p.step_us * 1e-3, m.step_us * 1e-3, err(p.step_us, m.step_us));
  out << line;
  auto table = [&](const char* title, const std::map<std::string, double>& pred, const std::map<std::string, double>& meas) {
    out << "\n" << title << "\n";
    std::set<std::string> keys;
    for (const auto& [k, v] : pred) keys.insert(k);
    for (const auto& [k, v] : meas) keys.insert(k);
    for (const auto& k : keys) {
      const double a = pred.count(k) ? pred.at(k) : 0, b = meas.count(k) ? meas.at(k) : 0;
      if (b > 0) std::snprintf(line, sizeof line, "  %-16s predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", k.c_str(), a * 1e-3, b * 1e-3, err(a, b));
      else std::snprintf(line, sizeof line, "  %-16s predicted %10.3f ms  measured %10.3f ms  (none measured)\n", k.c_str(), a * 1e-3, b * 1e-3);
      out << line;
    }
  };
  table("kernel time by class", p.by_class, m.by_class);
  table("communication by collective (NCCL kernels)", p.by_collective, m.by_collective);
  out << "\n";
  std::snprintf(line, sizeof line, "exposed communication (NCCL time under no compute kernel)\n  %-16s predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n",
                "exposed", p.exposed_us * 1e-3, m.exposed_us * 1e-3, err(p.exposed_us, m.exposed_us));
  out << line;
  return 0;
}

}  // namespace cs::cli
