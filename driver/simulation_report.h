// The simulate report as text for people, as JSON for programs (docs/schemas/report.schema.json)
// and as a self-contained HTML page: the same figures in all three, written here alone (the CLI
// and the Python module both call it).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/simulation.h"
#include "reports/schema_version.h"

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

}  // namespace cs::driver
