#include "cli/bench_collective.h"

#include <chrono>
#include <cstdio>
#include <ostream>

#include "driver/simulation.h"
#include "cli/flags.h"
#include "common/error.h"
#include "scenarios/scenario.h"
#include "sim/engine.h"
#include "topology/cluster_spec.h"

namespace cs::cli {

SimTime simulate_one_collective(const cost::CostModel& costs, ir::CollectiveType type, Bytes size,
                                const std::vector<ir::RankId>& ranks, cost::NetworkFidelity fidelity) {
  // A full graph over the group's members: graph rank i is cluster rank ranks[i].
  ir::TaskGraph g(static_cast<uint32_t>(ranks.size()));
  uint32_t cluster_size = 0;
  for (ir::RankId r : ranks) cluster_size = std::max(cluster_size, r + 1);
  if (cluster_size != ranks.size()) g.set_cluster_ranks(ranks, cluster_size);
  const auto stream = g.add_stream("comm");
  const auto call = g.new_collective(type, size, g.group(ranks));
  const auto label = g.label(std::string(ir::to_string(type)), ir::Phase::other);
  for (uint32_t i = 0; i < ranks.size(); ++i) g.add_collective(i, stream, call, label);
  g.finalize();
  return sim::Engine(g, costs, fidelity).run().makespan;
}

namespace {

constexpr const char* kHelp =
    "usage: clustersim bench-collective [--cluster PRESET] [--nodes N] [--gpus N] [--op OP]\n"
    "                                   [--min SIZE] [--max SIZE] [--factor F] [--algo A] [--proto P]\n"
    "                                   [--fidelity analytic|flow|both] [--scenario FILE]\n"
    "  Prints, like nccl-tests, size, time, algbw and busbw of one collective over the first N GPUs.\n"
    "  --cluster PRESET   cluster preset (default dgx_h100; `clustersim list` shows them)\n"
    "  --nodes N          servers (default: enough for --gpus)\n"
    "  --gpus N           group size, ranks 0..N-1 (default: every GPU of the cluster)\n"
    "  --op OP            all_reduce (default), all_gather, reduce_scatter, broadcast, all_to_all\n"
    "  --min/--max SIZE   buffer sizes as nccl-tests -b/-e (default 1MiB .. 1GiB)\n"
    "  --factor F         size multiplier between rows, as nccl-tests -f (default 2)\n"
    "  --algo A           force an algorithm like NCCL_ALGO: ring, tree, nvls, hierarchical, direct\n"
    "  --proto P          force a protocol like NCCL_PROTO: LL, LL128, Simple\n"
    "  --fidelity F       analytic, flow or both (default both)\n"
    "  --scenario FILE    take the cluster (and network: settings) from a scenario file\n";

struct Options {
  std::string cluster = "dgx_h100";
  std::string scenario;
  int nodes = 0;
  int gpus = 0;
  ir::CollectiveType op = ir::CollectiveType::all_reduce;
  Bytes min{1 << 20}, max{int64_t{1} << 30};
  double factor = 2;
  cost::CollectiveOptions collectives{std::nullopt, std::nullopt, true};
  bool analytic = true, flow = true;
};

ir::CollectiveType parse_op(const std::string& s) {
  for (auto t : {ir::CollectiveType::all_reduce, ir::CollectiveType::all_gather, ir::CollectiveType::reduce_scatter,
                 ir::CollectiveType::broadcast, ir::CollectiveType::all_to_all}) {
    if (s == ir::to_string(t)) return t;
  }
  throw UserError("--op '" + s + "': valid values are all_reduce, all_gather, reduce_scatter, broadcast, all_to_all");
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError("option " + a + " needs a value");
      return args[++i];
    };
    auto count = [&](const std::string& v) { return int_flag(a, v, 1); };
    auto size = [&](const std::string& v) {
      try {
        const Bytes b = parse_bytes(v);
        if (b.count > 0) return b;
      } catch (const UnitError& e) {
        throw UserError(a + ": " + e.what());
      }
      throw UserError(a + " '" + v + "': expected a positive size such as 1MiB");
    };
    if (a == "--cluster") o.cluster = value();
    else if (a == "--scenario") o.scenario = value();
    else if (a == "--nodes") o.nodes = count(value());
    else if (a == "--gpus") o.gpus = count(value());
    else if (a == "--op") o.op = parse_op(value());
    else if (a == "--min") o.min = size(value());
    else if (a == "--max") o.max = size(value());
    else if (a == "--factor") o.factor = number_flag(a, value(), 1.0);
    else if (a == "--algo") {
      const std::string v = value();
      o.collectives.algorithm = cost::parse_algorithm(v);
      if (!o.collectives.algorithm) throw UserError("--algo '" + v + "': valid values are ring, tree, nvls, hierarchical, direct");
    } else if (a == "--proto") {
      const std::string v = value();
      o.collectives.protocol = cost::parse_protocol(v);
      if (!o.collectives.protocol) throw UserError("--proto '" + v + "': valid values are LL, LL128, Simple");
    } else if (a == "--fidelity") {
      const std::string v = value();
      if (v == "analytic") o.flow = false;
      else if (v == "flow") o.analytic = false;
      else if (v != "both") throw UserError("--fidelity '" + v + "': valid values are analytic, flow, both");
    } else if (a == "--help" || a == "-h") {
      throw UserError(kHelp);
    } else {
      throw UserError("unknown option '" + a + "' for bench-collective\n" + std::string(kHelp));
    }
  }
  if (o.max < o.min) throw UserError("--max must not be below --min");
  return o;
}

}  // namespace

int bench_collective_command(const std::vector<std::string>& args, std::ostream& out) {
  Options o = parse(args);
  topo::ClusterSpec spec;
  if (!o.scenario.empty()) {
    const scenario::Scenario s = scenario::load_scenario(o.scenario);
    if (s.cluster_name == "custom") throw UserError("--scenario: bench-collective needs a preset-based cluster");
    spec = s.cluster;
    if (!o.collectives.algorithm) o.collectives.algorithm = s.collectives.algorithm;
    if (!o.collectives.protocol) o.collectives.protocol = s.collectives.protocol;
  } else {
    spec = topo::find_cluster_preset(o.cluster);
    const int per_node = spec.node.gpus;
    spec.nodes = o.nodes > 0 ? o.nodes : (o.gpus > 0 ? (o.gpus + per_node - 1) / per_node : 1);
  }
  const topo::Topology topology = topo::build_cluster(spec);
  const int gpus = o.gpus > 0 ? o.gpus : topology.gpu_count();
  if (gpus > topology.gpu_count()) {
    throw UserError("--gpus " + std::to_string(gpus) + " exceeds the " + std::to_string(topology.gpu_count()) + " GPUs of " +
                    std::to_string(spec.nodes) + " x " + spec.name + " (raise --nodes)");
  }
  if (gpus < 2) throw UserError("a collective needs at least 2 GPUs");
  std::vector<ir::RankId> ranks;
  for (int r = 0; r < gpus; ++r) ranks.push_back(static_cast<ir::RankId>(r));
  const cost::DeviceSpec& device = cost::find_device(spec.gpu);
  const cost::AnalyticCostModel costs{cost::ComputeModel(device), cost::CollectiveModel(topology, driver::collective_params(device), o.collectives)};
  const auto& model = costs.collective_model();
  const double bus = cost::CollectiveModel::bus_factor(o.op, ranks.size());

  char line[256];
  out << "# clustersim bench-collective: " << ir::to_string(o.op) << " over " << gpus << " GPUs of " << spec.nodes << " x " << spec.name
      << " (" << device.name << ")\n";
  out << "# algorithm " << (o.collectives.algorithm ? std::string(cost::to_string(*o.collectives.algorithm)) : "auto") << ", protocol "
      << (o.collectives.protocol ? std::string(cost::to_string(*o.collectives.protocol)) : "auto")
      << "; busbw = algbw x " << bus << " (nccl-tests)\n";
  std::snprintf(line, sizeof line, "# %12s %12s %6s  %-18s %10s %8s %8s", "size", "count", "type", "algo/proto", "time(us)", "algbw", "busbw");
  out << line;
  if (o.analytic && o.flow) out << "  " << "flow: time(us)    algbw    busbw";
  out << "\n";
  double analytic_wall = 0, flow_wall = 0;
  int rows = 0;
  for (double sz = static_cast<double>(o.min.count); sz <= static_cast<double>(o.max.count) * (1 + 1e-9); sz *= o.factor) {
    const Bytes size{static_cast<int64_t>(sz)};
    auto columns = [&](SimTime t) {
      const double algbw = static_cast<double>(size.count) / t.seconds() * 1e-9;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%10.1f %8.2f %8.2f", t.us(), algbw, algbw * bus);
      return std::string(buf);
    };
    std::string row;
    auto timed = [](auto&& f, double& wall) {
      const auto t0 = std::chrono::steady_clock::now();
      const SimTime t = f();
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return t;
    };
    if (o.analytic) {
      const SimTime t = timed([&] { return simulate_one_collective(costs, o.op, size, ranks, cost::NetworkFidelity::analytic); }, analytic_wall);
      row += columns(t);
    }
    if (o.flow) {
      const SimTime t = timed([&] { return simulate_one_collective(costs, o.op, size, ranks, cost::NetworkFidelity::flow); }, flow_wall);
      row += (o.analytic ? "        " : "") + columns(t);
    }
    const cost::CollectiveChoice choice = model.choose(o.op, size, ranks);
    const std::string algo = std::string(cost::to_string(choice.plan->algorithm)) + "/" + std::string(cost::to_string(choice.plan->protocol));
    std::snprintf(line, sizeof line, "  %12lld %12lld %6s  %-18s ", static_cast<long long>(size.count), static_cast<long long>(size.count / 4), "float", algo.c_str());
    out << line << row << "\n";
    ++rows;
  }
  const auto& plan = *model.choose(o.op, o.max, ranks).plan;
  out << "# " << plan.channels << " channel" << (plan.channels == 1 ? "" : "s") << " across nodes; largest size alone on the network: "
      << plan.phases.size() << " phase" << (plan.phases.size() == 1 ? "" : "s") << ", latency " << plan.latency.us() << " us\n";
  std::snprintf(line, sizeof line, "# wall time over %d sizes: analytic %.3f s, flow %.3f s (the first level timed also builds the plans)\n", rows,
                analytic_wall, flow_wall);
  out << line;
  return 0;
}

}  // namespace cs::cli
