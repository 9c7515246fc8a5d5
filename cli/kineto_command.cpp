#include "cli/kineto_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "cli/report_output.h"
#include "common/error.h"
#include "driver/simulation.h"
#include "scenarios/profile_io.h"
#include "validate/kineto.h"
#include "validate/kineto_calibration.h"

namespace cs::cli {

namespace {

double error_percent(double predicted, double measured) {
  return measured > 0 ? 100 * (predicted / measured - 1) : 0.0;
}

// The scenario with the profile the options name: --profile, none (--no-profile), or its GPU's
// shipped one.
scenario::Scenario load_with_profile(const KinetoOptions& o, const char* command) {
  if (o.scenario.empty())
    throw UserError(std::string(command) +
                    " --kineto TRACE.json needs the scenario the trace was taken of");
  scenario::Scenario s = scenario::load_scenario(o.scenario);
  if (!o.profile.empty() && o.no_profile)
    throw UserError("give --profile F or --no-profile, not both");
  if (!o.profile.empty()) s.profile = scenario::load_profile(o.profile);
  if (o.no_profile)
    s.profile.reset();
  else
    driver::apply_default_profile(s);
  return s;
}

int device_of(const KinetoOptions& o, const validate::KinetoTrace& trace) {
  return o.device >= 0 ? o.device : trace.devices.front();
}

void print_header(std::ostream& out, const char* verb, const scenario::Scenario& s,
                  const KinetoOptions& o, const validate::KinetoTrace& trace, int device,
                  const validate::StepBreakdown& measured) {
  out << verb << s.name << " against PyTorch profiler trace " << o.trace << "\n";
  out << "            device " << device << " of the trace (" << trace.devices.size() << " device"
      << (trace.devices.size() == 1 ? "" : "s") << ") against graph rank 0; predicted with "
      << driver::profile_summary(s) << "\n";
  out << "            measured step: " << measured.step_from << "; times per step\n";
}

nlohmann::json breakdown_json(const validate::StepBreakdown& p, const validate::StepBreakdown& m) {
  using nlohmann::json;
  auto rows = [](const std::map<std::string, double>& pred,
                 const std::map<std::string, double>& meas) {
    std::set<std::string> keys;
    for (const auto& [k, v] : pred) keys.insert(k);
    for (const auto& [k, v] : meas) keys.insert(k);
    json out = json::array();
    for (const auto& k : keys) {
      const double a = pred.count(k) ? pred.at(k) : 0, b = meas.count(k) ? meas.at(k) : 0;
      out.push_back({{"name", k},
                     {"predicted_ms", a * 1e-3},
                     {"measured_ms", b * 1e-3},
                     {"error_percent", b > 0 ? json(error_percent(a, b)) : json(nullptr)}});
    }
    return out;
  };
  return {{"step",
           {{"predicted_ms", p.step_us * 1e-3},
            {"measured_ms", m.step_us * 1e-3},
            {"error_percent", error_percent(p.step_us, m.step_us)}}},
          {"by_class", rows(p.by_class, m.by_class)},
          {"by_collective", rows(p.by_collective, m.by_collective)},
          {"exposed_communication",
           {{"predicted_ms", p.exposed_us * 1e-3},
            {"measured_ms", m.exposed_us * 1e-3},
            {"error_percent",
             m.exposed_us > 0 ? json(error_percent(p.exposed_us, m.exposed_us)) : json(nullptr)}}}};
}

}  // namespace

int validate_kineto(const KinetoOptions& o, std::ostream& out) {
  scenario::Scenario s = load_with_profile(o, "validate");
  const validate::KinetoTrace trace = validate::read_kineto_trace(o.trace);
  const int device = device_of(o, trace);
  const auto predicted_run =
      driver::simulate(s, {false, false, driver::RankMode::automatic, false});
  const validate::StepBreakdown m = validate::measured_breakdown(trace, device);
  const validate::StepBreakdown p = validate::predicted_breakdown(
      predicted_run.step.graph, predicted_run.timeline, 0, predicted_run.report.step_time.us());
  char line[240];
  print_header(out, "validate    ", s, o, trace, device, m);
  out << "\n";
  std::snprintf(line, sizeof line,
                "step time   predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", p.step_us * 1e-3,
                m.step_us * 1e-3, error_percent(p.step_us, m.step_us));
  out << line;
  auto table = [&](const char* title, const std::map<std::string, double>& pred,
                   const std::map<std::string, double>& meas) {
    out << "\n" << title << "\n";
    std::set<std::string> keys;
    for (const auto& [k, v] : pred) keys.insert(k);
    for (const auto& [k, v] : meas) keys.insert(k);
    for (const auto& k : keys) {
      const double a = pred.count(k) ? pred.at(k) : 0, b = meas.count(k) ? meas.at(k) : 0;
      if (b > 0)
        std::snprintf(line, sizeof line,
                      "  %-16s predicted %10.3f ms  measured %10.3f ms  %+7.1f%%\n", k.c_str(),
                      a * 1e-3, b * 1e-3, error_percent(a, b));
      else
        std::snprintf(line, sizeof line,
                      "  %-16s predicted %10.3f ms  measured %10.3f ms  (none measured)\n",
                      k.c_str(), a * 1e-3, b * 1e-3);
      out << line;
    }
  };
  table("kernel time by class", p.by_class, m.by_class);
  table("communication by collective (NCCL kernels)", p.by_collective, m.by_collective);
  out << "\n";
  std::snprintf(line, sizeof line,
                "exposed communication (NCCL time under no compute kernel)\n  %-16s predicted "
                "%10.3f ms  measured %10.3f ms  %+7.1f%%\n",
                "exposed", p.exposed_us * 1e-3, m.exposed_us * 1e-3,
                error_percent(p.exposed_us, m.exposed_us));
  out << line;
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw UserError("cannot write '" + o.json + "'");
    nlohmann::json j = {{"schema_version", kSchemaVersion},
                        {"kind", "validate"},
                        {"mode", "kineto"},
                        {"trace", o.trace},
                        {"scenario", o.scenario},
                        {"device", device},
                        {"devices", trace.devices.size()},
                        {"profile", driver::profile_summary(s)},
                        {"steps", m.steps},
                        {"step_from", m.step_from}};
    j.update(breakdown_json(p, m));
    f << j.dump(2) << "\n";
  }
  return 0;
}

int calibrate_kineto(const KinetoOptions& o, std::ostream& out) {
  if (o.out.empty())
    throw UserError(
        "calibrate --kineto needs --out profiles/NAME.yaml (where the fitted profile goes)");
  scenario::Scenario s = load_with_profile(o, "calibrate");
  const validate::KinetoTrace trace = validate::read_kineto_trace(o.trace);
  const int device = device_of(o, trace);
  validate::KinetoFit fit = validate::fit_kineto_profile(trace, device, s);
  const std::string base = s.profile->name;
  fit.profile.name = std::filesystem::path(o.out).stem().string();
  char line[240];
  print_header(out, "calibrate   ", s, o, trace, device, fit.measured);
  out << "\nkernel time per step   measured     base profile " << base << "   fitted ("
      << fit.passes << " pass" << (fit.passes == 1 ? "" : "es") << ")\n";
  auto row = [&](const std::string& name, double measured, double before, double after) {
    std::snprintf(line, sizeof line,
                  "  %-18s %10.3f ms   %10.3f ms %+7.1f%%   %10.3f ms %+7.1f%%\n", name.c_str(),
                  measured * 1e-3, before * 1e-3, error_percent(before, measured), after * 1e-3,
                  error_percent(after, measured));
    out << line;
  };
  for (const char* c : {"gemm", "attention", "memory_bound"}) {
    auto at = [&](const validate::StepBreakdown& b) {
      return b.by_class.count(c) ? b.by_class.at(c) : 0.0;
    };
    if (at(fit.measured) > 0 || at(fit.before) > 0)
      row(c, at(fit.measured), at(fit.before), at(fit.after));
  }
  row("step time", fit.measured.step_us, fit.before.step_us, fit.after.step_us);
  out << "\nfitted rate_scale (3 parameters: each class's kernel rate as a multiple of the base "
         "profile's)\n";
  const auto& r = fit.profile.compute.rate_scale;
  std::snprintf(line, sizeof line, "  gemm %.4f   attention %.4f   memory_bound %.4f\n", r.gemm,
                r.attention, r.memory_bound);
  out << line;
  for (const auto& n : fit.notes) out << "  note: " << n << "\n";
  out << "  communication is not fitted: a trace's NCCL kernel time includes waiting for peers "
         "(calibrate --nccl-tests fits collectives)\n";
  scenario::save_profile(o.out, fit.profile);
  out << "\nwrote " << o.out << " (simulate --profile " << o.out << ")\n";
  return 0;
}

}  // namespace cs::cli
