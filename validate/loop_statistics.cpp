#include "validate/loop_statistics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cs::validate {

double spread(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("spread of no values");
  std::sort(v.begin(), v.end());
  const size_t trim = v.size() >= 5 ? 1 : 0;
  return (v[v.size() - 1 - trim] - v[trim]) / v[v.size() / 2];
}

LoopSummary summarize_loop(const std::vector<double>& errors,
                           const std::vector<double>& predicted_s,
                           const std::vector<double>& measured_s) {
  if (errors.empty() || predicted_s.size() != errors.size() || measured_s.size() != errors.size()) {
    throw std::invalid_argument("summarize_loop: one error, prediction and measurement per run");
  }
  std::vector<double> by_size = errors, signed_errors = errors;
  std::sort(by_size.begin(), by_size.end(),
            [](double x, double y) { return std::abs(x) < std::abs(y); });
  std::sort(signed_errors.begin(), signed_errors.end());
  LoopSummary s;
  s.median_error = by_size[by_size.size() / 2];
  s.median_signed_error = signed_errors[signed_errors.size() / 2];
  s.drift = std::max(spread(predicted_s), spread(measured_s));
  s.judged = errors.size() >= 3;
  s.steady = !s.judged || s.drift <= kSteadySpread;
  return s;
}

}  // namespace cs::validate
