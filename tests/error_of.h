// The message of the UserError `f` throws, or "no error": tests compare what a user would read.
#pragma once

#include <functional>
#include <string>

#include "common/error.h"

namespace cs::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace cs::test
