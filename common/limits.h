// The physical bounds on every quantity a user can give (scenario, profile, flag, importer), in one
// table: each with its unit and the reason for it. Values outside are refused with that reason
// instead of becoming negative busy times, wrapped clocks or "inf" bandwidths downstream. The
// bounds are generous (no real hardware or run comes near them); what they keep out is arithmetic
// that cannot be right.
#pragma once

#include <cstdint>
#include <string>

namespace cs::limits {

struct PhysicalBound {
  double lo, hi;     // accepted: lo <= value <= hi
  const char* what;  // "a bandwidth"
  const char* text;  // the range in the unit a user writes ("1 B/s and 1 PB/s")
  const char* why;   // the reason for the bound
};

// Below 1 B/s one message of a few MiB outlasts the clock; no link, memory or NIC moves 10 PB/s
// (HBM3e: ~8 TB/s per GPU, NVLink 5: 900 GB/s per direction). Readers check tighter ranges per
// kind of link on top (scenario.cpp's NVLink, PCIe, NIC and HBM ranges).
inline constexpr PhysicalBound kBandwidth{
    1, 1e16, "a bandwidth", "1 B/s and 10 PB/s",
    "slower outlasts the simulator's clock; faster is beyond any link or memory built"};
// A latency, a per-kernel host cost or any single duration: at most an hour. The clock is integer
// picoseconds (int64: 106 days), and a step is a sum of many such terms.
inline constexpr PhysicalBound kDuration{
    0, 3600, "a duration", "0 and 1 hour",
    "one latency or overhead of more than an hour is not a measurement, and sums of them must stay "
    "within the clock's 106 days"};
// Sizes below 2^62 B (4 EiB): sums and products by small counts stay within 64-bit byte counts.
inline constexpr PhysicalBound kBytes{0, 4611686018427387904.0, "a size", "0 and 2^62 B (4 EiB)",
                                      "larger sizes overflow 64-bit byte counts when added up"};
// 1 MFLOP/s to 100 EFLOP/s: a GB300 is ~15 PFLOP/s dense FP4, a whole NVL72 rack 1.4 EFLOP/s
// (datasheets quote racks); the scenario reader bounds one GPU's peak more tightly.
inline constexpr PhysicalBound kFlopsRate{1e6, 1e20, "a compute rate", "1 MFLOP/s and 100 EFLOP/s",
                                          "no device or rack computes outside this range"};
// Multiplicative factors a user gives (slow-downs, bandwidth scales): finite and not absurd.
inline constexpr PhysicalBound kFactor{1e-6, 1e6, "a factor", "1e-6 and 1e6",
                                       "a factor outside this range is not a physical scaling"};

// GPUs in one simulated cluster: twice the largest announced training cluster (~100k GPUs).
inline constexpr int64_t kMaxGpus = 131072;

inline bool within(const PhysicalBound& b, double v) { return v >= b.lo && v <= b.hi; }

// "'1e-300B/s' is out of range: a bandwidth is between 1 B/s and 1 PB/s (slower outlasts ...)"
inline std::string out_of_range(const PhysicalBound& b, const std::string& given) {
  return "'" + given + "' is out of range: " + b.what + " is between " + b.text + " (" + b.why +
         ")";
}

}  // namespace cs::limits
