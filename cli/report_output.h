// The simulate report as text for people and as JSON for programs (same figures in both).
#pragma once

#include <ostream>

#include "driver/simulation.h"

namespace cs::cli {

void print_report(std::ostream& out, const driver::SimulationResult& r);
void write_report_json(std::ostream& out, const driver::SimulationResult& r);

}  // namespace cs::cli
