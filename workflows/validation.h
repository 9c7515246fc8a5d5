// `clustersim validate` and `clustersim calibrate`: predictions against published tables, the
// validation suite, executor runs (one, or the closed loop), nccl-tests logs and Kineto traces;
// profiles fitted from microbenchmarks, logs, traces or a table.
#pragma once

#include <iosfwd>
#include <string>

#include "cost_models/profile.h"
#include "validate/table_validation.h"
#include "workflows/nccl_tests.h"

namespace cs::workflows {

// What validate and calibrate were asked (cli/validate_command.cpp reads the flags into it and
// checks which combinations make sense); each mode reads the fields its help lists.
struct ValidationRequest {
  std::string scenario;  // --loop, --measured, --kineto
  std::string table, csv, backend, out, measured, profile, trace, raw, suite, kineto;
  std::string json, html;  // --suite (both), --table, --kineto, --nccl-tests (--json)
  unsigned seed = 42;
  int ranks = 2, runs = 5, steps = 5;
  double max_error = -1;
  bool loop = false;
  bool no_profile = false, markdown = false, rows = false;  // --suite
  bool fit = false, cross_validate = false;  // --suite: the fits redone (validate/refit.h)
  NcclTestsOptions nccl;  // --nccl-tests (its profile, out, max_error and json copied from above)
  std::string generator;  // the program's version line, on the suite's HTML page
  std::string recipes;    // --recipes: workflows/recipe_check.h (with json, max_failures, threads)
  int max_failures = 0;
  unsigned threads = 0;
};

// Each returns the exit status (validate: 1 beyond a bound, 77 for an unsteady loop); bad input
// throws UserError.
int validate(const ValidationRequest& a, std::ostream& out);
int calibrate(const ValidationRequest& a, std::ostream& out);

// `calibrate --backend cpu`: runs the three suites on the cpu backend and fits a Profile; progress
// goes to `out`, every measurement to `raw` (CSV) when it is named.
cost::Profile calibrate_cpu(int ranks, const std::string& raw, std::ostream& out);

// The fitted table model's factors and its GEMM curve, one line each, in the units people check.
void print_factors(std::ostream& out, const validate::Factors& f);
void print_gemm_curve(std::ostream& out, double half);

// What a fitted profile says, in the units a reader checks against the machine.
void print_profile(std::ostream& out, const cost::Profile& p);

}  // namespace cs::workflows
