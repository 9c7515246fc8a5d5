// A Kineto trace's step against the simulated one (validate/kineto.h reads and sums both), as
// `validate --kineto` prints it and writes it (docs/schemas/validate.schema.json, mode kineto).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "validate/kineto.h"

namespace cs::validate {

// predicted / measured - 1, in percent (0 where nothing was measured).
double error_percent(double predicted, double measured);

// Step time, kernel time by class, communication by collective and exposed communication, each
// predicted against measured.
void print_kineto_comparison(std::ostream& out, const StepBreakdown& predicted,
                             const StepBreakdown& measured);

// What the comparison was of, for the JSON file.
struct KinetoComparisonFacts {
  std::string trace, scenario, profile;  // the files and the profile's summary
  int device = 0;                        // the trace's device compared
  size_t devices = 0;                    // devices in the trace
};
void write_kineto_comparison_json(std::ostream& out, const KinetoComparisonFacts& facts,
                                  const StepBreakdown& predicted, const StepBreakdown& measured);

}  // namespace cs::validate
