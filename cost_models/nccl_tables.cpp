#include "cost_models/nccl_tables.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace cs::cost {
namespace {

// us. Rows: ring, tree, nvls (hierarchical, direct and p2p reuse ring's). Columns: LL, LL128,
// Simple. NCCL tuning.cc baseLat.
constexpr std::array<std::array<double, 3>, 3> kBaseUs = {{
    {6.6, 14.0, 8.4},   // ring
    {6.8, 14.0, 0.0},   // tree
    {0.0, 0.0, 0.0},    // nvls
}};
// us per step. NCCL tuning.cc hwLat[NVLINK | PCI | NET].
constexpr std::array<std::array<std::array<double, 3>, 3>, 3> kHopUs = {{
    {{{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0.0, 0.0, 25.0}}},    // NVLink: ring, tree, nvls
    {{{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0.0, 0.0, 0.0}}},      // PCIe
    {{{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0.0, 0.0, 0.0}}},    // network
}};

size_t row(Algorithm a) {
  switch (a) {
    case Algorithm::tree: return 1;
    case Algorithm::nvls: return 2;
    default: return 0;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
    case Algorithm::p2p: return "p2p";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  const std::string l = lower(s);
  for (int i = 0; i < kAlgorithmCount; ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (l == to_string(a)) return a;
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  const std::string l = lower(s);
  for (int i = 0; i < kProtocolCount; ++i) {
    const auto p = static_cast<Protocol>(i);
    if (l == lower(to_string(p))) return p;
  }
  return std::nullopt;
}

SimTime base_latency(Algorithm a, Protocol p) {
  return SimTime::from_us(kBaseUs[row(a)][static_cast<size_t>(p)]);
}

SimTime step_latency(HopKind hop, Algorithm a, Protocol p) {
  return SimTime::from_us(kHopUs[static_cast<size_t>(hop)][row(a)][static_cast<size_t>(p)]);
}

double protocol_bandwidth_factor(Protocol p, ir::CollectiveType type) {
  switch (p) {
    case Protocol::ll: return type == ir::CollectiveType::all_reduce ? 1.0 / 4.0 : 1.0 / 3.0;
    case Protocol::ll128: return 0.92;
    case Protocol::simple: return 1.0;
  }
  return 1.0;
}

bool supports(Algorithm a, Protocol p) {
  switch (a) {
    case Algorithm::ring:
    case Algorithm::tree:
    case Algorithm::hierarchical: return true;
    case Algorithm::nvls:
    case Algorithm::direct:
    case Algorithm::p2p: return p == Protocol::simple;
  }
  return false;
}

}  // namespace cs::cost
