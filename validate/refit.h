// The global fits redone from the data, and leave-one-source-out cross-validation:
//   clustersim validate --suite validate/suites --fit              each fit redone from its sources
//   clustersim validate --suite validate/suites --cross-validate   each source's error with the
//                                                                  fits redone without it
// A fit group is one or several parameters fitted together (validate/fitted_parameters.h lists
// them with their shipped values). It names the calibration sources it is fitted on, the other
// calibration sources that also measure it (fitted on when its own are left out), and the prior it
// takes when no source is left, with the reason. Parameters are searched on a grid, several by
// coordinate descent from their priors; a fit never sees a validation source.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cost_models/collective_algorithms.h"
#include "validate/suite.h"

namespace cs::validate {

struct Grid {
  double lo = 0, hi = 0, step = 0;
};

struct RefitParameter {
  std::string name, unit;
  double shipped = 0;  // the value the simulator ships (fitted_parameters())
  double prior = 0;    // its value without data
  std::string prior_why;
  Grid grid;
};

enum class Objective : uint8_t {
  mape,             // the mean of the sources' MAPEs
  worst_then_mape,  // the worst row over the sources, then the mean MAPE (the nccl-tests fit)
};

struct FitGroup {
  std::string name;
  std::vector<RefitParameter> parameters;
  std::vector<std::string> fitted_on;         // the calibration sources of the shipped fit
  std::vector<std::string> also_measured_by;  // calibration sources a refit falls back on
  Objective objective = Objective::mape;
  // Where the shipped fit's data is not a suite: why `--fit` cannot redo it, and what checks it.
  std::string fitted_outside_suites;
  // Puts the group's values (in parameter order) where the simulator reads them.
  std::function<void(const std::vector<double>&, cost::CollectiveFits&, SuiteOptions&)> apply;
};

// The shipped fit groups, with each parameter's shipped value read from the code.
std::vector<FitGroup> fit_groups();

// What the fits are redone on: every suite file under the folder, by its source name.
struct SuiteSet {
  std::vector<SourceResult> shipped;  // each suite file's result with the shipped fits
  SuiteOptions options;
};
SuiteSet load_suite_set(const std::string& path, const SuiteOptions& options);

// One group's fit on `sources` (a subset of the set's calibration sources): the values, in the
// group's parameter order; the priors when `sources` is empty.
struct FitResult {
  std::vector<double> values;
  double objective = 0;  // the objective's value there (percent)
  int evaluations = 0;
  // A group of one parameter: the values tried whose objective is within 0.05 points of the
  // best (a wide range: the sources hardly constrain it).
  double flat_lo = 0, flat_hi = 0;
};
FitResult fit_group(const SuiteSet& set, const FitGroup& group,
                    const std::vector<std::string>& sources);

// `validate --fit`: each group redone from its own sources, beside the shipped values.
void print_fits(std::ostream& out, const SuiteSet& set);
// `validate --cross-validate`: each source's error with the groups fitted on it redone without it.
void print_cross_validation(std::ostream& out, const SuiteSet& set);

}  // namespace cs::validate
