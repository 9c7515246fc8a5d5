// Small helpers for the commands' option parsing.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/limits.h"
#include "common/units.h"

namespace cs::cli {

// The largest cluster any command builds (common/limits.h owns the bound and its reason).
inline constexpr int64_t kMaxClusterGpus = limits::kMaxGpus;

// --timeout-ms: common/limits.h's collective timeout in milliseconds.
inline constexpr limits::IntegerBound kTimeoutMilliseconds{
    1, limits::kCollectiveTimeoutSeconds.hi * 1000, limits::kCollectiveTimeoutSeconds.why};

// The count flags with a physical bound of their own, with its unit; the bound and its reason
// are common/limits.h's (the rest are below 2^31: 32-bit counts). Matched by the name the user
// typed, so every alias (-g, --ngpus) is listed.
struct FlagBound {
  const char* flag;
  const limits::IntegerBound& bound;  // its upper end; the lower one is the command's
  const char* unit;
};
inline const FlagBound kFlagBounds[] = {
    {"--gpus", limits::kClusterGpus, "GPUs"},
    {"-g", limits::kClusterGpus, "GPUs"},
    {"--ngpus", limits::kClusterGpus, "GPUs"},
    {"--nodes", limits::kNodes, "nodes"},
    {"--global-batch", limits::kBatchSequences, "sequences"},
    {"--micro-batches", limits::kBatchSequences, "sequences"},
    {"--seq", limits::kSequenceTokens, "tokens"},
    {"--max-tp", limits::kParallelSize, "GPUs"},
    {"--max-cp", limits::kParallelSize, "GPUs"},
    {"--max-ep", limits::kParallelSize, "GPUs"},
    {"--ranks", limits::kCalibrationRanks, "ranks"},  // calibrate --backend cpu
    {"--calibration-ranks", limits::kCalibrationRanks, "ranks"},
    {"--timeout", limits::kCollectiveTimeoutSeconds, "s"},
    {"--timeout-ms", kTimeoutMilliseconds, "ms"},
};
inline constexpr const char* kCountWhy = "2^31 - 1: counts are 32-bit integers";

// "--seq 99999999999 is out of range: at most 16777216 tokens (what a scenario accepts: ...)":
// the flag as typed, the value, the bound and its reason; a cluster's GPUs or nodes say so.
inline std::string flag_above_bound(const std::string& flag, const std::string& text,
                                    const FlagBound& b) {
  const std::string bound = std::to_string(b.bound.hi) + " " + b.unit;
  const bool cluster_size = &b.bound == &limits::kClusterGpus || &b.bound == &limits::kNodes;
  if (cluster_size) {
    return flag + " " + text + ": a cluster of " + text + " " + b.unit + " is above the limit of " +
           bound + " (" + b.bound.why + ")";
  }
  return flag + " " + text + " is out of range: at most " + bound + " (" + b.bound.why + ")";
}

// `text` as an integer of at least `min` and at most the flag's bound in kFlagBounds (or below
// 2^31), or a UserError naming the flag, the value, the bound and why.
inline int int_flag(const std::string& flag, const std::string& text, int min) {
  const auto v = parse_integer(text);
  // Digits past 64 bits are out of range, not malformed ("expected a positive integer" for them,
  // and for 2^31, was the wrong reason).
  const bool past_64_bits =
      !v && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  for (const FlagBound& b : kFlagBounds) {
    if (flag == b.flag && (past_64_bits || (v && *v > b.bound.hi)))
      throw UserError(flag_above_bound(flag, text, b));
  }
  if (past_64_bits || (v && *v > INT32_MAX)) {
    throw UserError(flag + " " + text + " is out of range: at most 2147483647 (" + kCountWhy + ")");
  }
  if (!v || *v < min) {
    throw UserError(flag + " '" + text + "': expected " +
                    (min == 1 ? std::string("a positive integer")
                              : "an integer of at least " + std::to_string(min)));
  }
  return static_cast<int>(*v);
}

// `text` as a positive byte size with a unit ("25MiB"; a bare "100" is refused as ambiguous),
// at most 1 PiB (common/limits.h kMaxBufferBytes), or a UserError naming the flag.
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
  if (b.count > limits::kMaxBufferBytes) {
    throw UserError(flag + " '" + text + "' is out of range: at most 1 PiB (" +
                    limits::kMaxBufferBytesWhy + ")");
  }
  return b;
}

// `text` as a finite number (no trailing characters: std::stod alone reads "2abc" as 2) above
// `above`, or at least it when `inclusive`; otherwise a UserError naming the flag, the bound and
// `why` (the reason for the bound).
inline double number_flag(const std::string& flag, const std::string& text, double above,
                          const std::string& why, bool inclusive = false) {
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
                    (inclusive ? "of at least " : "above ") + bound + " (" + why + ")");
  }
  return v;
}

}  // namespace cs::cli
