// `clustersim bench-collective`: one collective over the first N GPUs of a cluster, as
// nccl-tests prints it (in its own layout or nccl-tests' exact one), or NCCL's tuning table.
#include "workflows/bench_collective.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>

#include "common/error.h"
#include "common/limits.h"
#include "cost_models/analytic_cost_model.h"
#include "cost_models/nccl_comm_shape.h"
#include "driver/simulation.h"
#include "scenarios/scenario.h"
#include "topology/cluster_spec.h"
#include "validate/nccl_tests_log.h"

namespace cs::workflows {

namespace {

// NCCL 2.28's own table for this group, for the communicator cost::nccl_comm_shape derives.
void print_tuning_table(const cost::CollectiveModel& model, const std::vector<ir::RankId>& ranks,
                        std::ostream& out) {
  const cost::NcclCommShape shape = cost::nccl_comm_shape(model, ranks);
  const auto table = cost::nccl_tuning_table(shape);
  out << "# " << cost::kNccl228.release << " tuning model (" << cost::kNccl228.source << ")\n";
  out << "# " << shape.ranks << " ranks on " << shape.nodes << " node"
      << (shape.nodes == 1 ? "" : "s") << ", " << cost::to_string(shape.arch) << ", "
      << shape.channels << " channels, ring graph " << shape.ring_bus_bw << " GB/s, NVLS "
      << shape.nvls_channels << " channels " << shape.nvls_bus_bw << " GB/s\n";
  out << "# latency (us) / bandwidth (GB/s, NCCL's algorithm bandwidth; 0 = not available)\n";
  char line[64];
  out << "#    Function |";
  for (int a = 0; a < cost::kNcclAlgoCount; ++a) {
    for (int p = 0; p < cost::kProtocolCount; ++p) {
      std::snprintf(line, sizeof line, " %8s/%-6s |",
                    std::string(cost::to_string(static_cast<cost::NcclAlgo>(a))).c_str(),
                    std::string(cost::to_string(static_cast<cost::Protocol>(p))).c_str());
      out << line;
    }
  }
  out << "\n";
  for (auto type : {ir::CollectiveType::broadcast, ir::CollectiveType::all_gather,
                    ir::CollectiveType::reduce_scatter, ir::CollectiveType::all_reduce}) {
    std::snprintf(line, sizeof line, "%14s |", std::string(ir::to_string(type)).c_str());
    out << line;
    for (int a = 0; a < cost::kNcclAlgoCount; ++a) {
      for (int p = 0; p < cost::kProtocolCount; ++p) {
        const auto it =
            std::find_if(table.begin(), table.end(), [&](const cost::NcclTableEntry& e) {
              return e.type == type && e.algo == static_cast<cost::NcclAlgo>(a) &&
                     e.proto == static_cast<cost::Protocol>(p);
            });
        if (it == table.end())
          std::snprintf(line, sizeof line, " %8s/%6s |", "-", "-");
        else
          std::snprintf(line, sizeof line, " %8.1f/%6.1f |", it->latency_us, it->bandwidth);
        out << line;
      }
    }
    out << "\n";
  }
}

// The cluster of the request (--scenario's, or a preset with enough nodes for --gpus), with the
// scenario's forced algorithm and protocol where the flags force none.
topo::ClusterSpec cluster_of(BenchCollectiveRequest& o) {
  if (!o.scenario.empty()) {
    const scenario::Scenario s = scenario::load_scenario(o.scenario);
    if (s.has_custom_cluster())
      throw UserError("--scenario: bench-collective needs a preset-based cluster");
    if (!o.collectives.algorithm) o.collectives.algorithm = s.collectives.algorithm;
    if (!o.collectives.protocol) o.collectives.protocol = s.collectives.protocol;
    return s.cluster;
  }
  topo::ClusterSpec spec = topo::find_cluster_preset(o.cluster);
  const int per_node = spec.node.gpus;
  spec.nodes = o.nodes > 0 ? o.nodes : (o.gpus > 0 ? (o.gpus + per_node - 1) / per_node : 1);
  return spec;
}

// The group: ranks 0..N-1 of the topology (N: --gpus, else every GPU).
std::vector<ir::RankId> group_of(const BenchCollectiveRequest& o, const topo::ClusterSpec& spec,
                                 const topo::Topology& topology) {
  const int gpus = o.gpus > 0 ? o.gpus : topology.gpu_count();
  if (gpus > topology.gpu_count()) {
    throw UserError(o.gpus_flag + " " + std::to_string(gpus) + " exceeds the " +
                    std::to_string(topology.gpu_count()) + " GPUs of " +
                    std::to_string(spec.nodes) + " x " + spec.name + " (raise --nodes)");
  }
  if (gpus < 2) throw UserError("a collective needs at least 2 GPUs");
  std::vector<ir::RankId> ranks;
  for (int r = 0; r < gpus; ++r) ranks.push_back(static_cast<ir::RankId>(r));
  return ranks;
}

// The clock time of `f`, added to `wall`.
template <class F>
SimTime timed(F&& f, double& wall) {
  const auto t0 = std::chrono::steady_clock::now();
  const SimTime t = f();
  wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

// clustersim's own table: per size the algorithm and protocol NCCL would choose and time / algbw
// / busbw at each fidelity asked for, then the largest size's plan and the wall time spent.
class Table {
 public:
  Table(const BenchCollectiveRequest& o, const cost::AnalyticCostModel& costs,
        const std::vector<ir::RankId>& ranks)
      : o_(o),
        costs_(costs),
        ranks_(ranks),
        bus_(cost::CollectiveModel::bus_factor(o.op, ranks.size())) {}

  void print(std::ostream& out, const topo::ClusterSpec& spec, const std::string& device) {
    out << "# clustersim bench-collective: " << ir::to_string(o_.op) << " over " << ranks_.size()
        << " GPUs of " << spec.nodes << " x " << spec.name << " (" << device << ")\n";
    out << "# algorithm "
        << (o_.collectives.algorithm ? std::string(cost::to_string(*o_.collectives.algorithm))
                                     : "auto")
        << ", protocol "
        << (o_.collectives.protocol ? std::string(cost::to_string(*o_.collectives.protocol))
                                    : "auto")
        << "; busbw = algbw x " << bus_ << " (nccl-tests)\n";
    char line[256];
    std::snprintf(line, sizeof line, "# %12s %12s %6s  %-18s %10s %8s %8s", "size", "count", "type",
                  "algo/proto", "time(us)", "algbw", "busbw");
    out << line;
    if (o_.analytic && o_.flow)
      out << "  "
          << "flow: time(us)    algbw    busbw";
    out << "\n";
    int rows = 0;
    for (double sz = static_cast<double>(o_.min.count);
         sz <= static_cast<double>(o_.max.count) * (1 + 1e-9); sz *= o_.factor) {
      print_row(out, Bytes{static_cast<int64_t>(sz)});
      ++rows;
    }
    const auto& plan = *costs_.collective_model().choose(o_.op, o_.max, ranks_).plan;
    out << "# " << plan.channels << " channel" << (plan.channels == 1 ? "" : "s")
        << " across nodes; largest size alone on the network: " << plan.phases.size() << " phase"
        << (plan.phases.size() == 1 ? "" : "s") << ", latency " << plan.latency.us() << " us\n";
    std::snprintf(line, sizeof line,
                  "# wall time over %d sizes: analytic %.3f s, flow %.3f s (the first level timed "
                  "also builds the plans)\n",
                  rows, analytic_wall_, flow_wall_);
    out << line;
  }

 private:
  std::string columns(Bytes size, SimTime t) const {
    const double algbw = static_cast<double>(size.count) / t.seconds() * 1e-9;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%10.1f %8.2f %8.2f", t.us(), algbw, algbw * bus_);
    return buf;
  }

  SimTime time(Bytes size, cost::NetworkFidelity fidelity) const {
    return driver::simulate_collective(costs_, o_.op, size, ranks_, fidelity);
  }

  void print_row(std::ostream& out, Bytes size) {
    std::string row;
    if (o_.analytic) {
      const SimTime t =
          timed([&] { return time(size, cost::NetworkFidelity::analytic); }, analytic_wall_);
      row += columns(size, t);
    }
    if (o_.flow) {
      const SimTime t = timed([&] { return time(size, cost::NetworkFidelity::flow); }, flow_wall_);
      row += (o_.analytic ? "        " : "") + columns(size, t);
    }
    const cost::CollectiveChoice choice = costs_.collective_model().choose(o_.op, size, ranks_);
    const std::string algo = std::string(cost::to_string(choice.plan->algorithm)) + "/" +
                             std::string(cost::to_string(choice.plan->protocol));
    char line[256];
    std::snprintf(line, sizeof line, "  %12lld %12lld %6s  %-18s ",
                  static_cast<long long>(size.count),
                  static_cast<long long>(size.count / o_.type_size), o_.type.c_str(), algo.c_str());
    out << line << row << "\n";
  }

  const BenchCollectiveRequest& o_;
  const cost::AnalyticCostModel& costs_;
  const std::vector<ir::RankId>& ranks_;
  const double bus_;
  double analytic_wall_ = 0, flow_wall_ = 0;
};

}  // namespace

int bench_collective(BenchCollectiveRequest o, std::ostream& out) {
  const topo::ClusterSpec spec = cluster_of(o);
  if (int64_t{spec.nodes} * spec.node.gpus > o.max_cluster_gpus) {
    throw UserError("a cluster of " + std::to_string(int64_t{spec.nodes} * spec.node.gpus) +
                    " GPUs (" + std::to_string(spec.nodes) + " x " + spec.name +
                    ") is above the limit of " + std::to_string(o.max_cluster_gpus) + " GPUs (" +
                    limits::kMaxGpusWhy + ")");
  }
  const topo::Topology topology = topo::build_cluster(spec);
  const std::vector<ir::RankId> ranks = group_of(o, spec, topology);
  const cost::DeviceSpec& device = cost::find_device(spec.gpu);
  const cost::AnalyticCostModel costs{
      cost::ComputeModel(device),
      cost::CollectiveModel(topology, driver::collective_params(device), o.collectives)};
  if (o.tuning_table) {
    print_tuning_table(costs.collective_model(), ranks, out);
    return 0;
  }
  if (o.nccl_tests_format) {
    const validate::NcclTestsSweep sweep{o.op,        o.min,         o.max,   o.factor,
                                         o.type,      o.type_size,   o.redop, spec.name,
                                         device.name, spec.node.gpus};
    const auto fidelity = o.flow ? cost::NetworkFidelity::flow : cost::NetworkFidelity::analytic;
    validate::write_nccl_tests_log(out, sweep, ranks, [&](Bytes size) {
      return driver::simulate_collective(costs, o.op, size, ranks, fidelity).us();
    });
    return 0;
  }
  Table(o, costs, ranks).print(out, spec, device.name);
  return 0;
}

}  // namespace cs::workflows
