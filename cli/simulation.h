// Scenario -> task graph -> simulation -> report, plus the single-device twin that speedup is
// measured against (same model, same GPU kind, same global batch, micro-batch and precision).
#pragma once

#include <memory>
#include <optional>

#include "cost_models/analytic_cost_model.h"
#include "scenarios/scenario.h"
#include "sim/report.h"
#include "strategies/training_step.h"

namespace cs::cli {

struct SimulationResult {
  scenario::Scenario scenario;
  strategy::StepGraph step;
  sim::Timeline timeline;
  sim::Report report;
  std::optional<sim::Report> baseline;  // single-device twin; absent when the scenario is one GPU
  double speedup = 1.0;
};

SimulationResult simulate(const scenario::Scenario& s, bool with_baseline = true);
// The model, layout and training step of `s` on one GPU of the same kind.
scenario::Scenario single_device_twin(const scenario::Scenario& s);

}  // namespace cs::cli
