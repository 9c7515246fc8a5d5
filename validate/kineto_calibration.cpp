#include "validate/kineto_calibration.h"

#include <array>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "driver/simulation.h"

namespace cs::validate {

namespace {

constexpr std::array<KernelClass, 3> kFitted{KernelClass::gemm, KernelClass::attention,
                                             KernelClass::memory_bound};
constexpr double kSettled = 0.005;  // stop when every class is within 0.5% of the trace
constexpr int kMaxPasses = 6;

double& scale_of(cost::ComputeEfficiency::RateScale& r, KernelClass c) {
  return c == KernelClass::gemm        ? r.gemm
         : c == KernelClass::attention ? r.attention
                                       : r.memory_bound;
}

KernelClass class_of(ir::OpClass op) {
  return op == ir::OpClass::gemm        ? KernelClass::gemm
         : op == ir::OpClass::attention ? KernelClass::attention
                                        : KernelClass::memory_bound;
}

double value_or_zero(const std::map<std::string, double>& m, KernelClass c) {
  const auto it = m.find(std::string(to_string(c)));
  return it == m.end() ? 0.0 : it->second;
}

struct Prediction {
  StepBreakdown breakdown;
  std::map<KernelClass, int64_t> tasks;  // compute tasks per class on graph rank 0
};

Prediction predict(const scenario::Scenario& s) {
  const auto run = driver::simulate(s, {false, false, driver::RankMode::automatic, false});
  Prediction p;
  p.breakdown = predicted_breakdown(run.step.graph, run.timeline, 0, run.report.step_time.us());
  for (const ir::Task& t : run.step.graph.tasks()) {
    if (t.rank == 0 && t.kind == ir::TaskKind::compute)
      ++p.tasks[class_of(run.step.graph.compute(t).op)];
  }
  return p;
}

}  // namespace

KinetoFit fit_kineto_profile(const KinetoTrace& trace, int device, const scenario::Scenario& base) {
  if (!base.profile)
    throw UserError("calibrate --kineto scales a profile's kernel rates, and " + base.name +
                    " has none: give --profile P.yaml, or leave out --no-profile so that its GPU's "
                    "shipped profile is used");
  KinetoFit fit;
  fit.measured = measured_breakdown(trace, device);
  scenario::Scenario s = base;
  cost::ComputeEfficiency::RateScale& scale = s.profile->compute.rate_scale;
  const double gap_us = s.profile->compute.launch_gap.us();
  Prediction p = predict(s);
  fit.before = p.breakdown;
  std::map<KernelClass, bool> fitted;
  for (const KernelClass c : kFitted) {
    const double measured = value_or_zero(fit.measured.by_class, c),
                 predicted = value_or_zero(p.breakdown.by_class, c);
    const std::string name(to_string(c));
    if (measured <= 0)
      fit.notes.push_back(name + ": the trace has no such kernels on device " +
                          std::to_string(device) + "; left at " +
                          std::to_string(scale_of(scale, c)));
    else if (predicted <= 0)
      fit.notes.push_back(name + ": the scenario's step has no such kernels; left at " +
                          std::to_string(scale_of(scale, c)));
    else if (measured <= static_cast<double>(p.tasks[c]) * gap_us)
      fit.notes.push_back(name + ": the trace's " + std::to_string(measured) +
                          " us is no more than the launch gaps of the step's " +
                          std::to_string(p.tasks[c]) + " such kernels; left as it was");
    else
      fitted[c] = true;
  }
  for (fit.passes = 0; fit.passes < kMaxPasses; ++fit.passes) {
    bool settled = true;
    for (const KernelClass c : kFitted) {
      if (!fitted[c]) continue;
      const double measured = value_or_zero(fit.measured.by_class, c),
                   predicted = value_or_zero(p.breakdown.by_class, c);
      if (std::abs(predicted / measured - 1) > kSettled) settled = false;
    }
    if (settled) break;
    for (const KernelClass c : kFitted) {
      if (!fitted[c]) continue;
      const double gaps = static_cast<double>(p.tasks[c]) * gap_us;
      const double measured = value_or_zero(fit.measured.by_class, c),
                   predicted = value_or_zero(p.breakdown.by_class, c);
      double& f = scale_of(scale, c);
      f *= (predicted - gaps) / (measured - gaps);
      if (!(f >= cost::kMinRateScale && f <= cost::kMaxRateScale)) {
        char text[400];
        std::snprintf(text, sizeof text,
                      "calibrate --kineto: the trace's %s kernels take %.3f ms per step and %s "
                      "predicts %.3f ms: a rate %.3g times the "
                      "profile's, beyond %g-%g. The trace is likely of another run than the "
                      "scenario describes (model, batch, sequence, "
                      "precision or layout); check them with validate --kineto",
                      std::string(to_string(c)).c_str(), measured * 1e-3, base.name.c_str(),
                      predicted * 1e-3, f, cost::kMinRateScale, cost::kMaxRateScale);
        throw UserError(text);
      }
    }
    p = predict(s);
  }
  fit.after = p.breakdown;
  fit.profile = *s.profile;
  fit.profile.validation
      .reset();  // the suite's error was measured with the base profile, not this one
  char source[400];
  std::snprintf(source, sizeof source,
                "rate_scale fitted by calibrate --kineto to %s (device %d, %s) of scenario %s: "
                "gemm %.4f, attention %.4f, memory_bound %.4f",
                trace.file.c_str(), device, fit.measured.step_from.c_str(), base.name.c_str(),
                scale.gemm, scale.attention, scale.memory_bound);
  fit.profile.sources.emplace_back(source);
  return fit;
}

}  // namespace cs::validate
