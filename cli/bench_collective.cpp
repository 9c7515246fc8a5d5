// `clustersim bench-collective`: its options, nccl-tests' own among them (workflows/
// bench_collective.h runs it).
#include "workflows/bench_collective.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "common/limits.h"
#include "scenarios/named_models.h"

namespace cs::cli {

namespace {

constexpr const char* kFooter =
    "Prints, like nccl-tests, size, time, algbw and busbw of one collective over the first N GPUs; "
    "the short options are nccl-tests' own.";

constexpr int kMaxRows = 1000;  // nccl-tests' default sweep prints ~30

struct Options : workflows::BenchCollectiveRequest {
  bool fidelity_given = false;
  // The size and factor flags as the user typed them ("-e 1M"), for the refusals that weigh them
  // together; the defaults' words where not given.
  std::string min_given = "--min's default 1MiB";
  std::string max_given = "--max's default 1GiB";
  std::string factor_given = "--factor's default 2";
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

int type_size_of(const std::string& flag, const std::string& t) {
  for (const auto& [name, size] : kTypes) {
    if (t == name) return size;
  }
  throw UserError(flag + " '" + t + "': valid types are " + join(type_names()));
}

// A size as nccl-tests reads it (a number with an optional K, M, G or T suffix, powers of 1024),
// or with a unit (1MiB, 2GB) as clustersim's parse_bytes reads it.
Bytes parse_size(const std::string& flag, const std::string& v) {
  const std::string suffixes = "KMGT";
  const auto out_of_range = [&] {
    return UserError(flag + " " + limits::out_of_range(limits::kBytes, v));
  };
  if (!v.empty()) {
    const size_t at =
        suffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))));
    const std::string digits = at == std::string::npos ? v : v.substr(0, v.size() - 1);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(),
                                       [](unsigned char c) { return std::isdigit(c); })) {
      if (digits.size() > 18) throw out_of_range();  // past 10^18 > 2^59, and far past with K
      int64_t n = std::stoll(digits);
      for (size_t i = 0; at != std::string::npos && i <= at; ++i) {
        if (n > (int64_t{1} << 52)) throw out_of_range();
        n *= 1024;
      }
      if (n > static_cast<int64_t>(limits::kBytes.hi)) throw out_of_range();
      if (n > 0) return Bytes{n};
      throw UserError(flag + " '" + v + "': expected a positive size such as 8, 32M or 1G");
    }
  }
  try {
    const Bytes b = parse_bytes(v);
    if (b.count > 0) return b;
  } catch (const UnitError& e) {
    // A range error is the reason itself; a form error gets the forms that work.
    const std::string why = e.what();
    if (why.find("is out of range") != std::string::npos) throw UserError(flag + " " + why);
    throw UserError(flag + " '" + v + "': expected a size such as 8, 32M, 1G or 1MiB (" + why +
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
  aliased_option(
      sub, {"--gpus", "-g", "--ngpus"},
      [&o](const std::string& flag, const std::string& v) {
        o.gpus = int_flag(flag, v, 1);
        o.gpus_flag = flag;
      },
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
  aliased_option(
      sub, {"--min", "-b", "--minbytes"},
      [&o](const std::string& flag, const std::string& v) {
        o.min = parse_size(flag, v);
        o.min_given = flag + " " + v;
      },
      "smallest buffer: 8, 32K, 32M, 1G (powers of 1024) or 1MiB; default 1MiB", "SIZE");
  aliased_option(
      sub, {"--max", "-e", "--maxbytes"},
      [&o](const std::string& flag, const std::string& v) {
        o.max = parse_size(flag, v);
        o.max_given = flag + " " + v;
      },
      "largest buffer, the same way; default 1GiB", "SIZE");
  aliased_option(
      sub, {"--factor", "-f", "--stepfactor"},
      [&o](const std::string& flag, const std::string& v) {
        o.factor = number_flag(flag, v, 1.0,
                               "each row's size is the last one's times the factor, so it must "
                               "grow");
        o.factor_given = flag + " " + v;
      },
      "size multiplier between rows (default 2)", "F");
  aliased_option(
      sub, {"--datatype", "-d"},
      [&o](const std::string& flag, const std::string& v) {
        o.type = v;
        o.type_size = type_size_of(flag, v);
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
  if (o.max < o.min) throw UserError(o.max_given + " must not be below " + o.min_given);
  // Bounded output: --factor 1.0000001 from 1 B to 1 GiB would be 2e8 rows (it seemed endless).
  const double rows =
      std::floor(std::log(static_cast<double>(o.max.count) / static_cast<double>(o.min.count)) /
                 std::log(o.factor)) +
      1;
  if (!(rows <= kMaxRows)) {
    char text[200];
    std::snprintf(text, sizeof text,
                  " from %lld to %lld bytes gives %.3g rows; at most %d: raise the factor or "
                  "narrow the sizes",
                  static_cast<long long>(o.min.count), static_cast<long long>(o.max.count), rows,
                  kMaxRows);
    throw UserError(o.factor_given + text);
  }
  if (o.nccl_tests_format && !o.fidelity_given) o.flow = false;
  if (o.nccl_tests_format && o.analytic && o.flow)
    throw UserError(
        "--format nccl-tests prints one time per row: pick --fidelity analytic or flow");
}

}  // namespace

void add_bench_collective_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "bench-collective",
      "nccl-tests-style size / time / algbw / busbw table of one collective over the first N GPUs");
  add_options(*sub, *o);
  sub->footer(kFooter);
  sub->callback([o, &ctx] {
    check(*o);
    o->max_cluster_gpus = kMaxClusterGpus;
    ctx.status = workflows::bench_collective(*o, ctx.out);
  });
}

}  // namespace cs::cli
