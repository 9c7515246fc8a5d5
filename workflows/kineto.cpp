// `validate --kineto` and `calibrate --kineto`: the scenario simulated with its profile against
// a PyTorch profiler trace (validate/kineto.h reads it, validate/kineto_report.h compares), and
// the kernel rates fitted to it (validate/kineto_calibration.h).
#include "workflows/kineto.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/output_file.h"
#include "driver/simulation.h"
#include "scenarios/profile_io.h"
#include "validate/kineto.h"
#include "validate/kineto_calibration.h"
#include "validate/kineto_report.h"
#include "workflows/simulate.h"

namespace cs::workflows {

namespace {

// The scenario with the profile the options name: --profile, none (--no-profile), or its GPU's
// shipped one.
scenario::Scenario load_with_profile(const KinetoOptions& o, const char* command) {
  if (o.scenario.empty())
    throw UserError(std::string(command) +
                    " --kineto TRACE.json needs the scenario the trace was taken of");
  scenario::Scenario s = scenario::load_scenario(o.scenario);
  apply_profile_flags(s, o.profile, o.no_profile);
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

// The trace alone: each device's (or --device's) measured step, no simulation.
int analyse_kineto(const KinetoOptions& o, std::ostream& out) {
  const validate::KinetoTrace trace = validate::read_kineto_trace(o.trace);
  out << "analyse     PyTorch profiler trace " << o.trace << " (no scenario: what it measured)\n";
  out << "            " << (trace.gpu_name.empty() ? "GPU not named" : trace.gpu_name);
  if (trace.world_size > 0) out << "; rank " << trace.rank << " of " << trace.world_size;
  out << "; " << trace.devices.size() << " device" << (trace.devices.size() == 1 ? "" : "s")
      << " in the trace\n\n";
  std::vector<int> devices = trace.devices;
  if (o.device >= 0) devices = {o.device};
  std::vector<std::pair<int, validate::StepBreakdown>> rows;
  for (int d : devices) {
    rows.emplace_back(d, validate::measured_breakdown(trace, d));
    validate::print_kineto_breakdown(out, d, rows.back().second);
  }
  out << "\nto compare with a prediction: validate --kineto " << o.trace << " SCENARIO.yaml\n";
  if (!o.json.empty()) {
    OutputFile file(o.json);
    validate::write_kineto_analysis_json(file.stream(), trace, rows);
    file.commit();
  }
  return 0;
}

// Lower-case letters and digits of the scenario's GPU name before its first '_' ("h100" of
// "h100_sxm"): the token a profiler's device name carries ("NVIDIA H100 80GB HBM3").
std::string gpu_family(const std::string& spec_name) {
  std::string token;
  for (char c : spec_name.substr(0, spec_name.find('_')))
    if (std::isalnum(static_cast<unsigned char>(c)))
      token += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return token;
}

// A trace of another GPU or another world size than the scenario's compares unlike runs.
void warn_if_unlike(const scenario::Scenario& s, const validate::KinetoTrace& trace,
                    std::ostream& out) {
  if (trace.world_size > 0 && trace.world_size != s.gpus)
    out << "warning: the trace's run had " << trace.world_size << " ranks (distributedInfo), the "
        << "scenario " << s.gpus << " GPUs: the steps compared are of different runs\n";
  std::string name;
  for (char c : trace.gpu_name)
    name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string family = gpu_family(s.gpu);
  if (!name.empty() && !family.empty() && name.find(family) == std::string::npos)
    out << "warning: the trace ran on " << trace.gpu_name << ", the scenario simulates " << s.gpu
        << ": the kernel times compared are of different GPUs\n";
}

}  // namespace

int validate_kineto(const KinetoOptions& o, std::ostream& out) {
  if (o.scenario.empty()) return analyse_kineto(o, out);
  scenario::Scenario s = load_with_profile(o, "validate");
  const validate::KinetoTrace trace = validate::read_kineto_trace(o.trace);
  const int device = device_of(o, trace);
  warn_if_unlike(s, trace, out);
  const auto predicted_run =
      driver::simulate(s, {false, false, driver::RankMode::automatic, false});
  const validate::StepBreakdown m = validate::measured_breakdown(trace, device);
  const validate::StepBreakdown p = validate::predicted_breakdown(
      predicted_run.step.graph, predicted_run.timeline, 0, predicted_run.report.step_time.us());
  print_header(out, "validate    ", s, o, trace, device, m);
  out << "\n";
  validate::print_kineto_comparison(out, p, m);
  if (!o.json.empty()) {
    OutputFile file(o.json);
    std::ostream& f = file.stream();
    validate::write_kineto_comparison_json(
        f, {o.trace, o.scenario, driver::profile_summary(s), device, trace.devices.size()}, p, m);
    file.commit();
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
                  measured * 1e-3, before * 1e-3, validate::error_percent(before, measured),
                  after * 1e-3, validate::error_percent(after, measured));
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

}  // namespace cs::workflows
