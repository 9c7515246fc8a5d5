#include "validate/suite.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/parallel.h"
#include "common/text_file.h"
#include "driver/simulation.h"
#include "models/software_stack.h"
#include "scenarios/named_models.h"
#include "scenarios/profile_io.h"
#include "topology/cluster_spec.h"
#include "validate/fitted_parameters.h"
#include "validate/suite_data.h"

namespace cs::validate {
namespace {

// The middle value (the mean of the two middle ones for an even count); empty for none.
std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum class Kind : uint8_t { training, collective };
enum class Figure : uint8_t {
  step_time,
  tokens_per_s,
  tokens_per_s_per_gpu,
  speedup,
  collective_time
};

const char* figure_name(Figure f) {
  switch (f) {
    case Figure::step_time:
      return "step time";
    case Figure::tokens_per_s:
      return "tokens/s";
    case Figure::tokens_per_s_per_gpu:
      return "tokens/s per GPU";
    case Figure::speedup:
      return "speedup over one GPU";
    case Figure::collective_time:
      return "collective time";
  }
  return "";
}

struct Spec {
  std::string file, source, citation, measured, data;
  Role role = Role::validation;
  Kind kind = Kind::training;
  Figure figure = Figure::step_time;
  std::string unit;
  double unit_scale = 1;  // predicted seconds x unit_scale = the table's unit (step time only)
  std::optional<double> bound_mape, bound_worst, bound_memory_mape;
  // training
  std::string format, rows_key, measured_column, label, features_column = "features", oom_column;
  std::string memory_column;  // measured peak allocated memory, MiB (empty: not compared)
  std::vector<std::string> columns;
  YAML::Node scenario, features;
  std::vector<std::string> every_row;  // features every row needs (`features_every_row`)
  std::vector<std::pair<std::string, YAML::Node>>
      selects;  // (column, value -> scenario keys or reason)
  // collective
  std::string cluster = "dgx_h100";
  int nodes = 0, gpus = 0;
  ir::CollectiveType op = ir::CollectiveType::all_reduce;
  int64_t min_bytes = 8, max_bytes = int64_t{1} << 30;
  cost::NetworkFidelity fidelity = cost::NetworkFidelity::analytic;
  cost::CollectiveOptions forced;
};

std::string at(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
}

std::string text(const YAML::Node& root, const std::string& file, const std::string& key,
                 bool required) {
  const YAML::Node n = root[key];
  if (!n) {
    if (required) throw UserError(file + ": missing required key '" + key + "'");
    return "";
  }
  if (!n.IsScalar()) throw UserError(at(file, n) + ": " + key + ": expected text");
  return n.Scalar();
}

// `role:`, required: a source's error means nothing until the reader knows whether it was fitted
// on.
Role read_role(const YAML::Node& root, const std::string& file) {
  const std::string r = text(root, file, "role", false);
  if (r == "calibration") return Role::calibration;
  if (r == "validation") return Role::validation;
  const std::string where = root["role"] ? at(file, root["role"]) : file;
  throw UserError(where + ": role: expected calibration or validation (" +
                  (r.empty() ? std::string("missing") : "got '" + r + "'") +
                  "); see validate/suites/SPLIT.md");
}

double percent(const YAML::Node& n, const std::string& file, const std::string& key) {
  try {
    const double v = n.as<double>();
    if (v > 0) return v;
  } catch (const YAML::Exception&) {
  }
  throw UserError(at(file, n) + ": bounds." + key + ": expected a positive percentage, got '" +
                  (n.IsScalar() ? n.Scalar() : "") + "'");
}

// bench-collective sizes: 8, 32K, 32M, 8G (powers of 1024) or a unit such as 1MiB.
int64_t size_of(const std::string& v, const std::string& file) {
  static const std::string kSuffixes = "KMGT";
  if (!v.empty()) {
    const size_t s =
        kSuffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))));
    const std::string digits = s == std::string::npos ? v : v.substr(0, v.size() - 1);
    if (!digits.empty() && digits.size() <= 12 &&
        std::all_of(digits.begin(), digits.end(),
                    [](unsigned char c) { return std::isdigit(c); })) {
      int64_t n = std::stoll(digits);
      for (size_t i = 0; s != std::string::npos && i <= s; ++i) n *= 1024;
      return n;
    }
  }
  try {
    return parse_bytes(v).count;
  } catch (const std::exception&) {
    throw UserError(file + ": predicted: '" + v + "' is not a size (8, 32K, 8G or 1MiB)");
  }
}

// The `predicted:` bench-collective command of a collective suite.
void read_predicted_command(const std::string& cmd, const std::string& file, Spec& s) {
  std::vector<std::string> t;
  for (size_t i = 0; i < cmd.size();) {
    const size_t a = cmd.find_first_not_of(" \t\n", i);
    if (a == std::string::npos) break;
    const size_t b = std::min(cmd.find_first_of(" \t\n", a), cmd.size());
    t.push_back(cmd.substr(a, b - a));
    i = b;
  }
  size_t i = 0;
  while (i < t.size() && t[i] != "bench-collective") ++i;
  if (i == t.size())
    throw UserError(file +
                    ": predicted: expected a `clustersim bench-collective ...` command, got '" +
                    cmd + "'");
  for (++i; i < t.size(); ++i) {
    const std::string& f = t[i];
    if (i + 1 >= t.size()) throw UserError(file + ": predicted: " + f + " needs a value");
    const std::string v = t[++i];
    auto count = [&] {
      const auto n = parse_integer(v);
      if (!n || *n < 1)
        throw UserError(file + ": predicted: " + f + " '" + v + "': expected a positive count");
      return static_cast<int>(*n);
    };
    if (f == "--cluster")
      s.cluster = v;
    else if (f == "--nodes")
      s.nodes = count();
    else if (f == "--gpus" || f == "-g")
      s.gpus = count();
    else if (f == "-b" || f == "--min")
      s.min_bytes = size_of(v, file);
    else if (f == "-e" || f == "--max")
      s.max_bytes = size_of(v, file);
    else if (f == "--op" || f == "-o") {
      static const std::map<std::string, ir::CollectiveType> kOps = {
          {"all_reduce", ir::CollectiveType::all_reduce},
          {"all_gather", ir::CollectiveType::all_gather},
          {"reduce_scatter", ir::CollectiveType::reduce_scatter},
          {"broadcast", ir::CollectiveType::broadcast},
          {"all_to_all", ir::CollectiveType::all_to_all}};
      const auto it = kOps.find(v);
      if (it == kOps.end())
        throw UserError(
            file + ": predicted: --op '" + v +
            "': valid values are all_reduce, all_gather, reduce_scatter, broadcast, all_to_all");
      s.op = it->second;
    } else if (f == "--fidelity") {
      s.fidelity = scenario::find_named_model(scenario::network_models(),
                                              file + ": predicted: --fidelity", v);
    } else if (f == "--algo") {
      s.forced.algorithm = scenario::find_named_model(scenario::collective_algorithms(),
                                                      file + ": predicted: --algo", v);
    } else if (f == "--proto") {
      s.forced.protocol = scenario::find_named_model(scenario::collective_protocols(),
                                                     file + ": predicted: --proto", v);
    } else {
      throw UserError(file + ": predicted: '" + f +
                      "' is not read by the suite runner; it reads --cluster, --nodes, --gpus, "
                      "--op, -b, -e, --fidelity, --algo, --proto");
    }
  }
}

// Relative to the working directory when the file is there, else to the repository root (the
// suite file's folder's parent's parent: validate/suites/x.yaml -> .).
std::string resolve(const std::string& suite_file, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || path[0] == '/' || fs::exists(path, ec)) return path;
  const fs::path root = fs::path(suite_file).parent_path().parent_path().parent_path();
  const fs::path alt = root / path;
  if (fs::exists(alt, ec)) return alt.string();
  return path;
}

// The suite file's parts, each read by one of the functions below. Each takes the root by value and
// not const: a const YAML::Node reads a missing key as an invalid node, which cannot be copied into
// the Spec; a non-const one reads it as an undefined node, as load_spec's own root does.
// `bounds:`: the MAPE, worst-row and peak-memory MAPE bounds.
void read_bounds(YAML::Node root, const std::string& path, Spec& s) {
  const YAML::Node b = root["bounds"];
  if (!b) return;
  if (!b.IsMap())
    throw UserError(at(path, b) + ": bounds: expected a mapping (mape_percent, worst_percent)");
  for (const auto& kv : b) {
    const std::string k = kv.first.as<std::string>();
    if (k == "mape_percent")
      s.bound_mape = percent(kv.second, path, k);
    else if (k == "memory_mape_percent")
      s.bound_memory_mape = percent(kv.second, path, k);
    else if (k == "worst_percent" || k == "every_size_percent" || k == "every_row_percent")
      s.bound_worst = percent(kv.second, path, k);
    else
      throw UserError(
          at(path, kv.first) + ": bounds." + k +
          ": unknown key; valid keys: mape_percent, worst_percent (every_size_percent), "
          "memory_mape_percent");
  }
}

// How the data file holds its rows: csv with named columns, or yaml under a (dotted) key.
void read_rows_format(YAML::Node root, const std::string& path, Spec& s) {
  s.format = text(root, path, "format", true);
  if (s.format == "csv") {
    const YAML::Node c = root["columns"];
    if (!c || !c.IsSequence() || c.size() == 0)
      throw UserError(path + ": format csv needs 'columns: [name, ...]'");
    for (const YAML::Node& x : c) s.columns.push_back(x.as<std::string>());
  } else if (s.format == "yaml") {
    s.rows_key = text(root, path, "rows", true);
  } else {
    throw UserError(at(path, root["format"]) + ": format: expected csv or yaml, got '" + s.format +
                    "'");
  }
}

// The figure compared and its unit (a step time's unit scales the predicted seconds).
void read_figure(YAML::Node root, const std::string& path, Spec& s) {
  const std::string figure = text(root, path, "figure", true);
  static const std::map<std::string, Figure> kFigures = {
      {"step_time", Figure::step_time},
      {"tokens_per_s", Figure::tokens_per_s},
      {"tokens_per_s_per_gpu", Figure::tokens_per_s_per_gpu},
      {"speedup", Figure::speedup}};
  const auto f = kFigures.find(figure);
  if (f == kFigures.end())
    throw UserError(
        at(path, root["figure"]) +
        ": figure: expected step_time, tokens_per_s, tokens_per_s_per_gpu or speedup, got '" +
        figure + "'");
  s.figure = f->second;
  s.unit = text(root, path, "unit", false);
  if (s.figure == Figure::step_time) {
    if (s.unit == "ms")
      s.unit_scale = 1e3;
    else if (s.unit == "s")
      s.unit_scale = 1;
    else
      throw UserError(path + ": unit: a step time needs unit ms or s, got '" + s.unit + "'");
  } else if (s.unit.empty()) {
    s.unit = s.figure == Figure::speedup ? "x"
             : figure == "tokens_per_s"  ? "tokens/s"
                                         : "tokens/s/GPU";
  }
}

// The columns that hold the measured figure, the out-of-memory verdict and the peak memory.
void read_columns(YAML::Node root, const std::string& path, Spec& s) {
  s.measured_column = text(root, path, "measured_column", true);
  s.label = text(root, path, "label", false);
  if (root["features_column"]) s.features_column = text(root, path, "features_column", true);
  s.oom_column = text(root, path, "oom_column", false);
  s.memory_column = text(root, path, "memory_column", false);
  if (s.bound_memory_mape && s.memory_column.empty())
    throw UserError(path +
                    ": bounds.memory_mape_percent needs memory_column (the measured peak, MiB)");
}

// How a row becomes a scenario: the scenario keys, the selects and the features.
void read_row_mapping(YAML::Node root, const std::string& path, Spec& s) {
  s.scenario = root["scenario"];
  if (!s.scenario || !s.scenario.IsMap())
    throw UserError(path +
                    ": a training suite needs 'scenario:' (the scenario keys, with ${column} for "
                    "each row's values)");
  s.features = root["features"];
  if (s.features && !s.features.IsMap())
    throw UserError(at(path, s.features) +
                    ": features: expected a mapping of name -> scenario keys or reason");
  if (const YAML::Node sel = root["select"]) {
    // One mapping {column, values} or a list of them.
    auto add = [&](const YAML::Node& x) {
      if (!x.IsMap() || !x["column"] || !x["values"] || !x["values"].IsMap()) {
        throw UserError(
            at(path, x) +
            ": select: expected {column: NAME, values: {VALUE: scenario keys or reason, ...}}");
      }
      s.selects.emplace_back(x["column"].as<std::string>(), x["values"]);
    };
    if (sel.IsSequence()) {
      for (const YAML::Node& x : sel) add(x);
    } else {
      add(sel);
    }
  }
  if (const YAML::Node e = root["features_every_row"]) {
    if (!e.IsSequence())
      throw UserError(at(path, e) + ": features_every_row: expected a list of feature names");
    for (const YAML::Node& x : e) s.every_row.push_back(x.as<std::string>());
  }
}

Spec load_spec(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(read_text_file(path, "suite file", kMaxYamlFileBytes));  // bounded
  } catch (const YAML::Exception& e) {
    throw UserError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap())
    throw UserError(path + ": expected a mapping (source, citation, measured, data, ...)");
  Spec s;
  s.file = path;
  s.source = text(root, path, "source", true);
  s.citation = text(root, path, "citation", true);
  s.role = read_role(root, path);
  s.measured = text(root, path, "measured", true);
  s.data = resolve(path, text(root, path, "data", true));
  const std::string predicted = text(root, path, "predicted", false);
  std::string kind = text(root, path, "kind", false);
  if (kind.empty())
    kind = predicted.find("bench-collective") != std::string::npos ? "collective" : "";
  if (kind == "collective") {
    s.kind = Kind::collective;
    s.figure = Figure::collective_time;
    s.unit = "us";
    read_predicted_command(predicted, path, s);
  } else if (kind == "training") {
    s.kind = Kind::training;
  } else {
    throw UserError(path +
                    ": kind: expected training or collective (or a `predicted: clustersim "
                    "bench-collective ...` command), got '" +
                    kind + "'");
  }
  read_bounds(root, path, s);
  if (s.kind == Kind::collective) {
    if (s.bound_memory_mape)
      throw UserError(path + ": bounds.memory_mape_percent: a collective suite measures no memory");
    return s;
  }
  read_rows_format(root, path, s);
  read_figure(root, path, s);
  read_columns(root, path, s);
  read_row_mapping(root, path, s);
  return s;
}

// `${name}` replaced by the row's column; an unknown column is the suite's mistake.
std::string substitute(const std::string& t, const DataRow& row, const Spec& s) {
  std::string out;
  for (size_t i = 0; i < t.size();) {
    const size_t a = t.find("${", i);
    if (a == std::string::npos) {
      out += t.substr(i);
      break;
    }
    const size_t b = t.find('}', a);
    if (b == std::string::npos) throw UserError(s.file + ": unclosed '${' in '" + t + "'");
    out += t.substr(i, a - i);
    const std::string name = t.substr(a + 2, b - a - 2);
    const auto it = row.columns.find(name);
    if (it == row.columns.end()) {
      std::string known;
      for (const auto& [k, v] : row.columns) known += (known.empty() ? "" : ", ") + k;
      throw UserError(s.file + ": '${" + name + "}' names no column of " + s.data + " line " +
                      std::to_string(row.line) + " (columns: " + known + ")");
    }
    out += it->second;
    i = b + 1;
  }
  return out;
}

// The value a select chooses by: the row's column, or a `${...}` text naming several columns (a
// row's own settings keyed by model, system and precision).
std::string select_value(const std::string& column, const DataRow& row, const Spec& s) {
  if (column.find("${") != std::string::npos) return substitute(column, row, s);
  const auto v = row.columns.find(column);
  if (v == row.columns.end())
    throw UserError(s.file + ": select: " + s.data + " line " + std::to_string(row.line) +
                    " has no column '" + column + "'");
  return v->second;
}

YAML::Node instantiate(const YAML::Node& n, const DataRow& row, const Spec& s) {
  if (n.IsScalar()) return YAML::Node(substitute(n.Scalar(), row, s));
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const YAML::Node& x : n) out.push_back(instantiate(x, row, s));
    return out;
  }
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : n) out[kv.first.as<std::string>()] = instantiate(kv.second, row, s);
    return out;
  }
  return YAML::Node();
}

void merge(YAML::Node into, const YAML::Node& from) {
  for (const auto& kv : from) {
    const std::string k = kv.first.as<std::string>();
    if (kv.second.IsMap() && into[k] && into[k].IsMap())
      merge(into[k], kv.second);
    else
      into[k] = YAML::Clone(kv.second);
  }
}

void add_reason(SuiteRow& row, const std::string& why) {
  row.reasons.push_back(why);
  row.not_expressible += (row.not_expressible.empty() ? "" : "; ") + why;
}

bool truthy(const std::string& v) { return v == "true" || v == "yes" || v == "1"; }

// "row 3:12:5: training.precision: ..." -> "training.precision: ..."
std::string reason_of(const std::string& msg, const std::string& tag) {
  if (msg.rfind(tag, 0) != 0) return msg;
  size_t i = tag.size();
  for (int part = 0; part < 2 && i < msg.size() && msg[i] == ':'; ++part) {
    size_t j = i + 1;
    while (j < msg.size() && std::isdigit(static_cast<unsigned char>(msg[j]))) ++j;
    if (j == i + 1) break;
    i = j;
  }
  if (i + 1 < msg.size() && msg[i] == ':' && msg[i + 1] == ' ') i += 2;
  return msg.substr(i);
}

struct Prediction {
  double step_s = 0, tokens_per_s = 0, speedup = 0;
  bool fits = true;
  int64_t peak_memory = 0;  // bytes, the rank that peaks (whole runs only)
};

// `whole`: run every micro-batch (an out-of-memory verdict or a peak memory is compared).
Prediction predict_training(scenario::Scenario s, Figure figure, bool whole) {
  driver::SimulateOptions opts;
  opts.with_baseline = figure == Figure::speedup;
  opts.suggest = false;
  opts.memory_samples = false;
  // One rank per pipeline stage gives the same step and memory as every rank (a test checks it);
  // the flow-level network needs every rank.
  if (s.fidelity == cost::NetworkFidelity::analytic) opts.ranks = driver::RankMode::representative;
  Prediction p;
  const int64_t m = s.training.accumulation(s.layout);
  const auto [m1, m2] = driver::short_run_counts(s.layout);
  const int64_t tokens = s.training.global_batch * s.training.seq_len;
  if (figure == Figure::speedup || whole || m <= m2 || s.training.global_batch % m != 0) {
    if (figure == Figure::speedup && s.gpus > driver::kBaselineGpuLimit) {
      throw UserError("a speedup needs the single-GPU twin, which is not simulated above " +
                      std::to_string(driver::kBaselineGpuLimit) + " GPUs");
    }
    const driver::SimulationResult r = driver::simulate(s, opts);
    p.step_s = r.report.step_time.seconds();
    p.speedup = r.speedup;
    p.fits = r.report.fits;
    // Compared with the allocator's peak (torch.cuda.max_memory_allocated): the tensors alone,
    // without the reserve the report adds beside them (strategies/memory_reserve.h).
    const auto& at_peak = r.report.ranks[r.report.peak_index].memory.at_peak;
    p.peak_memory =
        r.report.peak_memory - at_peak[static_cast<size_t>(ir::MemoryCategory::reserve)];
  } else {
    // Two short runs, extrapolated linearly in the micro-batch count (as the planner does).
    const int64_t per = s.training.global_batch / m;
    s.training.global_batch = per * m1;
    const double a = driver::simulate(s, opts).report.step_time.seconds();
    s.training.global_batch = per * m2;
    const double b = driver::simulate(s, opts).report.step_time.seconds();
    p.step_s = a + (b - a) * static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
  }
  p.tokens_per_s = static_cast<double>(tokens) / p.step_s;
  return p;
}

void run_collective(const Spec& s, SourceResult& out) {
  const std::vector<NcclTestsRow> rows = read_nccl_tests(s.data);
  topo::ClusterSpec spec = topo::find_cluster_preset(s.cluster);
  const int per_node = spec.node.gpus;
  spec.nodes = s.nodes > 0 ? s.nodes : (s.gpus > 0 ? (s.gpus + per_node - 1) / per_node : 1);
  const topo::Topology topology = topo::build_cluster(spec);
  const int gpus = s.gpus > 0 ? s.gpus : topology.gpu_count();
  if (gpus < 2 || gpus > topology.gpu_count())
    throw UserError(s.file + ": predicted: --gpus " + std::to_string(gpus) + " does not fit " +
                    s.cluster);
  std::vector<ir::RankId> ranks;
  for (int r = 0; r < gpus; ++r) ranks.push_back(static_cast<ir::RankId>(r));
  // As bench-collective: the datasheet device (its HBM bandwidth prices the buffer passes).
  const cost::DeviceSpec& device = cost::find_device(spec.gpu);
  const cost::AnalyticCostModel costs{
      cost::ComputeModel(device),
      cost::CollectiveModel(topology, driver::collective_params(device), s.forced)};
  for (size_t i = 0; i < rows.size(); ++i) {
    const NcclTestsRow& r = rows[i];
    SuiteRow row;
    row.index = static_cast<int>(i + 1);
    row.line = r.line;
    row.label = r.bytes < 1024
                    ? std::to_string(r.bytes) + " B"
                    : format_bytes(Bytes{r.bytes}) + " (" + std::to_string(r.bytes) + " B)";
    row.measured = std::min(r.out_of_place_us, r.in_place_us);
    if (r.bytes < s.min_bytes || r.bytes > s.max_bytes) {
      add_reason(row, "outside the compared range: the suite compares " +
                          std::to_string(s.min_bytes) + " B .. " +
                          format_bytes(Bytes{s.max_bytes}) + " (its `predicted` command's -b/-e)");
    } else {
      row.predicted =
          driver::simulate_collective(costs, s.op, Bytes{r.bytes}, ranks, s.fidelity).us();
      row.run = true;
      row.error_percent = 100 * (row.predicted / row.measured - 1);
    }
    out.rows.push_back(std::move(row));
  }
}

// The row's measured figure (none for an out-of-memory row: its verdict is compared) and, with a
// memory_column, its measured peak; a cell that is not a positive number is the table's mistake.
void read_measured(const Spec& s, const DataRow& d, SuiteRow& row) {
  row.verdict_row =
      !s.oom_column.empty() && d.columns.count(s.oom_column) && truthy(d.columns.at(s.oom_column));
  if (!row.verdict_row) {
    const auto it = d.columns.find(s.measured_column);
    if (it == d.columns.end() || it->second.empty())
      throw UserError(s.file + ": " + s.data + " line " + std::to_string(d.line) +
                      ": no value in '" + s.measured_column + "'");
    try {
      row.measured = std::stod(it->second);
    } catch (const std::exception&) {
      row.measured = -1;
    }
    if (!(row.measured > 0))
      throw UserError(s.data + ":" + std::to_string(d.line) + ": " + s.measured_column +
                      ": expected a positive number, got '" + it->second + "'");
  }
  if (s.memory_column.empty()) return;
  const auto it = d.columns.find(s.memory_column);
  if (it == d.columns.end())
    throw UserError(s.file + ": memory_column: " + s.data + " line " + std::to_string(d.line) +
                    " has no column '" + s.memory_column + "'");
  if (it->second.empty() || row.verdict_row) return;
  double mib = -1;
  try {
    mib = std::stod(it->second);
  } catch (const std::exception&) {
  }
  if (!(mib > 0))
    throw UserError(s.data + ":" + std::to_string(d.line) + ": " + s.memory_column +
                    ": expected a positive number of MiB, got '" + it->second + "'");
  row.memory_measured_mib = mib;
}

// The row's scenario keys: the suite's scenario with every select's choice merged in; false when
// a select names a reason instead (added to the row).
bool select_scenario(const Spec& s, const DataRow& d, YAML::Node& scenario, SuiteRow& row) {
  scenario = instantiate(s.scenario, d, s);
  bool refused = false;
  for (const auto& [column, values] : s.selects) {
    const std::string value = select_value(column, d, s);
    const YAML::Node choice = values[value];
    if (!choice)
      throw UserError(s.file + ": select: no entry for " + column + " '" + value + "' (" + s.data +
                      " line " + std::to_string(d.line) + ")");
    if (choice.IsScalar()) {
      const bool text = column.find("${") != std::string::npos;  // the value names itself
      add_reason(row, (text ? value : column + " " + value) + ": " + choice.Scalar());
      refused = true;
    } else {
      merge(scenario, instantiate(choice, d, s));
    }
  }
  return !refused;
}

// The features the row needs (features_every_row, then its features column): those given as
// scenario keys, by name; a feature given as a reason is added to the row.
std::vector<std::pair<std::string, YAML::Node>> feature_keys(const Spec& s, const DataRow& d,
                                                             SuiteRow& row) {
  std::vector<std::string> names = s.every_row;
  const auto f = d.columns.find(s.features_column);
  if (f != d.columns.end()) {
    std::string list = f->second;
    std::replace(list.begin(), list.end(), '+', ' ');
    std::stringstream ss(list);
    for (std::string name; ss >> name;) names.push_back(name);
  }
  std::vector<std::pair<std::string, YAML::Node>> keys;
  for (const std::string& name : names) {
    const YAML::Node feature = s.features ? s.features[name] : YAML::Node();
    if (!feature)
      throw UserError(s.file + ": features: no entry for '" + name + "' (" + s.data + " line " +
                      std::to_string(d.line) + ")");
    if (feature.IsScalar())
      add_reason(row, name + ": " + feature.Scalar());
    else
      keys.emplace_back(name, instantiate(feature, d, s));
  }
  return keys;
}

std::string emit(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str());
}

// The row's whole scenario as text, or nothing when the row cannot be expressed (the reasons are
// on the row). Each feature is checked alone on the row's base scenario, so that a refusal names
// every feature the simulator lacks (the scenario reader stops at the first); a base that is
// itself refused names its own reason, and the features are not checked until then.
std::optional<std::string> row_scenario(const Spec& s, const DataRow& d, const std::string& tag,
                                        SuiteRow& row) {
  YAML::Node scenario;
  const bool selected = select_scenario(s, d, scenario, row);
  // A model's config.json is found as the data file is: from the working directory, else from
  // the repository root (a row's scenario has no file of its own to be relative to).
  if (selected && scenario["model"] && scenario["model"]["hf_config"] &&
      scenario["model"]["hf_config"].IsScalar()) {
    YAML::Node config = scenario["model"]["hf_config"];
    config = resolve(s.file, config.as<std::string>());
  }
  const auto features = feature_keys(s, d, row);
  auto not_checked = [&] {
    std::string names;
    for (const auto& f : features) names += (names.empty() ? "" : ", ") + f.first;
    if (!names.empty()) add_reason(row, "not checked until then: " + names);
  };
  if (!selected) {
    not_checked();
    return std::nullopt;
  }
  if (!features.empty()) {
    try {
      scenario::parse_scenario(emit(scenario), tag);
    } catch (const UserError& e) {
      add_reason(row, reason_of(e.what(), tag));
      not_checked();
      return std::nullopt;
    }
  }
  for (const auto& [name, keys] : features) {
    YAML::Node one = YAML::Clone(scenario);
    merge(one, keys);
    try {
      scenario::parse_scenario(emit(one), tag);
    } catch (const UserError& e) {
      add_reason(row, name + ": " + reason_of(e.what(), tag));
    }
  }
  if (!row.not_expressible.empty()) return std::nullopt;
  for (const auto& [name, keys] : features) merge(scenario, keys);
  return emit(scenario);
}

// The GPU's shipped profile, read once per GPU (profiles/<gpu>.yaml; null where there is none).
using Profiles = std::map<std::string, std::shared_ptr<const cost::Profile>>;
void attach_profile(scenario::Scenario& sc, const SuiteOptions& o, Profiles& profiles) {
  if (!o.use_profiles) {
    sc.profile.reset();
    return;
  }
  if (sc.profile || sc.declared_gpu) return;
  if (!profiles.count(sc.gpu)) {
    const std::string path = driver::default_profile_path(sc.gpu);
    profiles[sc.gpu] = path.empty()
                           ? nullptr
                           : std::make_shared<const cost::Profile>(scenario::load_profile(path));
  }
  if (profiles[sc.gpu]) sc.profile = *profiles[sc.gpu];
}

// A refit's values (SuiteOptions) on one row's scenario.
void apply_refit(scenario::Scenario& sc, const SuiteOptions& o) {
  // The stacks whose host time is eager PyTorch's fitted one (eager, DeepSpeed; Megatron-Core
  // keeps its own: models/software_stack.cpp).
  const SimTime eager = model::stack_traits(model::Stack::pytorch_eager).host_per_kernel;
  if (o.eager_host_us && !sc.training.host_per_kernel &&
      model::stack_traits(sc.training.stack).host_per_kernel == eager)
    sc.training.host_per_kernel = SimTime::from_us(*o.eager_host_us);
  if (o.compiled_host_us && !sc.training.host_per_kernel &&
      sc.training.stack == model::Stack::torch_compile)
    sc.training.host_per_kernel = SimTime::from_us(*o.compiled_host_us);
  if (!sc.profile) return;
  const auto clock = o.tensor_clock_ratio.find(sc.profile->name);
  if (clock == o.tensor_clock_ratio.end()) return;
  // The variant's tensor-core rates are the base part's times its clock ratio (profile_io.cpp).
  cost::Profile& p = *sc.profile;
  const double change = clock->second / p.tensor_clock_ratio;
  p.compute.rate_scale.gemm *= change;
  p.compute.rate_scale.attention *= change;
  p.tensor_clock_ratio = clock->second;
}

// The row's prediction in the source's figure, its error, and its step-time and peak-memory errors;
// an out-of-memory row gets the verdict only.
void predict_row(const Spec& s, const scenario::Scenario& sc, SuiteRow& row) {
  row.profile = sc.profile ? sc.profile->name : "";
  row.stack = std::string(model::to_string(sc.training.stack));
  row.precision = std::string(model::to_string(sc.training.precision));
  const Prediction p =
      predict_training(sc, s.figure, row.verdict_row || row.memory_measured_mib.has_value());
  if (row.verdict_row) {
    row.verdict_ok = !p.fits;
    row.run = false;
    return;
  }
  switch (s.figure) {
    case Figure::step_time:
      row.predicted = p.step_s * s.unit_scale;
      break;
    case Figure::tokens_per_s:
      row.predicted = p.tokens_per_s;
      break;
    case Figure::tokens_per_s_per_gpu:
      row.predicted = p.tokens_per_s / sc.gpus;
      break;
    case Figure::speedup:
      row.predicted = p.speedup;
      break;
    case Figure::collective_time:
      break;
  }
  row.error_percent = 100 * (row.predicted / row.measured - 1);
  if (row.memory_measured_mib) {
    row.memory_predicted_mib = static_cast<double>(p.peak_memory) / (1024.0 * 1024.0);
    row.memory_error_percent = 100 * (*row.memory_predicted_mib / *row.memory_measured_mib - 1);
  }
  if (s.figure == Figure::step_time)
    row.step_error_percent = row.error_percent;
  else if (s.figure != Figure::speedup)
    row.step_error_percent = 100 * (row.measured / row.predicted - 1);
  row.run = true;
}

void run_training(const Spec& s, const SuiteOptions& o, SourceResult& out) {
  const std::vector<DataRow> data =
      s.format == "csv" ? read_csv_rows(s.data, s.columns) : read_yaml_rows(s.data, s.rows_key);
  out.rows.resize(data.size());
  // The scenarios are read here (one thread: the reader caches presets), simulated in parallel.
  Profiles profiles;
  std::vector<std::optional<scenario::Scenario>> scenarios(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    DataRow d = data[i];
    d.columns.emplace("row", std::to_string(i + 1));  // built in: the row's number and file line
    d.columns.emplace("line", std::to_string(d.line));
    SuiteRow& row = out.rows[i];
    row.index = static_cast<int>(i + 1);
    row.line = d.line;
    row.label = s.label.empty() ? "line " + std::to_string(d.line) : substitute(s.label, d, s);
    read_measured(s, d, row);
    const std::string tag = "row " + std::to_string(i + 1);
    const std::optional<std::string> text = row_scenario(s, d, tag, row);
    if (!text) continue;
    try {
      scenario::Scenario sc = scenario::parse_scenario(*text, tag);
      attach_profile(sc, o, profiles);
      apply_refit(sc, o);
      scenarios[i] = std::move(sc);
    } catch (const UserError& e) {
      add_reason(row, reason_of(e.what(), tag));
    }
  }
  std::mutex failures;
  parallel_for(data.size(), o.threads, [&](size_t i) {
    if (!scenarios[i]) return;
    try {
      predict_row(s, *scenarios[i], out.rows[i]);
    } catch (const UserError& e) {
      add_reason(out.rows[i], e.what());
    } catch (const std::exception& e) {  // a worker must not throw; the source fails below
      const std::lock_guard<std::mutex> lock(failures);
      add_reason(out.rows[i], std::string("internal error: ") + e.what());
    }
  });
}

}  // namespace

std::vector<std::string> suite_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return {path};
  require_file_or_folder("--suite", path, "suite file");
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(path)) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) throw UserError("--suite '" + path + "': no *.yaml suite files in the folder");
  return out;
}

SourceResult run_suite_file(const std::string& path, const SuiteOptions& o) {
  const Spec s = load_spec(path);
  SourceResult out;
  out.file = path;
  out.source = s.source;
  out.citation = s.citation;
  out.role = s.role;
  out.kind = s.kind == Kind::training ? "training" : "collective";
  out.figure = figure_name(s.figure);
  out.unit = s.unit;
  out.bound_mape = s.bound_mape;
  out.bound_worst = s.bound_worst;
  out.memory_column = s.memory_column;
  out.bound_memory_mape = s.bound_memory_mape;
  if (s.kind == Kind::collective)
    run_collective(s, out);
  else
    run_training(s, o, out);

  std::vector<double> abs_errors, step_errors;
  double signed_sum = 0;
  std::set<std::string> used;
  bool internal = false;
  for (const SuiteRow& r : out.rows) {
    if (r.verdict_row && r.not_expressible.empty()) {
      ++out.verdicts;
      out.verdicts_ok += r.verdict_ok ? 1 : 0;
    }
    internal = internal || r.not_expressible.rfind("internal error", 0) == 0;
    if (!r.run) continue;
    if (r.memory_error_percent) {
      const double e = *r.memory_error_percent;
      ++out.memory_rows;
      out.memory_mape += std::abs(e);
      out.memory_bias += e;
      out.memory_worst = std::max(out.memory_worst, std::abs(e));
    }
    abs_errors.push_back(std::abs(r.error_percent));
    signed_sum += r.error_percent;
    // A collective row's figure is its time, already in the step time's sense.
    if (s.kind == Kind::collective)
      step_errors.push_back(r.error_percent);
    else if (r.step_error_percent)
      step_errors.push_back(*r.step_error_percent);
    if (!r.profile.empty()) used.insert(r.profile);
  }
  out.rows_total = out.rows.size();
  out.rows_run = abs_errors.size();
  out.profiles.assign(used.begin(), used.end());
  if (!abs_errors.empty()) {
    double sum = 0;
    for (double e : abs_errors) sum += e;
    out.mape = sum / static_cast<double>(abs_errors.size());
    out.bias = signed_sum / static_cast<double>(abs_errors.size());
    out.worst = *std::max_element(abs_errors.begin(), abs_errors.end());
    out.median = *median_of(std::move(abs_errors));
  }
  out.median_step_error = median_of(std::move(step_errors));
  if (out.memory_rows) {
    out.memory_mape /= static_cast<double>(out.memory_rows);
    out.memory_bias /= static_cast<double>(out.memory_rows);
  }
  out.pass = !internal && out.verdicts_ok == out.verdicts &&
             (!out.bound_mape || out.mape <= *out.bound_mape) &&
             (!out.bound_worst || out.worst <= *out.bound_worst) &&
             (!out.bound_memory_mape || out.memory_mape <= *out.bound_memory_mape);
  return out;
}

const char* role_name(Role r) { return r == Role::calibration ? "calibration" : "validation"; }

RoleSummary role_summary(const std::vector<SourceResult>& results, Role role) {
  RoleSummary out;
  double mape_sum = 0;
  for (const SourceResult& r : results) {
    if (r.role != role) continue;
    ++out.sources;
    out.within_bounds += r.pass ? 1 : 0;
    out.rows_run += r.rows_run;
    if (!r.rows_run) continue;
    ++out.sources_run;
    mape_sum += r.mape;
  }
  if (out.sources_run) out.mean_mape = mape_sum / static_cast<double>(out.sources_run);
  return out;
}

namespace {

void add_unique(std::vector<std::string>& v, const std::string& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// Out-of-sample step-time errors (validation sources only) grouped by profile, or by profile and
// stack.
std::vector<ProfileError> grouped_errors(const std::vector<SourceResult>& results, bool by_stack) {
  std::map<std::pair<std::string, std::string>, ProfileError> by;
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;
  for (const SourceResult& s : results) {
    if (s.role != Role::validation) continue;
    for (const SuiteRow& r : s.rows) {
      if (!r.run || !r.step_error_percent || r.profile.empty()) continue;
      const auto key = std::make_pair(r.profile, by_stack ? r.stack : std::string());
      ProfileError& p = by[key];
      p.profile = r.profile;
      p.stack = key.second;
      add_unique(p.sources, s.source);
      add_unique(p.precisions, r.precision);
      errors[key].push_back(std::abs(*r.step_error_percent));
    }
  }
  std::vector<ProfileError> out;
  for (auto& [name, p] : by) {
    const auto& e = errors[name];
    p.runs = e.size();
    std::sort(p.precisions.begin(), p.precisions.end());
    double sum = 0;
    for (double x : e) sum += x, p.worst = std::max(p.worst, x);
    p.mape = sum / static_cast<double>(e.size());
    out.push_back(p);
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// The same with each name in backticks (markdown).
std::string joined_code(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "`" : ", `") + x + "`";
  return out;
}

std::string profile_error_line(const ProfileError& p, bool with_stack) {
  char stack[32] = "";
  if (with_stack) std::snprintf(stack, sizeof stack, "%-15s ", p.stack.c_str());
  char line[512];
  std::snprintf(line, sizeof line, "  %-18s %sMAPE %.2f%%, worst %.2f%% on %zu run%s in %s (%s)\n",
                p.profile.c_str(), stack, p.mape, p.worst, p.runs, p.runs == 1 ? "" : "s",
                joined(p.precisions).c_str(), joined(p.sources).c_str());
  return line;
}

}  // namespace

std::vector<ProfileError> profile_errors(const std::vector<SourceResult>& results) {
  return grouped_errors(results, false);
}
std::vector<ProfileError> profile_stack_errors(const std::vector<SourceResult>& results) {
  return grouped_errors(results, true);
}

namespace {

std::string first_line(const std::string& s) {
  std::string t = s.substr(0, s.find('\n'));
  return t.size() > 110 ? t.substr(0, 107) + "..." : t;
}

std::string bound_text(const SourceResult& r) {
  std::string b;
  char x[64];
  if (r.bound_mape) std::snprintf(x, sizeof x, "MAPE <= %g%%", *r.bound_mape), b += x;
  if (r.bound_worst)
    std::snprintf(x, sizeof x, "%sworst <= %g%%", b.empty() ? "" : ", ", *r.bound_worst), b += x;
  if (r.bound_memory_mape)
    std::snprintf(x, sizeof x, "%smemory MAPE <= %g%%", b.empty() ? "" : ", ",
                  *r.bound_memory_mape),
        b += x;
  return b.empty() ? "none" : b;
}

// The peak-memory bound of a source ("MAPE <= 10%", or "none").
std::string memory_bound_text(const SourceResult& r) {
  if (!r.bound_memory_mape) return "none";
  char x[48];
  std::snprintf(x, sizeof x, "MAPE <= %g%%", *r.bound_memory_mape);
  return x;
}

bool any_memory_column(const std::vector<SourceResult>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const SourceResult& r) { return !r.memory_column.empty(); });
}

// The peak-memory line's figures: "MAPE 3.10%  worst 7.20%  bias -1.00%" (or "no row").
std::string memory_text(const SourceResult& r) {
  if (!r.memory_rows) return "no row compared";
  char x[160];
  std::snprintf(x, sizeof x, "%zu row%s  MAPE %.2f%%  worst %.2f%%  bias %+.2f%%", r.memory_rows,
                r.memory_rows == 1 ? "" : "s", r.memory_mape, r.memory_worst, r.memory_bias);
  return x;
}

std::string verdict_text(const SourceResult& r) {
  if (!r.pass) return "FAIL";
  return r.rows_run == 0 && r.verdicts == 0 ? "n/a" : "pass";
}

// print_source's parts: what the source is and what it compares; the rows not run and the
// out-of-memory verdicts; each row's prediction.
void print_source_header(std::ostream& out, const SourceResult& r) {
  out << "source      " << r.source << "  (" << r.file << ")\n";
  out << "            " << first_line(r.citation) << "\n";
  out << "role        " << role_name(r.role)
      << (r.role == Role::calibration ? " (in sample: global parameters were fitted on it)"
                                      : " (out of sample: nothing was fitted on it)")
      << "\n";
  out << "figure      " << r.figure;
  if (r.unit != r.figure) out << " (" << r.unit << ")";
  if (r.kind == "training") {
    out << "; "
        << (r.profiles.empty() ? std::string("datasheet figures (no profile)") : "profile " + [&] {
             std::string p;
             for (const auto& x : r.profiles) p += (p.empty() ? "" : ", ") + x;
             return p;
           }());
  }
  out << "\n";
}

void print_rows_not_run(std::ostream& out, const SourceResult& r) {
  size_t skipped = 0;
  for (const SuiteRow& x : r.rows) skipped += !x.run && !x.verdict_row ? 1 : 0;
  if (skipped) {
    out << "not run     " << skipped << " row" << (skipped == 1 ? "" : "s")
        << " not expressible (or outside the compared range):\n";
    for (const SuiteRow& x : r.rows) {
      if (x.run || x.verdict_row) continue;
      out << "  row " << x.index << " (" << x.label << "): " << x.not_expressible << "\n";
    }
  }
  for (const SuiteRow& x : r.rows) {
    if (!x.verdict_row) continue;
    out << "  row " << x.index << " (" << x.label << "): measured out of memory; "
        << (!x.not_expressible.empty() ? "not expressible: " + x.not_expressible
            : x.verdict_ok             ? "predicted out of memory"
                                       : "PREDICTED TO FIT")
        << "\n";
  }
}

void print_row_predictions(std::ostream& out, const SourceResult& r) {
  char line[400];
  for (const SuiteRow& x : r.rows) {
    if (!x.run) continue;
    std::snprintf(line, sizeof line, "  row %-4d %-48s measured %12.4g  predicted %12.4g  %+7.1f%%",
                  x.index, x.label.substr(0, 48).c_str(), x.measured, x.predicted, x.error_percent);
    out << line;
    if (x.memory_error_percent) {
      std::snprintf(line, sizeof line, "   peak MiB measured %8.0f  predicted %8.0f  %+7.1f%%",
                    *x.memory_measured_mib, *x.memory_predicted_mib, *x.memory_error_percent);
      out << line;
    }
    out << "\n";
  }
}

// What the two signed columns mean: the figures differ in sense (a throughput over, a time under,
// when the prediction is too fast), the step time does not.
constexpr const char* kSignedErrorLegend =
    "bias: the mean of the rows' signed errors in the figure (predicted / measured - 1: + is too "
    "fast for a throughput or speedup, too slow for a time); median step error (med.step): the "
    "median of their signed step-time errors (- is too fast)";

// "<prefix>-3.20%": the source's median signed step-time error, or "" where it has none.
std::string median_step_text(const SourceResult& r, const char* prefix,
                             const char* format = "%+.2f%%") {
  if (!r.median_step_error) return "";
  char x[64];
  std::snprintf(x, sizeof x, format, *r.median_step_error);
  return prefix + std::string(x);
}

}  // namespace

void print_source(std::ostream& out, const SourceResult& r, bool rows) {
  char line[400];
  print_source_header(out, r);
  std::snprintf(line, sizeof line, "rows        %zu of %zu run", r.rows_run, r.rows_total);
  out << line;
  if (r.verdicts)
    out << "; out-of-memory verdicts " << r.verdicts_ok << " of " << r.verdicts << " right";
  out << "\n";
  if (r.rows_run) {
    std::snprintf(
        line, sizeof line,
        "error       MAPE %.2f%%  median %.2f%%  worst %.2f%%  bias %+.2f%%%s  (bound %s)  %s\n",
        r.mape, r.median, r.worst, r.bias, median_step_text(r, "  median step error ").c_str(),
        bound_text(r).c_str(), verdict_text(r).c_str());
  } else {
    std::snprintf(line, sizeof line, "error       no row expressible yet  (bound %s)  %s\n",
                  bound_text(r).c_str(), verdict_text(r).c_str());
  }
  out << line;
  if (!r.memory_column.empty()) {
    out << "memory      peak memory against " << r.memory_column << " (MiB): " << memory_text(r);
    if (r.bound_memory_mape) {
      std::snprintf(line, sizeof line, "  (bound MAPE <= %g%%)", *r.bound_memory_mape);
      out << line;
    }
    out << "\n";
  }
  print_rows_not_run(out, r);
  if (rows) print_row_predictions(out, r);
  out << "\n";
}

namespace {

// What each role's error means, in the caption above its table.
const char* role_caption(Role role) {
  return role == Role::validation
             ? "validation sources (out of sample: nothing was fitted on them)"
             : "calibration sources (in sample: global parameters were fitted on them, so their "
               "error is a fit, not a prediction)";
}

// "out-of-sample MAPE 10.21% (mean over 4 sources, 29 rows run); 4 of 4 within bounds".
std::string role_summary_text(const RoleSummary& s, Role role) {
  char x[200];
  const char* name = role == Role::validation ? "out-of-sample" : "in-sample";
  if (!s.sources_run)
    std::snprintf(x, sizeof x, "%s MAPE - (no source ran a row); %zu of %zu within bounds", name,
                  s.within_bounds, s.sources);
  else
    std::snprintf(x, sizeof x,
                  "%s MAPE %.2f%% (mean over %zu source%s, %zu rows run); %zu of %zu within bounds",
                  name, s.mean_mape, s.sources_run, s.sources_run == 1 ? "" : "s", s.rows_run,
                  s.within_bounds, s.sources);
  return x;
}

bool has_role(const std::vector<SourceResult>& results, Role role) {
  return std::any_of(results.begin(), results.end(),
                     [&](const SourceResult& r) { return r.role == role; });
}

void print_role_table(std::ostream& out, const std::vector<SourceResult>& results, Role role) {
  char line[400];
  out << role_caption(role) << "\n";
  std::snprintf(line, sizeof line, "  %-40s %-22s %9s %8s %8s %8s %8s %9s  %-26s %s\n", "source",
                "figure", "rows run", "MAPE", "median", "worst", "bias", "med.step", "bound",
                "verdict");
  out << line;
  for (const SourceResult& r : results) {
    if (r.role != role) continue;
    const std::string run = std::to_string(r.rows_run) + "/" + std::to_string(r.rows_total);
    if (r.rows_run) {
      const std::string step = r.median_step_error ? median_step_text(r, "") : "-";
      std::snprintf(line, sizeof line,
                    "  %-40s %-22s %9s %7.2f%% %7.2f%% %7.2f%% %+7.2f%% %9s  %-26s %s\n",
                    r.source.c_str(), r.figure.c_str(), run.c_str(), r.mape, r.median, r.worst,
                    r.bias, step.c_str(), bound_text(r).c_str(), verdict_text(r).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-40s %-22s %9s %8s %8s %8s %8s %9s  %-26s %s\n",
                    r.source.c_str(), r.figure.c_str(), run.c_str(), "-", "-", "-", "-", "-",
                    bound_text(r).c_str(), verdict_text(r).c_str());
    }
    out << line;
  }
  out << "  " << role_summary_text(role_summary(results, role), role) << "\n";
}

}  // namespace

void print_summary(std::ostream& out, const std::vector<SourceResult>& results) {
  char line[400];
  out << "summary\n";
  bool first = true;
  for (Role role : {Role::validation, Role::calibration}) {
    if (!has_role(results, role)) continue;
    if (!first) out << "\n";
    print_role_table(out, results, role);
    first = false;
  }
  out << "  " << kSignedErrorLegend << "\n";
  if (any_memory_column(results)) {
    out << "\npeak memory (sources with a measured peak: predicted peak of the rank that peaks "
           "against it)\n";
    for (const SourceResult& r : results) {
      if (r.memory_column.empty()) continue;
      const std::string bound = memory_bound_text(r);
      std::snprintf(line, sizeof line, "  %-40s %s  (bound %s)\n", r.source.c_str(),
                    memory_text(r).c_str(), bound.c_str());
      out << line;
    }
  }
  const auto profiles = profile_errors(results);
  if (!profiles.empty())
    out << "\nout-of-sample step-time error by profile (every training row of a validation source "
           "predicted with it; speedups excluded)\n";
  for (const ProfileError& p : profiles) out << profile_error_line(p, false);
  const auto stacks = profile_stack_errors(results);
  if (!stacks.empty())
    out << "\nout-of-sample step-time error by profile and software stack (what a report's header "
           "quotes)\n";
  for (const ProfileError& p : stacks) out << profile_error_line(p, true);
  print_fitted_parameters(out);
}

namespace {

// What keeps rows from running, by the name each reason starts with ("compile", "float8",
// "layout"), with how many rows it keeps out: "compile 16, float8 11".
std::string not_run_summary(const SourceResult& r) {
  std::vector<std::pair<std::string, int>> counts;
  for (const SuiteRow& x : r.rows) {
    if (x.run || x.not_expressible.empty()) continue;
    std::set<std::string> seen;
    for (const std::string& part : x.reasons) {
      const size_t colon = part.find(": ");
      std::string key = colon == std::string::npos || colon > 40 ? part.substr(0, part.find(" ("))
                                                                 : part.substr(0, colon);
      if (key.rfind("not checked until then", 0) == 0) continue;
      if (key.size() > 40) key = key.substr(0, 37) + "...";
      if (seen.insert(key).second) {
        auto it = std::find_if(counts.begin(), counts.end(),
                               [&](const auto& c) { return c.first == key; });
        if (it == counts.end())
          counts.emplace_back(key, 1);
        else
          ++it->second;
      }
    }
  }
  std::string out;
  for (const auto& [k, n] : counts) out += (out.empty() ? "" : ", ") + k + " " + std::to_string(n);
  return out.empty() ? "-" : out;
}

void print_markdown_role_table(std::ostream& out, const std::vector<SourceResult>& results,
                               Role role) {
  char line[900];
  const std::string summary = role_summary_text(role_summary(results, role), role);
  out << (role == Role::validation
              ? "**Out of sample** (validation sources: nothing was fitted on them): "
              : "**In sample** (calibration sources: global parameters were fitted on them, so "
                "their error is a fit, not a prediction): ")
      << summary << ". " << kSignedErrorLegend << ".\n\n";
  out << "| source | figure | rows run | MAPE | median | worst | bias | median step error | peak "
         "memory MAPE | bound | verdict | not run (rows, by what is missing) |\n";
  out << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n";
  for (const SourceResult& r : results) {
    if (r.role != role) continue;
    const std::string run = std::to_string(r.rows_run) + " of " + std::to_string(r.rows_total);
    char memory[32] = "-";  // sources with a measured peak (memory_column)
    if (r.memory_rows) std::snprintf(memory, sizeof memory, "%.1f%%", r.memory_mape);
    if (r.rows_run) {
      const std::string step = r.median_step_error ? median_step_text(r, "", "%+.1f%%") : "-";
      std::snprintf(
          line, sizeof line,
          "| `%s` | %s | %s | %.1f%% | %.1f%% | %.1f%% | %+.1f%% | %s | %s | %s | %s | %s |\n",
          r.source.c_str(), r.figure.c_str(), run.c_str(), r.mape, r.median, r.worst, r.bias,
          step.c_str(), memory, bound_text(r).c_str(), verdict_text(r).c_str(),
          not_run_summary(r).c_str());
    } else {
      std::snprintf(line, sizeof line,
                    "| `%s` | %s | %s | - | - | - | - | - | %s | %s | %s | %s |\n",
                    r.source.c_str(), r.figure.c_str(), run.c_str(), memory, bound_text(r).c_str(),
                    verdict_text(r).c_str(), not_run_summary(r).c_str());
    }
    out << line;
  }
}

}  // namespace

void print_markdown(std::ostream& out, const std::vector<SourceResult>& results) {
  char line[900];
  bool first = true;
  for (Role role : {Role::validation, Role::calibration}) {
    if (!has_role(results, role)) continue;
    if (!first) out << "\n";
    print_markdown_role_table(out, results, role);
    first = false;
  }
  if (any_memory_column(results)) {
    out << "\n| source | peak memory rows | MAPE | worst | bias | bound |\n| --- | ---: | ---: | "
           "---: | "
           "---: | --- |\n";
    for (const SourceResult& r : results) {
      if (r.memory_column.empty()) continue;
      const std::string bound = memory_bound_text(r);
      if (r.memory_rows) {
        std::snprintf(line, sizeof line, "| `%s` | %zu | %.1f%% | %.1f%% | %+.1f%% | %s |\n",
                      r.source.c_str(), r.memory_rows, r.memory_mape, r.memory_worst, r.memory_bias,
                      bound.c_str());
      } else {
        std::snprintf(line, sizeof line, "| `%s` | 0 | - | - | - | %s |\n", r.source.c_str(),
                      bound.c_str());
      }
      out << line;
    }
  }
  const auto profiles = profile_errors(results);
  if (profiles.empty()) return;
  out << "\nOut-of-sample step-time error by profile (validation sources only; what a report's "
         "header quotes):\n\n| profile | published runs | precisions | step-time MAPE | worst | "
         "sources |\n| --- | ---: | --- | ---: | ---: | --- |\n";
  for (const ProfileError& p : profiles) {
    std::snprintf(line, sizeof line, "| `%s` | %zu | %s | %.1f%% | %.1f%% | %s |\n",
                  p.profile.c_str(), p.runs, joined(p.precisions).c_str(), p.mape, p.worst,
                  joined_code(p.sources).c_str());
    out << line;
  }
  out << "\n| profile | stack | published runs | precisions | step-time MAPE | worst | sources |\n"
         "| --- | --- | ---: | --- | ---: | ---: | --- |\n";
  for (const ProfileError& p : profile_stack_errors(results)) {
    std::snprintf(line, sizeof line, "| `%s` | `%s` | %zu | %s | %.1f%% | %.1f%% | %s |\n",
                  p.profile.c_str(), p.stack.c_str(), p.runs, joined(p.precisions).c_str(), p.mape,
                  p.worst, joined_code(p.sources).c_str());
    out << line;
  }
}

}  // namespace cs::validate
