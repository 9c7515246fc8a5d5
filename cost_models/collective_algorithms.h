// Where a collective's cost comes from: each NCCL algorithm laid onto the topology as link loads
// (a CommPlan), plus its latency from NCCL's tables.
//
// Per buffer of S bytes over n ranks on N nodes (k = channels = NICs per node the group can use):
//   ring all_reduce      2(n-1)/n S per rank over every ring hop, 2(n-1) steps
//   ring all_gather /    (n-1)/n S per rank, n-1 steps
//        reduce_scatter
//   ring broadcast       S over each hop of an open chain, n-1 steps (pipelined)
//   tree all_reduce      S up and S down every chain and tree edge (two binary trees, S/2 each);
//                        latency 2((n/N - 1) intra + log2 N network) steps
//   nvls all_reduce      S into and S out of the NVSwitch per GPU, reduced in the switch
//   hierarchical         intra-node ring reduce-scatter, then per-rail rings over nodes on S/L,
//                        then intra-node ring all-gather (three phases, not pipelined)
//   direct all_to_all    S/n from every rank to every other at once
// Across nodes each channel's ring enters a node at the GPU beside the channel's NIC, visits the
// node's other members over NVLink and leaves through the same NIC (NCCL's PXN: the last GPU
// hands its data over NVLink to the NIC's GPU), so every channel stays on its rail.
//
// GPU-driven hops (inside a node, SMs store to the peer) also pay for passes over the user buffer
// that the link transfer does not hide (reading the input, writing the output): the GPU's egress
// link is loaded with that time as extra weight. Network hops are NIC DMA and overlap with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cost_models/comm_plan.h"
#include "topology/topology.h"

namespace cs::cost {

struct CollectiveParams {
  // Launch and completion overhead of one collective as nccl-tests times it. Fitted with the two
  // factors below on the vTrain A100 all-reduce curves (2-8 GPUs, 1 MiB-1 GiB; see
  // tests/network_test.cpp): 40 us. NCCL's own base latencies (nccl_tables) come on top.
  SimTime launch_overhead = SimTime::from_us(40.0);
  // Achievable fraction of a link's per-direction bandwidth.
  //   NVLink 1.0: with the buffer passes modelled separately, the vTrain fit puts the NVLink3 ring
  //     at 299.7 GB/s of 300 (per GPU, per direction).
  //   PCIe 0.76: NCCL models Gen4 at 24 of 31.5 GB/s and Gen5 at 48 of 63.
  //   InfiniBand 0.95: NDR busbw 46-49 of 50 GB/s measured (validation README).
  //   Ethernet (RoCE) 0.90, inter-socket 0.70: uncalibrated round figures.
  double nvlink_efficiency = 1.0;
  double pcie_efficiency = 0.76;
  double infiniband_efficiency = 0.95;
  double ethernet_efficiency = 0.90;
  double socket_efficiency = 0.70;
  // Unhidden passes over the user buffer run at this fraction of the GPU's HBM bandwidth. Fitted
  // on vTrain's A100 curves: 1100 GB/s of 2039 GB/s. It is what makes a 2-GPU all-reduce reach
  // 199.5 GB/s busbw and an 8-GPU one 232.9 GB/s on the same 300 GB/s links.
  double pass_efficiency = 0.54;
  BytesPerSecond memory_bandwidth{3.35e12};  // the GPU's HBM; set from the device spec
  // NVLS algorithm bandwidth as a fraction of the GPU's NVLink bandwidth. From the NCCL
  // maintainers' ~480 GB/s all-reduce busbw on 8x H100: algbw 480 / 1.75 = 274 GB/s = 0.61 x 450.
  double nvls_efficiency = 0.61;
  // When collectives were measured on the machine itself (a calibrated Profile), every
  // collective costs latency + bus bytes / bus bandwidth instead of the topology model.
  std::optional<SimTime> measured_latency;
  std::optional<BytesPerSecond> measured_bus_bandwidth;
};

// The plan for `type` with this algorithm and protocol over `ranks` (cluster ranks, group order),
// or nullopt with `why_not` filled when the algorithm cannot run it there (e.g. nvls across
// nodes, tree on one node, hierarchical with unequal members per node).
std::optional<CommPlan> plan_collective(const topo::Topology& topology, const CollectiveParams& params,
                                        ir::CollectiveType type, Algorithm algorithm, Protocol protocol,
                                        const std::vector<ir::RankId>& ranks, std::string* why_not = nullptr);
// A point-to-point transfer (Simple protocol).
CommPlan plan_p2p(const topo::Topology& topology, const CollectiveParams& params, ir::RankId src, ir::RankId dst);

// A link's usable capacity: bandwidth x the efficiency of its kind.
double link_capacity(const topo::Topology& topology, const CollectiveParams& params, uint32_t link);

}  // namespace cs::cost
