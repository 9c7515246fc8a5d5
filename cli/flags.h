// Small helpers for the commands' option parsing.
#pragma once

#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/units.h"

namespace cs::cli {

// `text` as an integer of at least `min` (and below 2^31), or a UserError naming the flag.
inline int int_flag(const std::string& flag, const std::string& text, int min) {
  const auto v = parse_integer(text);
  if (!v || *v < min || *v >= (int64_t{1} << 31)) {
    throw UserError(flag + " '" + text + "': expected " + (min == 1 ? std::string("a positive integer") : "an integer of at least " + std::to_string(min)));
  }
  return static_cast<int>(*v);
}

// `text` as a whole number (no trailing characters: std::stod alone reads "2abc" as 2) above
// `above`, or at least it when `inclusive`; otherwise a UserError naming the flag.
inline double number_flag(const std::string& flag, const std::string& text, double above, bool inclusive = false) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(inclusive ? v >= above : v > above)) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%g", above);
    throw UserError(flag + " '" + text + "': expected a number " + (inclusive ? "of at least " : "above ") + bound);
  }
  return v;
}

}  // namespace cs::cli
