// NCCL's vocabulary and the numbers of its tuning model: which algorithms and protocols exist, the
// latency each adds, and how much of a link's bandwidth each protocol delivers.
//
// Latencies are the baseLat / hwLat tables of NCCL's src/graph/tuning.cc (2.18-2.21, in us):
// a collective costs base[algorithm][protocol] plus, per step, the hardware latency of the hop
// kind the step crosses (NVLink, PCIe or network). Protocol bandwidth factors are the model
// refinements in the same file: LL moves 8-byte lines holding 4 bytes of data and NCCL rates its
// ring at 1/4 (all-reduce) or 1/3 (other collectives) of the bus bandwidth; LL128 carries 120
// payload bytes per 128-byte line (0.92); Simple moves whole buffers (1.0). Tree all-reduce
// reaches 0.92 of the ring's bus bandwidth.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/units.h"
#include "taskgraph/task_graph.h"

namespace cs::cost {

// ring: NCCL's ring, one per channel. tree: NCCL's double binary tree between nodes with a chain
// inside each node. nvls: NVLink SHARP, reduction inside the NVSwitch (single node).
// hierarchical: intra-node reduce-scatter, inter-node all-reduce per rail, intra-node all-gather
// (never picked automatically; NCCL has no such algorithm, frameworks build it from sub-groups).
// direct: every rank sends to every other at once (all-to-all). p2p: one send/recv pair.
enum class Algorithm : uint8_t { ring, tree, nvls, hierarchical, direct, p2p };
enum class Protocol : uint8_t { ll, ll128, simple };
inline constexpr int kAlgorithmCount = 6;
inline constexpr int kProtocolCount = 3;

std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);
// Case-insensitive, as NCCL_ALGO / NCCL_PROTO ("Ring", "LL128"); nullopt if unknown.
std::optional<Algorithm> parse_algorithm(std::string_view s);
std::optional<Protocol> parse_protocol(std::string_view s);

enum class HopKind : uint8_t { nvlink, pcie, network };

// NCCL's base latency of an algorithm/protocol pair, and its per-step latency on a hop kind.
SimTime base_latency(Algorithm a, Protocol p);
SimTime step_latency(HopKind hop, Algorithm a, Protocol p);
// Fraction of the Simple protocol's bandwidth this protocol reaches for the collective.
double protocol_bandwidth_factor(Protocol p, ir::CollectiveType type);
// Tree all-reduce's bandwidth relative to ring (NCCL: busBw * 0.92).
inline constexpr double kTreeBandwidthFactor = 0.92;

// Whether NCCL offers this algorithm with this protocol (NVLS, direct and p2p are Simple only).
bool supports(Algorithm a, Protocol p);

}  // namespace cs::cost
