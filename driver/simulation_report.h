// The simulate report as text for people, as JSON for programs (docs/schemas/report.schema.json)
// and as a self-contained HTML page: the same figures in all three, written here alone (the CLI
// and the Python module both call it).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/simulation.h"
#include "reports/schema_version.h"
#include "training_run/forecast.h"

namespace cs::driver {

// With `platform` (the one the result was simulated on), the text report says what bounds the
// step (reports/bottleneck.h), naming the link kind that limits each communication.
void print_report(std::ostream& out, const driver::SimulationResult& r,
                  const driver::Platform* platform = nullptr);
// What bounds the step, in one to four sentences (reports::explain_bottleneck).
std::vector<std::string> bottleneck_lines(const driver::SimulationResult& r,
                                          const driver::Platform* platform);
void write_report_json(std::ostream& out, const driver::SimulationResult& r);
// The self-contained HTML report (reports/html_report.h) with the same figures.
void write_report_html(std::ostream& out, const driver::SimulationResult& r,
                       const driver::Platform* platform = nullptr);

// The whole training run of `s` at `step_time`: its `run:` inputs (simulate's flags applied) and
// training_run's stated defaults for the rest; throws UserError when they cannot size the run.
// The report's last section shows it; `plan` can show summary_line() of its winner's.
training_run::Forecast run_forecast(const scenario::Scenario& s, SimTime step_time,
                                    int64_t parameters, double tokens_per_step);
training_run::Forecast run_forecast(const driver::SimulationResult& r);

}  // namespace cs::driver
