
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "cost_models/analytic_cost_model.h"
#include "cost_models/nccl_comm_shape.h"
#include "driver/simulation.h"
#include "scenarios/named_models.h"
#include "scenarios/scenario.h"
#include "topology/cluster_spec.h"

namespace cs::cli {

namespace {

constexpr const char* kFooter =
    "Prints, like nccl-tests, size, time, algbw and busbw of one collective over the first N GPUs; "
    "the short options are nccl-tests' own.";

constexpr int kMaxRows = 1000;  // nccl-tests' default sweep prints ~30

struct Options {
  std::string cluster = "dgx_h100";
  std::string scenario;
  int nodes = 0;
  int gpus = 0;
  ir::CollectiveType op = ir::CollectiveType::all_reduce;
  Bytes min{1 << 20}, max{int64_t{1} << 30};
  double factor = 2;
  cost::CollectiveOptions collectives{std::nullopt, std::nullopt, true};
  bool analytic = true, flow = true, fidelity_given = false;
  bool nccl_tests_format = false, tuning_table = false;
  std::string type = "float";
  int type_size = 4;
  std::string redop = "sum";
};

// nccl-tests' -d names and their sizes in bytes.
constexpr std::pair<const char*, int> kTypes[] = {
    {"float", 4}, {"half", 2},  {"bfloat16", 2}, {"double", 8}, {"int8", 1},
    {"uint8", 1}, {"int32", 4}, {"uint32", 4},   {"int64", 8},  {"uint64", 8}};

std::vector<std::string> type_names() {
  std::vector<std::string> out;
  for (const auto& [name, size] : kTypes) out.emplace_back(name);
  return out;
}

int type_size_of(const std::string& t) {
  for (const auto& [name, size] : kTypes) {
    if (t == name) return size;
  }
  throw UserError("-d '" + t + "': valid types are " + join(type_names()));
}

// A size as nccl-tests reads it (a number with an optional K, M, G or T suffix, powers of 1024),
// or with a unit (1MiB, 2GB) as clustersim's parse_bytes reads it.
Bytes parse_size(const std::string& flag, const std::string& v) {
  const std::string suffixes = "KMGT";
  if (!v.empty()) {
    const size_t at =
        suffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))));
    const std::string digits = at == std::string::npos ? v : v.substr(0, v.size() - 1);
    if (!digits.empty() &&
        std::all_of(digits.begin(), digits.end(),
                    [](unsigned char c) { return std::isdigit(c); }) &&
        digits.size() <= 15) {
      int64_t n = std::stoll(digits);
      for (size_t i = 0; at != std::string::npos && i <= at; ++i) {
        if (n > (int64_t{1} << 52)) throw UserError(flag + " '" + v + "': size too large");
        n *= 1024;
      }
      if (n > 0) return Bytes{n};
      throw UserError(flag + " '" + v + "': expected a positive size such as 8, 32M or 1G");
    }
  }
  try {
    const Bytes b = parse_bytes(v);
    if (b.count > 0) return b;
  } catch (const UnitError& e) {
    throw UserError(flag + " '" + v + "': expected a size such as 8, 32M, 1G or 1MiB (" + e.what() +
                    ")");
  }
  throw UserError(flag + " '" + v + "': expected a positive size such as 8, 32M or 1G");
}

const std::vector<std::string> kRedops{"sum", "prod", "max", "min", "avg"};

// The options, read into `o` as CLI11 meets them.
void add_options(CLI::App& sub, Options& o) {
  text_option(sub, "--cluster", o.cluster,
              "cluster preset (default dgx_h100; `clustersim list` shows them)", "PRESET");
  text_option(sub, "--scenario", o.scenario,
              "take the cluster (and network: settings) from a scenario file");
  text_option(
      sub, "--nodes", [&o](const std::string& v) { o.nodes = int_flag("--nodes", v, 1); },
      "servers (default: enough for --gpus)", "N");
  text_option(
      sub, "-g,--gpus,--ngpus", [&o](const std::string& v) { o.gpus = int_flag("--gpus", v, 1); },
      "group size, ranks 0..N-1 (default: every GPU of the cluster)", "N");
  const auto ops = every_value<ir::CollectiveType>();
  text_option(
      sub, "--op",
      [&o, ops](const std::string& v) {
        // nccl-tests' long name of -o is --op too (a reduction); a collective's name has an
        // underscore.
        if (v.find('_') == std::string::npos &&
            std::find(kRedops.begin(), kRedops.end(), v) != kRedops.end())
          o.redop = v;
        else
          o.op = parse_choice("--op", v, ops);
      },
      "the collective (default all_reduce)", choice_type(names_of(ops)));
  text_option(
      sub, "-o",
      [&o](const std::string& v) {
        if (std::find(kRedops.begin(), kRedops.end(), v) == kRedops.end())
          throw UserError("-o '" + v + "': valid reductions are " + join(kRedops));
        o.redop = v;
      },
      "reduction printed in the redop column (default sum)", choice_type(kRedops));
  text_option(
      sub, "-b,--min,--minbytes", [&o](const std::string& v) { o.min = parse_size("-b", v); },
      "smallest buffer: 8, 32K, 32M, 1G (powers of 1024) or 1MiB; default 1MiB", "SIZE");
  text_option(
      sub, "-e,--max,--maxbytes", [&o](const std::string& v) { o.max = parse_size("-e", v); },
      "largest buffer, the same way; default 1GiB", "SIZE");
  text_option(
      sub, "-f,--factor,--stepfactor",
      [&o](const std::string& v) { o.factor = number_flag("--factor", v, 1.0); },
      "size multiplier between rows (default 2)", "F");
  text_option(
      sub, "-d,--datatype",
      [&o](const std::string& v) {
        o.type = v;
        o.type_size = type_size_of(v);
      },
      "element type for the count column (default float)", choice_type(type_names()));
  text_option(
      sub, "--format",
      [&o](const std::string& v) {
        check_choice("--format", v, {"clustersim", "nccl-tests"});
        o.nccl_tests_format = v == "nccl-tests";
      },
      "clustersim (default) or nccl-tests: nccl-tests' exact columns, so its parsers read ours "
      "(time from --fidelity; #wrong is N/A: "
      "nothing checked)",
      "clustersim|nccl-tests");
  sub.add_flag("--tuning-table", o.tuning_table,
               "print NCCL 2.28's own latency/bandwidth table for this group (as NCCL_DEBUG=INFO "
               "NCCL_DEBUG_SUBSYS=TUNING does) and exit");
  text_option(
      sub, "--algo", [&o](const std::string& v) { o.collectives.algorithm = algorithm_flag(v); },
      "force an algorithm like NCCL_ALGO", choice_type(algorithm_names()));
  text_option(
      sub, "--proto", [&o](const std::string& v) { o.collectives.protocol = protocol_flag(v); },
      "force a protocol like NCCL_PROTO", choice_type(protocol_names()));
  std::vector<std::string> fidelities = scenario::model_names(scenario::network_models());
  fidelities.push_back("both");
  text_option(
      sub, "--fidelity",
      [&o, fidelities](const std::string& v) {
        check_choice("--fidelity", v, fidelities);
        o.fidelity_given = true;
        o.analytic = v != "flow";
        o.flow = v != "analytic";
      },
      "network model (default both; nccl-tests format: analytic)", choice_type(fidelities));
}

// What needs every option read.
void check(Options& o) {
  if (o.max < o.min) throw UserError("--max must not be below --min");
  // Bounded output: --factor 1.0000001 from 1 B to 1 GiB would be 2e8 rows (it seemed endless).
  const double rows =
      std::floor(std::log(static_cast<double>(o.max.count) / static_cast<double>(o.min.count)) /
                 std::log(o.factor)) +
      1;
  if (!(rows <= kMaxRows)) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "--factor %g from %lld to %lld bytes gives %.3g rows; at most %d: raise --factor "
                  "or narrow --min/--max",
                  o.factor, static_cast<long long>(o.min.count),
                  static_cast<long long>(o.max.count), rows, kMaxRows);
    throw UserError(text);
  }
  if (o.nccl_tests_format && !o.fidelity_given) o.flow = false;
  if (o.nccl_tests_format && o.analytic && o.flow)
    throw UserError(
        "--format nccl-tests prints one time per row: pick --fidelity analytic or flow");
}

// nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above (common.cu).
std::string nccl_time(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 10000 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f", us);
  return buf;
}

// nccl-tests' exact layout: per size, out-of-place and in-place time / algbw / busbw / #wrong,
// counts per rank for all_gather / reduce_scatter / all_to_all, and the closing average line.
void print_nccl_tests(const Options& o, const cost::AnalyticCostModel& costs,
                      const std::vector<ir::RankId>& ranks, const topo::ClusterSpec& spec,
                      const cost::DeviceSpec& device, std::ostream& out) {
  const size_t n = ranks.size();
  const double bus = cost::CollectiveModel::bus_factor(o.op, n);
  const bool reduces =
      o.op == ir::CollectiveType::all_reduce || o.op == ir::CollectiveType::reduce_scatter;
  const bool per_rank = o.op == ir::CollectiveType::all_gather ||
                        o.op == ir::CollectiveType::reduce_scatter ||
                        o.op == ir::CollectiveType::all_to_all;
  const int root = o.op == ir::CollectiveType::broadcast ? 0 : -1;
  const auto fidelity = o.flow ? cost::NetworkFidelity::flow : cost::NetworkFidelity::analytic;
  char line[256];
  std::snprintf(line, sizeof line,
                "# nThread 1 nGpus %zu minBytes %lld maxBytes %lld step: %g(factor) warmup iters: "
                "0 iters: 1 agg iters: 1 validation: 0 graph: 0\n",
                n, static_cast<long long>(o.min.count), static_cast<long long>(o.max.count),
                o.factor);
  out << line << "#\n# Using devices\n";
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(line, sizeof line,
                  "#  Rank %2zu Group  0 Pid      0 on %10s device %2zu [simulated] %s\n", i,
                  spec.name.c_str(),
                  static_cast<size_t>(ranks[i]) % static_cast<size_t>(std::max(1, spec.node.gpus)),
                  device.name.c_str());
    out << line;
  }
  out << "#\n"
      << "#                                                              out-of-place              "
         "         in-place          \n"
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
         "time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
         "(us)  (GB/s)  (GB/s)       \n";
  double bw_sum = 0;
  int rows = 0;
  for (double sz = static_cast<double>(o.min.count);
       sz <= static_cast<double>(o.max.count) * (1 + 1e-9); sz *= o.factor) {
    // nccl-tests rounds a size down to whole elements (times the ranks where it splits the buffer).
    const int64_t align =
        static_cast<int64_t>(o.type_size) * (per_rank ? static_cast<int64_t>(n) : 1);
    const Bytes size{static_cast<int64_t>(sz) / align * align};
    if (size.count == 0) continue;
    const double t = driver::simulate_collective(costs, o.op, size, ranks, fidelity).us();
    const double algbw = static_cast<double>(size.count) / t * 1e-3;
    const int64_t count = size.count / o.type_size / (per_rank ? static_cast<int64_t>(n) : 1);
    std::snprintf(line, sizeof line, "%12lld  %12lld  %8s  %6s  %6d",
                  static_cast<long long>(size.count), static_cast<long long>(count), o.type.c_str(),
                  reduces ? o.redop.c_str() : "none", root);
    out << line;
    for (int place = 0; place < 2; ++place) {  // the model has no in-place difference
      std::snprintf(line, sizeof line, "  %7s  %6.2f  %6.2f  %5s", nccl_time(t).c_str(), algbw,
                    algbw * bus, "N/A");
      out << line;
      bw_sum += algbw * bus;
    }
    out << "\n";
    ++rows;
  }
  out << "# Out of bounds values : 0 OK\n";
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g \n#\n",
                rows ? bw_sum / (2 * rows) : 0.0);
  out << line;
}

// NCCL 2.28's own table for this group, for the communicator cost::nccl_comm_shape derives.
void print_tuning_table(const cost::CollectiveModel& model, const std::vector<ir::RankId>& ranks,
                        std::ostream& out) {
  const cost::NcclCommShape shape = cost::nccl_comm_shape(model, ranks);
  const auto table = cost::nccl_tuning_table(shape);
  out << "# " << cost::kNccl228.release << " tuning model (" << cost::kNccl228.source << ")\n";
  out << "# " << shape.ranks << " ranks on " << shape.nodes << " node"
      << (shape.nodes == 1 ? "" : "s") << ", "
      << (shape.arch == cost::GpuArch::hopper ? "Hopper" : "Ampere") << ", " << shape.channels
      << " channels, ring graph " << shape.ring_bus_bw << " GB/s, NVLS " << shape.nvls_channels
      << " channels " << shape.nvls_bus_bw << " GB/s\n";
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

int bench_collective(Options& o, std::ostream& out) {
  check(o);
  topo::ClusterSpec spec;
  if (!o.scenario.empty()) {
    const scenario::Scenario s = scenario::load_scenario(o.scenario);
    if (s.cluster_name == "custom")
      throw UserError("--scenario: bench-collective needs a preset-based cluster");
    spec = s.cluster;
    if (!o.collectives.algorithm) o.collectives.algorithm = s.collectives.algorithm;
    if (!o.collectives.protocol) o.collectives.protocol = s.collectives.protocol;
  } else {
    spec = topo::find_cluster_preset(o.cluster);
    const int per_node = spec.node.gpus;
    spec.nodes = o.nodes > 0 ? o.nodes : (o.gpus > 0 ? (o.gpus + per_node - 1) / per_node : 1);
  }
  if (int64_t{spec.nodes} * spec.node.gpus > kMaxClusterGpus) {
    throw UserError("a cluster of " + std::to_string(int64_t{spec.nodes} * spec.node.gpus) +
                    " GPUs (" + std::to_string(spec.nodes) + " x " + spec.name +
                    ") is above the limit of " + std::to_string(kMaxClusterGpus) + " GPUs");
  }
  const topo::Topology topology = topo::build_cluster(spec);
  const int gpus = o.gpus > 0 ? o.gpus : topology.gpu_count();
  if (gpus > topology.gpu_count()) {
    throw UserError("--gpus " + std::to_string(gpus) + " exceeds the " +
                    std::to_string(topology.gpu_count()) + " GPUs of " +
                    std::to_string(spec.nodes) + " x " + spec.name + " (raise --nodes)");
  }
  if (gpus < 2) throw UserError("a collective needs at least 2 GPUs");
  std::vector<ir::RankId> ranks;
  for (int r = 0; r < gpus; ++r) ranks.push_back(static_cast<ir::RankId>(r));
  const cost::DeviceSpec& device = cost::find_device(spec.gpu);
  const cost::AnalyticCostModel costs{
      cost::ComputeModel(device),
      cost::CollectiveModel(topology, driver::collective_params(device), o.collectives)};
  const auto& model = costs.collective_model();
  const double bus = cost::CollectiveModel::bus_factor(o.op, ranks.size());

  if (o.tuning_table) {
    print_tuning_table(model, ranks, out);
    return 0;
  }
  if (o.nccl_tests_format) {
    print_nccl_tests(o, costs, ranks, spec, device, out);
    return 0;
  }
  char line[256];
  out << "# clustersim bench-collective: " << ir::to_string(o.op) << " over " << gpus << " GPUs of "
      << spec.nodes << " x " << spec.name << " (" << device.name << ")\n";
  out << "# algorithm "
      << (o.collectives.algorithm ? std::string(cost::to_string(*o.collectives.algorithm)) : "auto")
      << ", protocol "
      << (o.collectives.protocol ? std::string(cost::to_string(*o.collectives.protocol)) : "auto")
      << "; busbw = algbw x " << bus << " (nccl-tests)\n";
  std::snprintf(line, sizeof line, "# %12s %12s %6s  %-18s %10s %8s %8s", "size", "count", "type",
                "algo/proto", "time(us)", "algbw", "busbw");
  out << line;
  if (o.analytic && o.flow)
    out << "  "
        << "flow: time(us)    algbw    busbw";
  out << "\n";
  double analytic_wall = 0, flow_wall = 0;
  int rows = 0;
  for (double sz = static_cast<double>(o.min.count);
       sz <= static_cast<double>(o.max.count) * (1 + 1e-9); sz *= o.factor) {
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
      const SimTime t = timed(
          [&] {
            return driver::simulate_collective(costs, o.op, size, ranks,
                                               cost::NetworkFidelity::analytic);
          },
          analytic_wall);
      row += columns(t);
    }
    if (o.flow) {
      const SimTime t = timed(
          [&] {
            return driver::simulate_collective(costs, o.op, size, ranks,
                                               cost::NetworkFidelity::flow);
          },
          flow_wall);
      row += (o.analytic ? "        " : "") + columns(t);
    }
    const cost::CollectiveChoice choice = model.choose(o.op, size, ranks);
    const std::string algo = std::string(cost::to_string(choice.plan->algorithm)) + "/" +
                             std::string(cost::to_string(choice.plan->protocol));
    std::snprintf(line, sizeof line, "  %12lld %12lld %6s  %-18s ",
                  static_cast<long long>(size.count),
                  static_cast<long long>(size.count / o.type_size), o.type.c_str(), algo.c_str());
    out << line << row << "\n";
    ++rows;
  }
  const auto& plan = *model.choose(o.op, o.max, ranks).plan;
  out << "# " << plan.channels << " channel" << (plan.channels == 1 ? "" : "s")
      << " across nodes; largest size alone on the network: " << plan.phases.size() << " phase"
      << (plan.phases.size() == 1 ? "" : "s") << ", latency " << plan.latency.us() << " us\n";
  std::snprintf(line, sizeof line,
                "# wall time over %d sizes: analytic %.3f s, flow %.3f s (the first level timed "
                "also builds the plans)\n",
                rows, analytic_wall, flow_wall);
  out << line;
  return 0;
}

}  // namespace

void add_bench_collective_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "bench-collective",
      "nccl-tests-style size / time / algbw / busbw table of one collective over the first N GPUs");
  add_options(*sub, *o);
  sub->footer(kFooter);
  sub->callback([o, &ctx] { ctx.status = bench_collective(*o, ctx.out); });
}

}  // namespace cs::cli
