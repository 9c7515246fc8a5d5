// Calibrated efficiencies as tables, interpolated between the points that were measured.
//
// Both interpolate in log2 of the size: GEMM and kernel efficiency change with the order of
// magnitude of the work (tiles filled, caches fitting), not linearly with it. Beyond the measured
// range they hold the nearest measured value rather than extrapolate.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cs::cost {

// Efficiency by one size (FLOPs or bytes).
class EfficiencyCurve {
 public:
  EfficiencyCurve() = default;
  // Points (size > 0, efficiency > 0) in any order; a repeated size keeps the last.
  explicit EfficiencyCurve(std::vector<std::pair<double, double>> points);
  bool empty() const { return points_.empty(); }
  double at(double size) const;
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;  // sorted by size
  std::vector<double> sizes_;                      // their sizes, for the search
};

// GEMM efficiency by shape on a full m x n x k grid, trilinear in (log2 m, log2 n, log2 k).
struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  double efficiency = 0;
};

class GemmEfficiencyGrid {
 public:
  GemmEfficiencyGrid() = default;
  // Throws UserError when the points do not cover every combination of their m, n and k values
  // (naming the first missing one) or hold a non-positive size or efficiency.
  explicit GemmEfficiencyGrid(std::vector<GemmPoint> points);
  bool empty() const { return points_.empty(); }
  double at(int64_t m, int64_t n, int64_t k) const;
  const std::vector<GemmPoint>& points() const { return points_; }

 private:
  std::vector<int64_t> ms_, ns_, ks_;  // the grid's axes, ascending
  std::vector<GemmPoint> points_;      // ordered m-major, then n, then k
};

}  // namespace cs::cost
