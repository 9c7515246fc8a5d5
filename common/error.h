// Errors a user can cause (bad scenario, impossible layout) are exceptions with context, caught in
// main, printed, and turned into a non-zero exit. Never abort on user input.
#pragma once

#include <stdexcept>
#include <string>

namespace cs {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cs
