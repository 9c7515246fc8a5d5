#include "common/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/limits.h"

namespace cs {

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return v;
}
namespace {

struct Suffix {
  std::string_view name;
  double scale;
};

// Splits "12.5 GiB" into 12.5 and "GiB"; throws if the number part is missing or negative.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what,
                                                 std::string_view valid) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) {
    throw UnitError("cannot parse " + std::string(what) + " '" + std::string(text) +
                    "': expected a number followed by one of " + std::string(valid));
  }
  if (value < 0 || !std::isfinite(value)) {
    throw UnitError(std::string(what) + " '" + std::string(text) +
                    "' must be a non-negative number");
  }
  std::string_view rest(ptr, static_cast<size_t>(end - ptr));
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  return {value, rest};
}

double lookup(std::string_view text, std::string_view what, const std::vector<Suffix>& suffixes,
              std::string_view valid) {
  auto [value, unit] = split_number(text, what, valid);
  for (const Suffix& s : suffixes) {
    if (unit == s.name) return value * s.scale;
  }
  throw UnitError("unknown unit '" + std::string(unit) + "' in " + std::string(what) + " '" +
                  std::string(text) + "': valid units are " + std::string(valid));
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  static const std::vector<Suffix> kSuffixes = {{"", 1},
                                                {"B", 1},
                                                {"KiB", 1024.0},
                                                {"MiB", 1048576.0},
                                                {"GiB", 1073741824.0},
                                                {"TiB", 1099511627776.0},
                                                {"KB", 1e3},
                                                {"MB", 1e6},
                                                {"GB", 1e9},
                                                {"TB", 1e12}};
  double v = lookup(text, "byte size", kSuffixes, "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB");
  if (!limits::within(limits::kBytes, v))
    throw UnitError(limits::out_of_range(limits::kBytes, std::string(text)));
  return {static_cast<int64_t>(std::llround(v))};
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  static const std::vector<Suffix> kSuffixes = {
      {"B/s", 1},     {"KB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9},     {"TB/s", 1e12},
      {"bps", 0.125}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}};
  double v = lookup(text, "bandwidth", kSuffixes,
                    "B/s, KB/s, MB/s, GB/s, TB/s, bps, Kbps, Mbps, Gbps, Tbps");
  if (v <= 0) throw UnitError("bandwidth '" + std::string(text) + "' must be positive");
  if (!limits::within(limits::kBandwidth, v))
    throw UnitError(limits::out_of_range(limits::kBandwidth, std::string(text)));
  return {v};
}

SimTime parse_duration(std::string_view text) {
  static const std::vector<Suffix> kSuffixes = {
      {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  const double v = lookup(text, "duration", kSuffixes, "ps, ns, us, ms, s");
  if (!limits::within(limits::kDuration, v))
    throw UnitError(limits::out_of_range(limits::kDuration, std::string(text)));
  return SimTime::from_seconds(v);
}

FlopsPerSecond parse_flops_rate(std::string_view text) {
  // Datasheets write "989 TFLOPS", "989 TFLOP/s" and "989 TFLOPs"; all three mean FLOP per second.
  static const std::vector<Suffix> kSuffixes = {
      {"GFLOPS", 1e9},  {"TFLOPS", 1e12},  {"PFLOPS", 1e15},  {"EFLOPS", 1e18},
      {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"EFLOP/s", 1e18},
      {"GFLOPs", 1e9},  {"TFLOPs", 1e12},  {"PFLOPs", 1e15},  {"EFLOPs", 1e18}};
  double v = lookup(text, "compute rate", kSuffixes,
                    "GFLOPS, TFLOPS, PFLOPS, EFLOPS (also written GFLOP/s or GFLOPs)");
  if (v <= 0) throw UnitError("compute rate '" + std::string(text) + "' must be positive");
  if (!limits::within(limits::kFlopsRate, v))
    throw UnitError(limits::out_of_range(limits::kFlopsRate, std::string(text)));
  return {v};
}

std::string format_bytes(Bytes b) {
  char buf[64];
  const double v = static_cast<double>(b.count);
  if (std::abs(v) >= 1073741824.0)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b.gib());
  else if (std::abs(v) >= 1048576.0)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b.mib());
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b.count));
  return buf;
}

std::string format_time(SimTime t) {
  char buf[64];
  if (t.ps >= 1000000000000LL)
    std::snprintf(buf, sizeof buf, "%.3f s", t.seconds());
  else if (t.ps >= 1000000000LL)
    std::snprintf(buf, sizeof buf, "%.3f ms", t.ms());
  else
    std::snprintf(buf, sizeof buf, "%.3f us", t.us());
  return buf;
}

}  // namespace cs
