// The global parameters fitted to published measurements, in one list: what `validate --suite`
// prints beside its errors so a reader sees how few numbers were tuned and on what. Everything
// else is measured (a profile's kernel tables, by `calibrate`) or derived (byte and FLOP counts,
// NCCL's own tuning constants, kernel counts read off reference code).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace cs::validate {

struct FittedParameter {
  std::string name;
  double value = 0;
  std::string unit;
  std::string fitted_on;  // the published data it was fitted to
  std::string where;      // the constant in the code
  std::string profile;    // the profile it belongs to (profile_fitted_parameters(); else empty)
};

// Read from the constants themselves, so the list cannot drift from what the models use.
std::vector<FittedParameter> fitted_parameters();
// Parameters fitted for one shipped profile (a variant's tensor clock ratio), read from the
// profiles in driver::profiles_dir(); each counts against that profile's limit beside the global
// ones.
std::vector<FittedParameter> profile_fitted_parameters();
void print_fitted_parameters(std::ostream& out);

}  // namespace cs::validate
