#include "validate/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/text_file.h"
#include "cost_models/analytic_cost_model.h"
#include "driver/simulation.h"
#include "topology/topology.h"

namespace cs::validate {
namespace {

// nccl-tests' -d types and their sizes in bytes (its `test_typenames`).
constexpr std::pair<const char*, int> kTypes[] = {
    {"int8", 1},   {"uint8", 1},  {"int32", 4},    {"uint32", 4},  {"int64", 8},
    {"uint64", 8}, {"half", 2},   {"float", 4},    {"double", 8},  {"bfloat16", 2},
    {"f8e4m3", 1}, {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
constexpr const char* kRedops[] = {"sum",       "prod",   "max",  "min", "avg",
                                   "premulsum", "mulsum", "none", "all"};

// The binaries of nccl-tests and what they time; nullopt for those clustersim does not model.
constexpr std::pair<const char*, int> kBinaries[] = {
    {"all_reduce_perf", static_cast<int>(ir::CollectiveType::all_reduce)},
    {"all_gather_perf", static_cast<int>(ir::CollectiveType::all_gather)},
    {"reduce_scatter_perf", static_cast<int>(ir::CollectiveType::reduce_scatter)},
    {"broadcast_perf", static_cast<int>(ir::CollectiveType::broadcast)},
    {"alltoall_perf", static_cast<int>(ir::CollectiveType::all_to_all)},
    {"reduce_perf", -1},
    {"sendrecv_perf", -1},
    {"scatter_perf", -1},
    {"gather_perf", -1},
    {"hypercube_perf", -1},
};

std::string joined(auto&& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::string modelled_binaries() {
  std::vector<std::string> v;
  for (const auto& [name, type] : kBinaries) {
    if (type >= 0) v.emplace_back(name);
  }
  return joined(v);
}

int type_size(const std::string& t) {
  for (const auto& [name, size] : kTypes) {
    if (t == name) return size;
  }
  return 0;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> out;
  for (std::string w; ss >> w;) out.push_back(w);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// mpirun --tag-output's "[1,0]<stdout>:" (and <stderr>) before a line.
std::string untagged(const std::string& line) {
  if (line.empty() || line[0] != '[') return line;
  for (const char* tag : {"]<stdout>:", "]<stderr>:"}) {
    const size_t at = line.find(tag);
    if (at != std::string::npos) return line.substr(at + std::string(tag).size());
  }
  return line;
}

struct Where {
  const std::string& file;
  int line;
  std::string at() const { return file + ":" + std::to_string(line) + ": "; }
};

int64_t integer(const Where& w, const std::string& column, const std::string& text, int64_t min,
                int64_t max) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    throw UserError(w.at() + column + " '" + text + "': expected a whole number from " +
                    std::to_string(min) + " to " + std::to_string(max));
  }
  return v;
}

double number(const Where& w, const std::string& column, const std::string& text, double min,
              double max, bool min_inclusive) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool whole = !text.empty() && end == text.c_str() + text.size();
  if (!whole || !std::isfinite(v) || v > max || (min_inclusive ? v < min : v <= min)) {
    std::ostringstream m;
    m << w.at() << column << " '" << text << "': expected a number "
      << (min_inclusive ? "from " : "above ") << min << (min_inclusive ? " to " : " up to ") << max;
    throw UserError(m.str());
  }
  return v;
}

// #wrong: a count, or N/A when nccl-tests ran without checking (-c 0).
int64_t wrong_count(const Where& w, const std::string& text) {
  if (text == "N/A") return 0;
  return integer(w, "#wrong", text, 0, int64_t{1} << 50);
}

constexpr double kMaxUs = 1e12;   // 11 days: no collective call takes longer
constexpr double kMaxGBps = 1e6;  // 1 PB/s: above any interconnect
constexpr int64_t kMaxBytes = int64_t{1} << 50;

// "#  Rank  0 Group  0 Pid  6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3" (older
// versions print no Group); returns false when the line is not a Rank line.
bool read_rank_line(const Where& w, const std::vector<std::string>& t, NcclTestsLog& log) {
  if (t.size() < 2 || t[0] != "#" || t[1] != "Rank") return false;
  size_t on = 0, device = 0;
  for (size_t i = 2; i < t.size(); ++i) {
    if (t[i] == "on" && on == 0) on = i;
    if (t[i] == "device" && device == 0) device = i;
  }
  if (t.size() < 3 || on == 0 || on + 1 >= t.size() || device == 0 || device + 1 >= t.size()) {
    throw UserError(w.at() +
                    "a Rank line reads '# Rank R [Group G] Pid P on HOST device D [BUS] NAME'");
  }
  integer(w, "Rank", t[2], 0, 1 << 24);
  integer(w, "device", t[device + 1], 0, 1 << 16);
  ++log.ranks;
  ++log.gpus_per_host[t[on + 1]];
  if (log.device.empty()) {
    // The GPU's name follows the bus id in brackets.
    size_t from = device + 2;
    if (from < t.size() && !t[from].empty() && t[from][0] == '[') ++from;
    std::vector<std::string> name(t.begin() + static_cast<std::ptrdiff_t>(std::min(from, t.size())),
                                  t.end());
    std::string s;
    for (const auto& n : name) s += (s.empty() ? "" : " ") + n;
    log.device = s;
  }
  return true;
}

// The first nccl-tests binary named on a line ("./build/all_reduce_perf -b 8", "# Collective test
// starting: all_gather_perf"), or "".
std::string binary_on(const std::string& line) {
  std::string best;
  size_t best_at = std::string::npos;
  for (const auto& [name, type] : kBinaries) {
    for (size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1)) {
      // A whole word: reduce_perf must not match inside all_reduce_perf.
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) ||
                                       line[at - 1] == '_');
      const size_t end = at + std::string(name).size();
      const bool ends = end == line.size() ||
                        !(std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_');
      if (starts && ends && at < best_at) best = name, best_at = at;
    }
  }
  return best;
}

}  // namespace

std::optional<ir::CollectiveType> collective_of_binary(const std::string& binary) {
  for (const auto& [name, type] : kBinaries) {
    if (binary == name && type >= 0) return static_cast<ir::CollectiveType>(type);
  }
  return std::nullopt;
}

NcclTestsLog read_nccl_tests_log(const std::string& path) {
  // Bounded (common/text_file.h): /dev/zero, one endless line, was read until std::bad_alloc.
  std::istringstream in(read_text_file(path, "nccl-tests log"));
  return parse_nccl_tests_log(in, path);
}

namespace {

// One of nccl-tests' 13-column data rows.
NcclTestsLogRow read_data_row(const Where& w, const std::vector<std::string>& t) {
  if (t.size() != 13) {
    throw UserError(w.at() +
                    "expected nccl-tests' 13 columns (size, count, type, redop, root, "
                    "out-of-place time, algbw, busbw, #wrong, "
                    "in-place time, algbw, busbw, #wrong), got " +
                    std::to_string(t.size()));
  }
  NcclTestsLogRow r;
  r.line = w.line;
  r.bytes = integer(w, "size", t[0], 1, kMaxBytes);
  r.count = integer(w, "count", t[1], 0, kMaxBytes);
  r.type = t[2];
  if (type_size(r.type) == 0) {
    std::vector<std::string> names;
    for (const auto& [n, s] : kTypes) names.emplace_back(n);
    throw UserError(w.at() + "type '" + r.type + "': valid types are " + joined(names));
  }
  r.redop = t[3];
  if (std::find_if(std::begin(kRedops), std::end(kRedops),
                   [&](const char* o) { return r.redop == o; }) == std::end(kRedops)) {
    throw UserError(w.at() + "redop '" + r.redop + "': valid reductions are " + joined(kRedops));
  }
  r.root = integer(w, "root", t[4], -1, 1 << 24);
  r.out_of_place_us = number(w, "out-of-place time", t[5], 0, kMaxUs, false);
  r.out_of_place_algbw = number(w, "out-of-place algbw", t[6], 0, kMaxGBps, true);
  r.out_of_place_busbw = number(w, "out-of-place busbw", t[7], 0, kMaxGBps, true);
  r.wrong = wrong_count(w, t[8]);
  r.in_place_us = number(w, "in-place time", t[9], 0, kMaxUs, false);
  r.in_place_algbw = number(w, "in-place algbw", t[10], 0, kMaxGBps, true);
  r.in_place_busbw = number(w, "in-place busbw", t[11], 0, kMaxGBps, true);
  r.wrong += wrong_count(w, t[12]);
  return r;
}

// A comment line: a rank line, or "# Avg bus bandwidth    : 123.45".
void read_comment(const Where& w, const std::string& line, const std::vector<std::string>& t,
                  NcclTestsLog& log) {
  if (read_rank_line(w, t, log)) return;
  if (line.find("Avg bus bandwidth") == std::string::npos) return;
  const size_t colon = line.find(':');
  if (colon == std::string::npos) throw UserError(w.at() + "expected '# Avg bus bandwidth : GB/s'");
  const auto v = words(line.substr(colon + 1));
  if (v.empty()) throw UserError(w.at() + "expected '# Avg bus bandwidth : GB/s'");
  log.avg_bus_bandwidth = number(w, "Avg bus bandwidth", v[0], 0, kMaxGBps, true);
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(std::istream& in, const std::string& name) {
  NcclTestsLog log;
  log.file = name;
  std::string binary;
  std::string raw;
  for (int no = 1; std::getline(in, raw); ++no) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = untagged(raw);
    const Where w{name, no};
    const std::vector<std::string> t = words(line);
    if (t.empty()) continue;
    if (const std::string b = binary_on(line); !b.empty()) {
      if (binary.empty()) {
        binary = b;
        log.collective_from = "line " + std::to_string(no) + ": " + b;
        if (const auto c = collective_of_binary(b)) log.collective = c;
      } else if (b != binary) {
        throw UserError(w.at() + "names " + b + " after " + log.collective_from +
                        "; one collective per log (split the file)");
      }
    }
    if (t[0] == "#" || t[0][0] == '#') {
      read_comment(w, line, t, log);
      continue;
    }
    // A data row starts with two whole numbers (size, count); anything else (the command line,
    // NCCL INFO lines, warnings) is not nccl-tests' table and is passed over.
    if (t.size() < 2 || !all_digits(t[0]) || !all_digits(t[1])) continue;
    log.rows.push_back(read_data_row(w, t));
  }
  if (log.rows.empty()) {
    throw UserError(name +
                    ": no nccl-tests data rows (each starts with the size in bytes and the count, "
                    "e.g. '8  2  float  sum  -1  12.90 ...')");
  }
  return log;
}

void settle_collective(NcclTestsLog& log, std::optional<ir::CollectiveType> given) {
  if (given) {
    log.collective = given;
  } else if (!log.collective) {
    if (!log.collective_from.empty()) {
      throw UserError(log.file + ": " + log.collective_from +
                      " is not a collective clustersim models; modelled: " + modelled_binaries());
    }
    throw UserError(log.file + ": the log names no nccl-tests binary (" + modelled_binaries() +
                    "); pass --collective");
  }
  const ir::CollectiveType c = *log.collective;
  const bool per_rank = c == ir::CollectiveType::all_gather ||
                        c == ir::CollectiveType::reduce_scatter ||
                        c == ir::CollectiveType::all_to_all;
  for (const auto& r : log.rows) {
    const int64_t unit = type_size(r.type) * (per_rank ? std::max(1, log.ranks) : 1);
    if (per_rank && log.ranks == 0) break;  // the group is unknown: nothing to check against
    if (r.count * unit != r.bytes) {
      throw UserError(log.file + ":" + std::to_string(r.line) + ": size " +
                      std::to_string(r.bytes) + " is not count " + std::to_string(r.count) + " x " +
                      std::to_string(type_size(r.type)) + " B (" + r.type + ")" +
                      (per_rank ? " x " + std::to_string(log.ranks) + " ranks" : std::string()) +
                      ", as nccl-tests prints " + std::string(ir::to_string(c)) +
                      (per_rank ? " (count per rank)" : "") +
                      "; is this log of another collective? (--collective)");
    }
  }
}

NcclTestsComparison compare_nccl_tests(const NcclTestsLog& log,
                                       const std::function<double(int64_t)>& predicted_us) {
  NcclTestsComparison c;
  const double bus = log.collective
                         ? cost::CollectiveModel::bus_factor(
                               *log.collective, static_cast<size_t>(std::max(1, log.ranks)))
                         : 1.0;
  double sum = 0;
  for (const auto& r : log.rows) {
    NcclTestsComparison::Row row;
    row.line = r.line;
    row.bytes = r.bytes;
    row.measured_us = r.best_us();
    row.predicted_us = predicted_us(r.bytes);
    row.error_percent = 100 * (row.predicted_us / row.measured_us - 1);
    // busbw = size / time x bus factor, in GB/s (bytes per microsecond / 1000).
    row.measured_busbw = static_cast<double>(r.bytes) / row.measured_us * 1e-3 * bus;
    row.predicted_busbw = static_cast<double>(r.bytes) / row.predicted_us * 1e-3 * bus;
    sum += std::abs(row.error_percent);
    if (std::abs(row.error_percent) > std::abs(c.worst_percent) || c.rows.empty()) {
      c.worst_percent = row.error_percent;
      c.worst_bytes = r.bytes;
    }
    c.rows.push_back(row);
  }
  c.mape_percent = c.rows.empty() ? 0 : sum / static_cast<double>(c.rows.size());
  return c;
}

std::string cluster_for_device(const std::string& device_name) {
  std::string d;
  for (char ch : device_name) d += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto has = [&](const char* s) { return d.find(s) != std::string::npos; };
  if (has("H100") && has("PCIE")) return "pcie_8x_h100";
  if (has("H100")) return "dgx_h100";
  if (has("H200")) return "dgx_h200";
  if (has("H800")) return "hgx_h800";
  if (has("A100")) return "dgx_a100";
  if (has("B200")) return "dgx_b200";
  return "";
}

NcclTestsGroup group_of(const NcclTestsLog& log, topo::ClusterSpec preset) {
  if (log.ranks < 2) {
    throw UserError(
        log.file + ": " +
        (log.ranks == 0 ? std::string("the log has no '#  Rank' lines") : "the log has one rank") +
        ": a collective needs at least 2 GPUs (pass --gpus N and --nodes M for a log without its "
        "device lines)");
  }
  const int nodes = log.nodes();
  if (nodes > 1 && preset.node.nics == 0) {
    throw UserError(log.file + ": the log spans " + std::to_string(nodes) + " hosts but cluster '" +
                    preset.name + "' is a single machine");
  }
  preset.nodes = nodes;
  NcclTestsGroup g;
  int node = 0;
  for (const auto& [host, gpus] : log.gpus_per_host) {
    if (gpus > preset.node.gpus) {
      throw UserError(log.file + ": host " + host + " has " + std::to_string(gpus) +
                      " GPUs in the log, a node of " + preset.name + " has " +
                      std::to_string(preset.node.gpus) + " (pick another --cluster)");
    }
    for (int j = 0; j < gpus; ++j)
      g.ranks.push_back(static_cast<ir::RankId>(node * preset.node.gpus + j));
    ++node;
  }
  g.cluster = preset;
  return g;
}

std::vector<double> predict_nccl_tests(const NcclTestsLog& log, const NcclTestsGroup& group,
                                       const cost::Profile* profile,
                                       cost::NetworkFidelity fidelity) {
  const topo::Topology topology = topo::build_cluster(group.cluster);
  const cost::DeviceSpec& device = profile ? profile->device : cost::find_device(group.cluster.gpu);
  cost::CollectiveParams params = driver::collective_params(device);
  if (profile && profile->collectives) {
    params.measured_latency = profile->collectives->latency;
    params.measured_bus_bandwidth = profile->collectives->bus_bandwidth;
  }
  // As bench-collective and the nccl-tests suite: the collective alone, NCCL's own choice.
  const cost::AnalyticCostModel costs{cost::ComputeModel(device),
                                      cost::CollectiveModel(topology, params, {})};
  std::vector<double> out;
  for (const auto& r : log.rows)
    out.push_back(
        driver::simulate_collective(costs, *log.collective, Bytes{r.bytes}, group.ranks, fidelity)
            .us());
  return out;
}

CollectiveFit fit_collective_line(const std::vector<NcclTestsLog>& logs) {
  // Points (bus bytes, time in seconds), weighted 1 / time^2: least squares of the relative error.
  std::vector<std::pair<double, double>> xy;
  for (const auto& log : logs) {
    const double bus =
        cost::CollectiveModel::bus_factor(*log.collective, static_cast<size_t>(log.ranks));
    for (const auto& r : log.rows)
      xy.emplace_back(static_cast<double>(r.bytes) * bus, r.best_us() * 1e-6);
  }
  double s0 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    const double w = 1 / (y * y);
    s0 += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double det = s0 * sxx - sx * sx;
  std::string files;
  for (const auto& log : logs) files += (files.empty() ? "" : ", ") + log.file;
  if (xy.size() < 2 || !(det > 1e-12 * s0 * sxx))
    throw UserError(files + ": fitting a latency and a bandwidth needs rows of at least two sizes");
  double beta = (s0 * sxy - sx * sy) / det;  // seconds per bus byte
  double alpha = (sy - beta * sx) / s0;
  if (alpha < 0) {  // no negative latency: through the origin
    alpha = 0;
    beta = sxy / sxx;
  }
  if (!(beta > 0))
    throw UserError(files + ": the times do not grow with the size; no bandwidth can be fitted");
  CollectiveFit f;
  f.line = {SimTime::from_seconds(alpha), {1 / beta}};
  f.rows = xy.size();
  double sum = 0;
  for (const auto& [x, y] : xy) {
    const double e = 100 * ((alpha + beta * x) / y - 1);
    sum += std::abs(e);
    if (std::abs(e) > std::abs(f.worst_percent)) f.worst_percent = e;
  }
  f.mape_percent = sum / static_cast<double>(xy.size());
  return f;
}

namespace {

// nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above (common.cu).
std::string nccl_time(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us >= 10000 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f", us);
  return buf;
}

}  // namespace

void write_nccl_tests_log(std::ostream& out, const NcclTestsSweep& o,
                          const std::vector<ir::RankId>& ranks,
                          const std::function<double(Bytes)>& time_us) {
  const size_t n = ranks.size();
  const double bus = cost::CollectiveModel::bus_factor(o.op, n);
  const bool reduces =
      o.op == ir::CollectiveType::all_reduce || o.op == ir::CollectiveType::reduce_scatter;
  const bool per_rank = o.op == ir::CollectiveType::all_gather ||
                        o.op == ir::CollectiveType::reduce_scatter ||
                        o.op == ir::CollectiveType::all_to_all;
  const int root = o.op == ir::CollectiveType::broadcast ? 0 : -1;
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
                  o.cluster.c_str(),
                  static_cast<size_t>(ranks[i]) % static_cast<size_t>(std::max(1, o.gpus_per_node)),
                  o.device.c_str());
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
    const double t = time_us(size);
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

}  // namespace cs::validate
