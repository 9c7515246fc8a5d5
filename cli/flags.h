// Small helpers for the commands' option parsing.
#pragma once

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

}  // namespace cs::cli
