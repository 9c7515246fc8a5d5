// A Kineto trace's step against the simulated one (validate/kineto.h reads and sums both), as
// `validate --kineto` prints it and writes it (docs/schemas/validate.schema.json, mode kineto).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "validate/kineto.h"

namespace cs::validate {

// predicted / measured - 1, in percent (0 where nothing was measured).
double error_percent(double predicted, double measured);

// Step time, kernel time by class, communication by collective and exposed communication, each
// predicted against measured.
void print_kineto_comparison(std::ostream& out, const StepBreakdown& predicted,
                             const StepBreakdown& measured);

// One device's measured step alone (validate --kineto TRACE without a scenario): step time,
// kernel time by class and by collective with each one's share of the step, communication and
// the part of it no compute kernel hides, as Holistic Trace Analysis's temporal and
// communication-overlap breakdowns give them.
void print_kineto_breakdown(std::ostream& out, int device, const StepBreakdown& measured);
// The same for every device analysed, as JSON (mode kineto_analysis).
void write_kineto_analysis_json(std::ostream& out, const KinetoTrace& trace,
                                const std::vector<std::pair<int, StepBreakdown>>& devices);

// What the comparison was of, for the JSON file.
struct KinetoComparisonFacts {
  std::string trace, scenario, profile;  // the files and the profile's summary
  int device = 0;                        // the trace's device compared
  size_t devices = 0;                    // devices in the trace
};
void write_kineto_comparison_json(std::ostream& out, const KinetoComparisonFacts& facts,
                                  const StepBreakdown& predicted, const StepBreakdown& measured);

}  // namespace cs::validate
