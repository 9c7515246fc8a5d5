// `validate --loop`: calibrate, simulate and execute the same scenario several times, then judge
// the step-time errors. The judgement is here; workflows/validation.cpp runs the loop and prints.
//
// The error that counts is the typical one: the median of |error| (the signed error of the run
// in the middle by size); its bias is the median of the signed errors. The machine is steady when
// neither the predictions nor the measurements moved by more than 20% of their median across
// runs: the spread (largest - smallest) / median, leaving out the highest and lowest from five
// runs on, as the median error leaves them out. Below 3 runs steadiness is not judged.
// Tests: tests/loop_statistics_test.cpp (hand-computed medians and spreads).
#pragma once

#include <vector>

namespace cs::validate {

// The machine's speed may move this much across runs before the error is no longer the model's.
inline constexpr double kSteadySpread = 0.20;

struct LoopSummary {
  double median_error = 0;         // percent, signed: the run whose |error| is the median
  double median_signed_error = 0;  // percent: the median of the signed errors
  double drift = 0;                // the larger spread of predictions and of measurements
  bool judged = false;             // at least 3 runs
  bool steady = true;              // not judged, or drift <= kSteadySpread
};

// One entry per run, in any order; the three vectors have the same non-zero length.
LoopSummary summarize_loop(const std::vector<double>& errors_percent,
                           const std::vector<double>& predicted_s,
                           const std::vector<double>& measured_s);

// (largest - smallest) / median of `values`, without the highest and lowest from 5 values on.
double spread(std::vector<double> values);

}  // namespace cs::validate
