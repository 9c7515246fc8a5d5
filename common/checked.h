// Checked 64-bit integer arithmetic for products of user-given sizes (pp x virtual_stages,
// micro_batch x dp, layers x micro-batches): a result that does not fit in int64_t throws a
// UserError naming the quantity, instead of wrapping to 0 or a negative count that is later
// divided by. Limits: integers only; doubles saturate to inf and are range-checked where read.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/error.h"

namespace cs {

// a x b, or a UserError "<what>: a x b overflows a 64-bit integer".
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw UserError(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                    " overflows a 64-bit integer");
  }
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw UserError(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                    " overflows a 64-bit integer");
  }
  return r;
}

// The product of `factors`, checked step by step.
inline int64_t checked_product(std::initializer_list<int64_t> factors, std::string_view what) {
  int64_t r = 1;
  for (int64_t f : factors) r = checked_mul(r, f, what);
  return r;
}

// `v` as an int, or a UserError saying it is above 2^31 - 1.
inline int checked_int(int64_t v, std::string_view what) {
  if (v > INT32_MAX || v < INT32_MIN)
    throw UserError(std::string(what) + ": " + std::to_string(v) +
                    " does not fit in a 32-bit integer");
  return static_cast<int>(v);
}

}  // namespace cs
