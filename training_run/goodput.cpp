#include "training_run/goodput.h"

#include <cmath>

namespace cs::training_run {

double young_interval(double delta_s, double mtbf_s) { return std::sqrt(2.0 * delta_s * mtbf_s); }

double daly_interval(double delta_s, double mtbf_s) {
  if (delta_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = delta_s / (2.0 * mtbf_s);
  return young_interval(delta_s, mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta_s;
}

double wall_clock_factor(double interval_s, double delta_s, double restart_s, double mtbf_s) {
  // expm1 keeps the small exponents of a rare failure exact (e^x - 1 for x ~ 1e-4).
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + delta_s) / mtbf_s) /
         interval_s;
}

}  // namespace cs::training_run
