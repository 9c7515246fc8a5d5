// Where a collective's cost comes from: each NCCL algorithm laid onto the topology as link loads
// (a CommPlan), plus its latency: a host launch overhead and NCCL 2.28's per-step latencies.
//
// Per buffer of S bytes over n ranks on N nodes (k = channels = NICs per node the group can use):
//   ring all_reduce      2(n-1)/n S per rank over every ring hop, 2(n-1) steps
//   ring all_gather /    (n-1)/n S per rank, n-1 steps
//        reduce_scatter
//   ring broadcast       S over each hop of an open chain, n-1 steps (pipelined)
//   tree all_reduce      S up and S down every chain and tree edge (two binary trees, S/2 each);
//                        latency 2((n/N - 1) intra + floor(log2 N) network) steps
//   nvls all_reduce      S into and S out of the NVSwitch per GPU, reduced in the switch
//   pat all_gather /     (n-1)/n S per rank through its NIC at 0.75 of ring's rate (NCCL 2.28);
//       reduce_scatter   latency floor(log2 N) x netLat / 3.5 + 2.8 us x n; one GPU per node only
//   hierarchical         intra-node ring reduce-scatter, then per-rail rings over nodes on S/L,
//                        then intra-node ring all-gather (three phases, not pipelined)
//   direct all_to_all    S/n from every rank to every other at once
// Latency = launch overhead + steps x NCCL 2.28 hwLat of the hop kind each step crosses (ring
// steps inside a node floor at 1 us, x3 for Simple, when the ring crosses nodes; with one GPU per
// node the network steps use the tree's figure, as NCCL does). Bandwidth refinements of NCCL 2.28:
// LL 0.5 of the line capped at llMaxBw, LL128 0.92, tree 0.92, PAT 0.75.
// Across nodes each channel's ring enters a node at the GPU beside the channel's NIC, visits the
// node's other members over NVLink and leaves through the same NIC (NCCL's PXN: the last GPU
// hands its data over NVLink to the NIC's GPU), so every channel stays on its rail.
//
// GPU-driven hops (inside a node, SMs store to the peer) also pay for passes over the user buffer
// that the link transfer does not hide (reading the input, writing the output): the GPU's egress
// link is loaded with that time as extra weight. Network hops are NIC DMA and overlap with it.
// Validation: validate/suites/nccl_tests_8xh100.yaml (8x H100, every size 8 B .. 8 GiB within
// 15%) and the vTrain A100 curves (tests/network_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cost_models/comm_plan.h"
#include "cost_models/device_spec.h"
#include "topology/topology.h"

namespace cs::cost {

// Fitted on the whole of validate/data/nccl_tests_8xh100_awsome.txt (nccl-tests all_reduce_perf on
// one p5.48xlarge, 8x H100 SXM with NVSwitch, 8 B .. 16 GiB; see
// validate/suites/nccl_tests_8xh100.yaml): four global constants, fitted by a grid search
// minimising the worst |error|, then the mean, over the 31 sizes 8 B .. 8 GiB, against the better
// of each size's out-of-place and in-place times (tests/collective_nccl228_test.cpp reads the file
// and checks every size).
inline constexpr double kH100LaunchOverheadUs =
    5.6;  // host launch + kernel start/finish per collective
inline constexpr double kH100LlChannelGBps =
    6.0;  // LL throughput of one channel (buffer GB/s), 8 ranks
inline constexpr double kH100NvlsPipelineUs =
    36.0;  // NVLS fill/drain beyond NCCL's 25 us NVLink step
inline constexpr double kH100NvlsEfficiency =
    256.0 / 450.0;  // NVLS algbw 256 GB/s of 450 GB/s NVLink

// Fitted on vTrain's A100 all-reduce curves (validate/data/vtrain_a100_allreduce,
// tests/network_test.cpp): buffer passes at 1100 of 2039 GB/s of HBM, the NVLink3 ring at 299.7
// of 300 GB/s.
inline constexpr double kBufferPassEfficiency = 0.54;
inline constexpr double kNvlinkEfficiency = 1.0;

// The fitted collective constants the model prices with: the shipped fits above, unless a refit
// (`validate --fit`, `--cross-validate`: validate/refit.h) replaces them for a while.
struct CollectiveFits {
  double launch_overhead_us = kH100LaunchOverheadUs;
  double ll_channel_gbps = kH100LlChannelGBps;
  double nvls_pipeline_us = kH100NvlsPipelineUs;
  double nvls_efficiency = kH100NvlsEfficiency;
  double pass_efficiency = kBufferPassEfficiency;
  double nvlink_efficiency = kNvlinkEfficiency;
};
const CollectiveFits& collective_fits();
// Replaces collective_fits() while it lives. The constants are read when a CollectiveParams is
// made: make this before any simulation starts on another thread and end it after they finish.
class ScopedCollectiveFits {
 public:
  explicit ScopedCollectiveFits(const CollectiveFits& fits);
  ~ScopedCollectiveFits();
  ScopedCollectiveFits(const ScopedCollectiveFits&) = delete;
  ScopedCollectiveFits& operator=(const ScopedCollectiveFits&) = delete;

 private:
  CollectiveFits saved_;
};

struct CollectiveParams {
  // Host launch overhead of one collective as nccl-tests times it (enqueue, kernel launch, start
  // and completion); it stands where NCCL's own model puts baseLat. Default: the 8x H100 fit above.
  // The vTrain A100 system's curves (tests/network_test.cpp) need 46.6 us: their launch path was
  // slower.
  SimTime launch_overhead = SimTime::from_us(collective_fits().launch_overhead_us);
  // Achievable fraction of a link's per-direction bandwidth.
  //   NVLink 1.0: with the buffer passes modelled separately, the vTrain fit puts the NVLink3 ring
  //     at 299.7 GB/s of 300 (per GPU, per direction).
  //   PCIe 0.76: NCCL models Gen4 at 24 of 31.5 GB/s and Gen5 at 48 of 63.
  //   InfiniBand 0.95: NDR busbw 46-49 of 50 GB/s measured (validation README).
  //   Ethernet (RoCE) 0.90, inter-socket 0.70: uncalibrated round figures.
  double nvlink_efficiency = collective_fits().nvlink_efficiency;
  double pcie_efficiency = 0.76;
  double infiniband_efficiency = 0.95;
  double ethernet_efficiency = 0.90;
  double socket_efficiency = 0.70;
  // Unhidden passes over the user buffer run at this fraction of the GPU's HBM bandwidth. Fitted
  // on vTrain's A100 curves: 1100 GB/s of 2039 GB/s. It is what makes a 2-GPU all-reduce reach
  // 199.5 GB/s busbw and an 8-GPU one 232.9 GB/s on the same 300 GB/s links.
  double pass_efficiency = collective_fits().pass_efficiency;
  BytesPerSecond memory_bandwidth{3.35e12};  // the GPU's HBM; set from the device spec
  // The GPU's architecture, which picks NCCL's tuning row (ring LL's bus-bandwidth cap); set from
  // the device spec. Default: the H100 the figures above were fitted on.
  GpuArch arch = GpuArch::hopper;
  // NVLS algorithm bandwidth as a fraction of the GPU's NVLink bandwidth, and its latency beyond
  // NCCL's per-step figure (the 8x H100 fit above; NCCL's maintainers quote ~480 GB/s busbw, i.e.
  // algbw 274 GB/s, at the largest sizes: the fit gives 256 GB/s, weighted by the sizes below 4
  // GiB).
  double nvls_efficiency = collective_fits().nvls_efficiency;
  SimTime nvls_pipeline_latency = SimTime::from_us(collective_fits().nvls_pipeline_us);
  // LL below NCCL's channel threshold: NCCL 2.28 gives a ring LL collective one channel per
  // 512 threads x 8 B x nRanks of buffer (enqueue.cc), each channel moving this many buffer
  // bytes/s.
  BytesPerSecond ll_channel_rate{collective_fits().ll_channel_gbps * 1e9};
  // When collectives were measured on the machine itself (a calibrated Profile), every
  // collective costs latency + bus bytes / bus bandwidth instead of the topology model.
  std::optional<SimTime> measured_latency;
  std::optional<BytesPerSecond> measured_bus_bandwidth;

  bool operator==(const CollectiveParams&) const = default;
};

// NCCL 2.28's channel tuning seen by one plan: below `channel_bytes` x channels the collective runs
// on fewer channels, each at `channel_rate`; the plan's own rate is the cap. Analytic level only
// (the flow-level engine runs the plan's phases at the links' rates).
struct ChannelRamp {
  double channel_bytes = 0;  // 0: no ramp
  double channel_rate = 0;   // buffer bytes per second per channel
  // Extra seconds over the plan's closed form for a buffer of `bytes` (>= 0).
  double extra_seconds(double bytes, double seconds_per_byte) const;
};

// The plan for `type` with this algorithm and protocol over `ranks` (cluster ranks, group order),
// or nullopt with `why_not` filled when the algorithm cannot run it there (e.g. nvls across
// nodes, tree on one node, hierarchical with unequal members per node).
std::optional<CommPlan> plan_collective(const topo::Topology& topology,
                                        const CollectiveParams& params, ir::CollectiveType type,
                                        Algorithm algorithm, Protocol protocol,
                                        const std::vector<ir::RankId>& ranks,
                                        std::string* why_not = nullptr,
                                        ChannelRamp* ramp = nullptr);
// A point-to-point transfer (Simple protocol).
CommPlan plan_p2p(const topo::Topology& topology, const CollectiveParams& params, ir::RankId src,
                  ir::RankId dst);

// A link's usable capacity: bandwidth x the efficiency of its kind.
double link_capacity(const topo::Topology& topology, const CollectiveParams& params, uint32_t link);

}  // namespace cs::cost
