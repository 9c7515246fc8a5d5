// Small helpers for the commands' option parsing.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/units.h"

namespace cs::cli {

// The largest cluster any command builds: twice the largest announced training cluster (100k
// GPUs). A topology and task graph over more would exhaust memory before printing anything.
inline constexpr int64_t kMaxClusterGpus = 131072;

// Physically sensible upper bounds of the count flags, with their units (the rest: below 2^31).
struct FlagBound {
  const char* flag;
  int64_t max;
  const char* unit;
};
inline constexpr FlagBound kFlagBounds[] = {
    {"--gpus", kMaxClusterGpus, "GPUs"},
    {"-g", kMaxClusterGpus, "GPUs"},
    {"--ngpus", kMaxClusterGpus, "GPUs"},
    {"--nodes", kMaxClusterGpus, "nodes"},
    {"--global-batch", int64_t{1} << 24, "sequences"},
    {"--seq", int64_t{1} << 24, "tokens"},
    {"--micro-batches", int64_t{1} << 24, "sequences"},
    {"--timeout", 3600, "s (a duration is at most an hour: common/limits.h)"},
    {"--timeout-ms", 3600000, "ms (a duration is at most an hour: common/limits.h)"},
};

// `text` as an integer of at least `min` (and at most the flag's bound in kFlagBounds, or below
// 2^31), or a UserError naming the flag.
inline int int_flag(const std::string& flag, const std::string& text, int min) {
  const auto v = parse_integer(text);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  for (const FlagBound& b : kFlagBounds) {
    if (flag == b.flag && ((v && *v > b.max) || (!v && digits))) {
      if (b.max == kMaxClusterGpus) {
        throw UserError(flag + " " + text + ": a cluster of " + text + " " + b.unit +
                        " is above the limit of " + std::to_string(b.max) + " " + b.unit);
      }
      throw UserError(flag + " " + text + " is out of range: at most " + std::to_string(b.max) +
                      " " + b.unit);
    }
  }
  // Beyond 2^31 is a range, not a form, error ("expected a positive integer" for 2147483648 was
  // the wrong reason).
  if ((v && *v >= (int64_t{1} << 31)) || (!v && digits))
    throw UserError(flag + " " + text +
                    " is out of range: at most 2147483647 (2^31 - 1: counts are 32-bit integers)");
  if (!v || *v < min) {
    throw UserError(flag + " '" + text + "': expected " +
                    (min == 1 ? std::string("a positive integer")
                              : "an integer of at least " + std::to_string(min)));
  }
  return static_cast<int>(*v);
}

// `text` as a positive byte size with a unit ("25MiB"; a bare "100" is refused as ambiguous),
// at most 1 PiB, or a UserError naming the flag.
inline Bytes size_flag(const std::string& flag, const std::string& text) {
  if (!text.empty() && text.back() >= '0' && text.back() <= '9') {
    throw UserError(flag + " '" + text + "': a size needs a unit, e.g. " + text +
                    "MiB (units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  }
  Bytes b;
  try {
    b = parse_bytes(text);
  } catch (const UnitError& e) {
    throw UserError(flag + ": " + e.what());
  }
  if (b.count <= 0) throw UserError(flag + " '" + text + "': a size must be positive");
  if (b.count > (int64_t{1} << 50))
    throw UserError(flag + " '" + text + "': is out of range: at most 1 PiB");
  return b;
}

// `text` as a finite number (no trailing characters: std::stod alone reads "2abc" as 2) above
// `above`, or at least it when `inclusive`; otherwise a UserError naming the flag.
inline double number_flag(const std::string& flag, const std::string& text, double above,
                          bool inclusive = false) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  // "inf" reads as a number: `bench-collective --factor inf` ran.
  if (used != 0 && used == text.size() && !std::isfinite(v))
    throw UserError(flag + " '" + text + "': expected a finite number");
  if (used == 0 || used != text.size() || !(inclusive ? v >= above : v > above)) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%g", above);
    throw UserError(flag + " '" + text + "': expected a number " +
                    (inclusive ? "of at least " : "above ") + bound);
  }
  return v;
}

}  // namespace cs::cli
