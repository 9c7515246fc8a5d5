// Quantities with units at every boundary: the simulator clock (integer picoseconds), byte
// counts, bandwidths and FLOP counts. Parsing accepts human units ("400Gbps", "2us", "80GiB",
// "450GB/s") and throws UnitError with what would be valid.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cs {

// The simulation clock: integer picoseconds, never a double, so runs are reproducible.
// int64 picoseconds reach 106 days, far beyond any training step.
struct SimTime {
  int64_t ps = 0;

  // The clock's end: arithmetic saturates here instead of wrapping (driver refuses a step that
  // reaches it).
  static constexpr SimTime max() { return {INT64_MAX}; }
  static constexpr SimTime from_seconds(double s) {
    const double ps = s * 1e12 + 0.5;
    if (!(ps < 9.2e18)) return max();  // also NaN
    if (ps < -9.2e18) return {-INT64_MAX};
    return {static_cast<int64_t>(ps)};
  }
  static constexpr SimTime from_us(double us) { return from_seconds(us * 1e-6); }
  constexpr double seconds() const { return static_cast<double>(ps) * 1e-12; }
  constexpr double ms() const { return static_cast<double>(ps) * 1e-9; }
  constexpr double us() const { return static_cast<double>(ps) * 1e-6; }

  constexpr SimTime operator+(SimTime o) const {
    int64_t r = 0;
    if (__builtin_add_overflow(ps, o.ps, &r)) return o.ps > 0 ? max() : SimTime{-INT64_MAX};
    return {r};
  }
  constexpr SimTime operator-(SimTime o) const {
    int64_t r = 0;
    if (__builtin_sub_overflow(ps, o.ps, &r)) return o.ps < 0 ? max() : SimTime{-INT64_MAX};
    return {r};
  }
  constexpr SimTime& operator+=(SimTime o) { return *this = *this + o; }
  constexpr SimTime& operator-=(SimTime o) { return *this = *this - o; }
  constexpr auto operator<=>(const SimTime&) const = default;
};

struct Bytes {
  int64_t count = 0;
  constexpr Bytes operator+(Bytes o) const { return {count + o.count}; }
  constexpr Bytes operator-(Bytes o) const { return {count - o.count}; }
  constexpr Bytes& operator+=(Bytes o) {
    count += o.count;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    count -= o.count;
    return *this;
  }
  constexpr double gib() const { return static_cast<double>(count) / (1024.0 * 1024.0 * 1024.0); }
  constexpr double mib() const { return static_cast<double>(count) / (1024.0 * 1024.0); }
  constexpr double gb() const { return static_cast<double>(count) * 1e-9; }
  constexpr auto operator<=>(const Bytes&) const = default;
};

struct BytesPerSecond {
  double value = 0;
  constexpr double gb_per_s() const { return value * 1e-9; }
  constexpr auto operator<=>(const BytesPerSecond&) const = default;
};

struct Flops {
  double value = 0;
  constexpr Flops operator+(Flops o) const { return {value + o.value}; }
  constexpr Flops& operator+=(Flops o) {
    value += o.value;
    return *this;
  }
};

struct FlopsPerSecond {
  double value = 0;
  constexpr double tflops() const { return value * 1e-12; }
};

constexpr Bytes operator""_B(unsigned long long v) { return {static_cast<int64_t>(v)}; }
constexpr Bytes operator""_KiB(unsigned long long v) { return {static_cast<int64_t>(v) << 10}; }
constexpr Bytes operator""_MiB(unsigned long long v) { return {static_cast<int64_t>(v) << 20}; }
constexpr Bytes operator""_GiB(unsigned long long v) { return {static_cast<int64_t>(v) << 30}; }
constexpr BytesPerSecond operator""_GBps(long double v) { return {static_cast<double>(v) * 1e9}; }
constexpr BytesPerSecond operator""_GBps(unsigned long long v) {
  return {static_cast<double>(v) * 1e9};
}
constexpr FlopsPerSecond operator""_TFLOPS(long double v) {
  return {static_cast<double>(v) * 1e12};
}
constexpr FlopsPerSecond operator""_TFLOPS(unsigned long long v) {
  return {static_cast<double>(v) * 1e12};
}
constexpr SimTime operator""_us(long double v) { return SimTime::from_us(static_cast<double>(v)); }
constexpr SimTime operator""_us(unsigned long long v) {
  return SimTime{static_cast<int64_t>(v) * 1000000};
}

// Time to move `bytes` at `rate`, rounded to the nearest picosecond.
inline SimTime transfer_time(Bytes bytes, BytesPerSecond rate) {
  return SimTime::from_seconds(static_cast<double>(bytes.count) / rate.value);
}
inline SimTime compute_time(Flops work, FlopsPerSecond rate) {
  return SimTime::from_seconds(work.value / rate.value);
}

// A unit string that does not parse. The message lists the accepted units.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "80GiB", "25MB", "1024" (plain bytes). Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB).
Bytes parse_bytes(std::string_view text);
// The whole text as a decimal integer ("12", "-3"), or nullopt ("12abc", "", "1e3", overflow).
std::optional<int64_t> parse_integer(std::string_view text);
// "450GB/s", "400Gbps", "25 GB/s", "100Mbps". Decimal prefixes, B = byte, b = bit.
BytesPerSecond parse_bandwidth(std::string_view text);
// "2us", "1.5ms", "700ns", "3s".
SimTime parse_duration(std::string_view text);
// "989TFLOPS", "67 TFLOP/s", "1.9PFLOPS", "2.25 PFLOPs" (G, T, P, E prefixes).
FlopsPerSecond parse_flops_rate(std::string_view text);

std::string format_bytes(Bytes b);   // "1.50 GiB"
std::string format_time(SimTime t);  // "12.345 ms"

}  // namespace cs
