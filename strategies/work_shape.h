// The shape of one rank's per-op work (model::WorkShape) for a layout and training set-up: the one
// place that says which of a layout's and a run's settings reach the model's work. The step
// builder (training_step.cpp), the planner's closed-form step estimate and its memory bound all
// build their WorkShape here, so what the planner prices and bounds is what the simulator runs.
#pragma once

#include "models/model_spec.h"
#include "models/model_work.h"
#include "strategies/layout.h"

namespace cs::strategy {

model::WorkShape make_work_shape(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t);

}  // namespace cs::strategy
