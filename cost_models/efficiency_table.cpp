#include "cost_models/efficiency_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/error.h"

namespace cs::cost {
namespace {

// The two neighbours of x on an ascending axis and the weight of the upper one, in log2 space;
// clamped at both ends.
struct Bracket {
  size_t lo = 0, hi = 0;
  double t = 0;
};

template <typename T>
Bracket bracket(const std::vector<T>& axis, double x) {
  if (axis.size() == 1 || x <= static_cast<double>(axis.front())) return {0, 0, 0};
  if (x >= static_cast<double>(axis.back())) return {axis.size() - 1, axis.size() - 1, 0};
  const size_t hi = static_cast<size_t>(
      std::upper_bound(axis.begin(), axis.end(), x,
                       [](double v, const T& a) { return v < static_cast<double>(a); }) -
      axis.begin());
  const double a = std::log2(static_cast<double>(axis[hi - 1])),
               b = std::log2(static_cast<double>(axis[hi]));
  return {hi - 1, hi, (std::log2(x) - a) / (b - a)};
}

}  // namespace

EfficiencyCurve::EfficiencyCurve(std::vector<std::pair<double, double>> points) {
  std::map<double, double> sorted;
  for (const auto& [size, eff] : points) {
    if (!(size > 0) || !(eff > 0))
      throw UserError("efficiency curve: sizes and efficiencies must be positive");
    sorted[size] = eff;
  }
  points_.assign(sorted.begin(), sorted.end());
  for (const auto& pt : points_) sizes_.push_back(pt.first);
}

double EfficiencyCurve::at(double size) const {
  if (points_.empty()) throw std::logic_error("EfficiencyCurve::at on an empty curve");
  const Bracket b = bracket(sizes_, size);
  return points_[b.lo].second + b.t * (points_[b.hi].second - points_[b.lo].second);
}

GemmEfficiencyGrid::GemmEfficiencyGrid(std::vector<GemmPoint> points) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> by_shape;
  for (const GemmPoint& p : points) {
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || !(p.efficiency > 0)) {
      throw UserError("GEMM efficiency table: m, n, k and efficiency must be positive (m=" +
                      std::to_string(p.m) + " n=" + std::to_string(p.n) +
                      " k=" + std::to_string(p.k) + ")");
    }
    by_shape[{p.m, p.n, p.k}] = p.efficiency;
    ms_.push_back(p.m);
    ns_.push_back(p.n);
    ks_.push_back(p.k);
  }
  for (auto* axis : {&ms_, &ns_, &ks_}) {
    std::sort(axis->begin(), axis->end());
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  for (int64_t m : ms_) {
    for (int64_t n : ns_) {
      for (int64_t k : ks_) {
        const auto it = by_shape.find({m, n, k});
        if (it == by_shape.end()) {
          throw UserError(
              "GEMM efficiency table is not a full grid: no entry for m=" + std::to_string(m) +
              " n=" + std::to_string(n) + " k=" + std::to_string(k));
        }
        points_.push_back({m, n, k, it->second});
      }
    }
  }
}

double GemmEfficiencyGrid::at(int64_t m, int64_t n, int64_t k) const {
  if (points_.empty()) throw std::logic_error("GemmEfficiencyGrid::at on an empty grid");
  const Bracket bm = bracket(ms_, static_cast<double>(m)),
                bn = bracket(ns_, static_cast<double>(n)),
                bk = bracket(ks_, static_cast<double>(k));
  auto value = [&](size_t i, size_t j, size_t l) {
    return points_[(i * ns_.size() + j) * ks_.size() + l].efficiency;
  };
  double sum = 0;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 2; ++c) {
        const double w = (a ? bm.t : 1 - bm.t) * (b ? bn.t : 1 - bn.t) * (c ? bk.t : 1 - bk.t);
        if (w > 0) sum += w * value(a ? bm.hi : bm.lo, b ? bn.hi : bn.lo, c ? bk.hi : bk.lo);
      }
    }
  }
  return sum;
}

}  // namespace cs::cost
