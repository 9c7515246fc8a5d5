// The simulate report as text for people and as JSON for programs (same figures in both).
#pragma once

#include <ostream>

#include "driver/simulation.h"
#include "reports/schema_version.h"

namespace cs::workflows {

// With `platform` (the one the result was simulated on), the text report says what bounds the
// step (reports/bottleneck.h), naming the link kind that limits each communication.
void print_report(std::ostream& out, const driver::SimulationResult& r,
                  const driver::Platform* platform = nullptr);
void write_report_json(std::ostream& out, const driver::SimulationResult& r);
// The self-contained HTML report (reports/html_report.h) with the same figures.
void write_report_html(std::ostream& out, const driver::SimulationResult& r,
                       const driver::Platform* platform = nullptr);

}  // namespace cs::workflows
