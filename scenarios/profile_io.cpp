#include "scenarios/profile_io.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "common/error.h"
#include "common/limits.h"
#include "common/output_file.h"
#include "common/text_file.h"
#include "models/software_stack.h"

namespace cs::scenario {
namespace {

// Physical bounds of a profile's figures, with their units (`.inf` or a typo such as 989e15 for
// 989e12 would otherwise print "MFU 1276.8%"; a zero bus bandwidth or efficiency divides by zero
// into negative busy times). A peak of 0 means the GPU lacks that precision (A100: FP8); the
// fp32/bf16 peaks, memory bandwidth and GEMM/memory efficiencies are checked positive below.
struct ProfileBound {
  double min, max;
  const char* unit;
  const char* why = nullptr;  // the reason, where common/limits.h gives one
};

ProfileBound profile_bound(const std::string& key) {
  constexpr double kBandwidth = limits::kBandwidth.lo;
  constexpr double kShare = 1e-3;  // below 0.1% of a peak is not a measured efficiency
  static const std::pair<const char*, ProfileBound> kBounds[] = {
      {"peak_flops", {0, 1e17, "FLOP/s (100 PFLOP/s)"}},
      {"peak_flops_bf16", {0, 1e17, "FLOP/s (100 PFLOP/s)"}},
      {"peak_flops_tf32", {0, 1e17, "FLOP/s (100 PFLOP/s)"}},
      {"peak_flops_fp16", {0, 1e17, "FLOP/s (100 PFLOP/s)"}},
      {"peak_flops_fp8", {0, 1e17, "FLOP/s (100 PFLOP/s)"}},
      {"memory_bandwidth", {0, 1e14, "B/s (100 TB/s)"}},
      {"memory_capacity", {0, 1125899906842624.0, "bytes (1 PiB)"}},
      {"gemm_max_efficiency", {0, 1, "(a share of the peak)"}},
      {"memory_efficiency", {0, 1, "(a share of the bandwidth)"}},
      {"attention_efficiency", {kShare, 1, "(a share of the peak)"}},
      {"gemm_half_flops", {0, 1e15, "FLOPs"}},
      {"launch_gap_s", {0, 1, "s"}},
      {"compute_slowdown", {0, 100, "(a slowdown factor)"}},
      {"comm_slowdown", {0, 100, "(a slowdown factor)"}},
      {"latency_s", {0, 1, "s"}},
      {"bus_bandwidth", {kBandwidth, 1e14, "B/s (100 TB/s)", limits::kBandwidth.why}},
      {"runs", {0, 1e6, "runs"}},
      {"misaligned_gemm", {kShare, 1, "(a share of the aligned rate)"}},
      {"memory_bandwidth_ratio", {0, 2, "(a multiple of the base part's)"}},
      {"tensor_clock_ratio", {0, 1.5, "(a multiple of the base part's)"}},
  };
  for (const auto& [k, b] : kBounds) {
    if (key == k) return b;
  }
  return {0, 1e300, ""};
}

double number(const YAML::Node& n, const std::string& file, const std::string& key) {
  const YAML::Node v = n[key];
  if (!v.IsDefined() || !v.IsScalar()) {
    throw UserError(file + ":" + std::to_string(n.Mark().line + 1) + ": missing number '" + key +
                    "'");
  }
  double d = -1;
  try {
    d = v.as<double>();
  } catch (const std::exception&) {
    d = -1;
  }
  const std::string at = file + ":" + std::to_string(v.Mark().line + 1) + ":" +
                         std::to_string(v.Mark().column + 1) + ": " + key;
  if (!(d >= 0)) throw UserError(at + ": expected a non-negative number, got '" + v.Scalar() + "'");
  if (!std::isfinite(d))
    throw UserError(at + ": expected a finite number, got '" + v.Scalar() + "'");
  const ProfileBound b = profile_bound(key);
  if (d > b.max || d < b.min) {
    // The unit's parenthesis spells out the upper bound ("B/s (100 TB/s)"): not for a lower one.
    const std::string unit = b.unit;
    const std::string bare = unit.substr(0, unit.find(" ("));
    char text[200];
    std::snprintf(text, sizeof text, ": %g is out of range: at %s %g %s", d,
                  d > b.max ? "most" : "least", d > b.max ? b.max : b.min,
                  (d > b.max ? unit : bare).c_str());
    throw UserError(at + text + (b.why ? std::string(" (") + b.why + ")" : ""));
  }
  return d;
}

std::string where(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
}

// A list of rows of `width` positive numbers, e.g. `memory_curve: [[1048576, 0.9], ...]`.
std::vector<std::vector<double>> rows(const YAML::Node& parent, const std::string& file,
                                      const std::string& key, size_t width,
                                      const std::string& shape) {
  std::vector<std::vector<double>> out;
  const YAML::Node list = parent[key];
  if (!list) return out;
  if (!list.IsSequence())
    throw UserError(where(file, list) + ": " + key + ": expected a list of " + shape);
  for (const YAML::Node& row : list) {
    if (!row.IsSequence() || row.size() != width)
      throw UserError(where(file, row) + ": " + key + ": expected " + shape);
    std::vector<double> values;
    for (const YAML::Node& v : row) {
      double d = 0;
      try {
        d = v.as<double>();
      } catch (const YAML::Exception&) {
        d = -1;
      }
      if (!(d > 0) || !std::isfinite(d))
        throw UserError(where(file, v) + ": " + key + ": expected a finite positive number, got '" +
                        v.Scalar() + "'");
      values.push_back(d);
    }
    out.push_back(std::move(values));
  }
  return out;
}

cost::EfficiencyCurve curve(const YAML::Node& parent, const std::string& file,
                            const std::string& key) {
  std::vector<std::pair<double, double>> points;
  for (const auto& r : rows(parent, file, key, 2, "[size, efficiency]"))
    points.emplace_back(r[0], r[1]);
  return cost::EfficiencyCurve(std::move(points));
}

ir::DType dtype_key(const YAML::Node& key, const std::string& file) {
  const std::string k = key.Scalar();
  for (ir::DType d :
       {ir::DType::fp32, ir::DType::tf32, ir::DType::bf16, ir::DType::fp16, ir::DType::fp8}) {
    if (k == ir::to_string(d)) return d;
  }
  throw UserError(where(file, key) + ": unknown dtype '" + k +
                  "'; valid: fp32, tf32, bf16, fp16, fp8");
}

cost::GemmEfficiencyGrid gemm_grid(const YAML::Node& parent, const std::string& file,
                                   const std::string& key) {
  std::vector<cost::GemmPoint> gemm;
  for (const auto& r : rows(parent, file, key, 4, "[m, n, k, efficiency]")) {
    for (int i = 0; i < 3; ++i) {
      if (r[static_cast<size_t>(i)] > 1e9)
        throw UserError(where(file, parent[key]) + ": " + key + ": a GEMM dimension above 1e9");
    }
    gemm.push_back(
        {static_cast<int64_t>(r[0]), static_cast<int64_t>(r[1]), static_cast<int64_t>(r[2]), r[3]});
  }
  try {
    return cost::GemmEfficiencyGrid(std::move(gemm));
  } catch (const UserError& e) {
    throw UserError(where(file, parent[key]) + ": " + e.what());
  }
}

// `key: {bf16: [[size, eff], ...], tf32: ...}`: a curve per dtype.
std::map<ir::DType, cost::EfficiencyCurve> curves_by_dtype(const YAML::Node& parent,
                                                           const std::string& file,
                                                           const std::string& key) {
  std::map<ir::DType, cost::EfficiencyCurve> out;
  const YAML::Node m = parent[key];
  if (!m) return out;
  if (!m.IsMap())
    throw UserError(where(file, m) + ": " + key +
                    ": expected a mapping of dtype to [[size, efficiency], ...]");
  for (const auto& kv : m) {
    cost::EfficiencyCurve c = curve(m, file, kv.first.Scalar());
    // An empty curve would leave a dtype with no efficiency at all (the fallback reads its last
    // point).
    if (c.empty())
      throw UserError(where(file, kv.first) + ": " + key + ": " + kv.first.Scalar() +
                      ": expected at least one [size, efficiency] point");
    out[dtype_key(kv.first, file)] = std::move(c);
  }
  return out;
}

// One head dimension's forward or backward curve of `attention_by_head_dim`: at least one
// [FLOPs, efficiency] row, FLOPs finite and positive, efficiency in (0, 1.2] (a share of the
// dtype's peak; a little above 1 tolerates a datasheet peak below the clocks a GPU runs at).
cost::EfficiencyCurve attention_curve_at(const YAML::Node& parent, const std::string& file,
                                         const std::string& at, const std::string& key) {
  const YAML::Node list = parent[key];
  if (!list)
    throw UserError(where(file, parent) + ": " + at + ": missing '" + key +
                    "': expected [[FLOPs, efficiency], ...]");
  if (!list.IsSequence() || list.size() == 0) {
    throw UserError(where(file, list) + ": " + at + ": " + key +
                    ": expected a list of at least one [FLOPs, efficiency]");
  }
  std::vector<std::pair<double, double>> points;
  for (const YAML::Node& row : list) {
    if (!row.IsSequence() || row.size() != 2)
      throw UserError(where(file, row) + ": " + at + ": " + key + ": expected [FLOPs, efficiency]");
    double v[2] = {-1, -1};
    for (size_t i = 0; i < 2; ++i) {
      try {
        v[i] = row[i].as<double>();
      } catch (const YAML::Exception&) {
        v[i] = -1;
      }
    }
    if (!(v[0] > 0) || !std::isfinite(v[0])) {
      throw UserError(where(file, row[0]) + ": " + at + ": " + key +
                      ": FLOPs: expected a finite positive number, got '" + row[0].Scalar() + "'");
    }
    if (!(v[1] > 0) || !(v[1] <= 1.2)) {
      throw UserError(where(file, row[1]) + ": " + at + ": " + key +
                      ": efficiency: expected a share of the peak in (0, 1.2], got '" +
                      row[1].Scalar() + "'");
    }
    points.emplace_back(v[0], v[1]);
  }
  return cost::EfficiencyCurve(std::move(points));
}

// `attention_by_head_dim: {bf16: {128: {forward: [[FLOPs, eff], ...], backward: [...]}, 64: ...},
// fp16: ...}`; `flash2_attention_by_head_dim` (FlashAttention-2's, read for ops of
// training.attention_backend: flash2) is read the same way, under its own key.
std::map<ir::DType, cost::AttentionByHeadDim> attention_by_head_dim(
    const YAML::Node& parent, const std::string& file,
    const std::string& key = "attention_by_head_dim") {
  std::map<ir::DType, cost::AttentionByHeadDim> out;
  const YAML::Node m = parent[key];
  if (!m) return out;
  if (!m.IsMap())
    throw UserError(where(file, m) + ": " + key +
                    ": expected a mapping of dtype to {head_dim: {forward: [[FLOPs, efficiency], "
                    "...], backward: [...]}}");
  for (const auto& dt : m) {
    const ir::DType d = dtype_key(dt.first, file);
    const std::string at_dtype = key + ": " + dt.first.Scalar();
    if (out.count(d)) throw UserError(where(file, dt.first) + ": " + at_dtype + ": given twice");
    if (!dt.second.IsMap() || dt.second.size() == 0) {
      throw UserError(
          where(file, dt.second) + ": " + at_dtype +
          ": expected a mapping of head dimension to {forward: [...], backward: [...]}");
    }
    cost::AttentionByHeadDim table;
    for (const auto& hd : dt.second) {
      long long h = 0;
      try {
        h = hd.first.as<long long>();
      } catch (const YAML::Exception&) {
        h = 0;
      }
      if (h < 1 || h > 1024) {
        throw UserError(where(file, hd.first) + ": " + at_dtype +
                        ": head dimension: expected an integer in 1..1024, got '" +
                        hd.first.Scalar() + "'");
      }
      const std::string at = at_dtype + ": " + std::to_string(h);
      if (table.count(h)) throw UserError(where(file, hd.first) + ": " + at + ": given twice");
      if (!hd.second.IsMap())
        throw UserError(where(file, hd.second) + ": " + at +
                        ": expected {forward: [[FLOPs, efficiency], ...], backward: [...]}");
      for (const auto& kv : hd.second) {
        const std::string k = kv.first.Scalar();
        if (k != "forward" && k != "backward")
          throw UserError(where(file, kv.first) + ": " + at + ": unknown key '" + k +
                          "'; valid: forward, backward");
      }
      table[h] = {attention_curve_at(hd.second, file, at, "forward"),
                  attention_curve_at(hd.second, file, at, "backward")};
    }
    out[d] = std::move(table);
  }
  return out;
}

void emit_curve(YAML::Emitter& e, const std::string& key, const cost::EfficiencyCurve& c,
                const std::string& comment);

void emit_attention_by_head_dim(YAML::Emitter& e,
                                const std::map<ir::DType, cost::AttentionByHeadDim>& t,
                                const std::string& key = "attention_by_head_dim",
                                const std::string& what = "framework attention") {
  if (t.empty()) return;
  e << YAML::Key << key
    << YAML::Comment(what +
                     " per dtype and head dimension: forward and backward [FLOPs of the op, "
                     "efficiency of that dtype's peak]")
    << YAML::Value << YAML::BeginMap;
  for (const auto& [d, table] : t) {
    e << YAML::Key << std::string(ir::to_string(d)) << YAML::Value << YAML::BeginMap;
    for (const auto& [h, c] : table) {
      e << YAML::Key << h << YAML::Value << YAML::BeginMap;
      emit_curve(e, "forward", c.forward, "");
      emit_curve(e, "backward", c.backward, "");
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

void emit_grid(YAML::Emitter& e, const std::string& key, const cost::GemmEfficiencyGrid& g,
               const std::string& comment) {
  if (g.empty()) return;
  e << YAML::Key << key;
  if (!comment.empty()) e << YAML::Comment(comment);
  e << YAML::Value << YAML::BeginSeq;
  for (const cost::GemmPoint& x : g.points())
    e << YAML::Flow << YAML::BeginSeq << x.m << x.n << x.k << x.efficiency << YAML::EndSeq;
  e << YAML::EndSeq;
}

void emit_curves(YAML::Emitter& e, const std::string& key,
                 const std::map<ir::DType, cost::EfficiencyCurve>& curves,
                 const std::string& comment) {
  if (curves.empty()) return;
  e << YAML::Key << key << YAML::Comment(comment) << YAML::Value << YAML::BeginMap;
  for (const auto& [d, c] : curves) emit_curve(e, std::string(ir::to_string(d)), c, "");
  e << YAML::EndMap;
}

void emit_curve(YAML::Emitter& e, const std::string& key, const cost::EfficiencyCurve& c,
                const std::string& comment) {
  if (c.empty()) return;
  e << YAML::Key << key;
  if (!comment.empty()) e << YAML::Comment(comment);
  e << YAML::Value << YAML::BeginSeq;
  for (const auto& [size, eff] : c.points())
    e << YAML::Flow << YAML::BeginSeq << size << eff << YAML::EndSeq;
  e << YAML::EndSeq;
}

// A text key's value. A mapping or a sequence there made as<std::string>() throw yaml-cpp's "bad
// conversion" (found by fuzz/profile_fuzzer: `name:` followed by an indented key).
std::string text_value(const YAML::Node& root, const char* key, const std::string& otherwise,
                       const std::string& path) {
  const YAML::Node n = root[key];
  if (!n) return otherwise;
  if (!n.IsScalar()) throw UserError(where(path, n) + ": " + key + ": expected a text value");
  return n.as<std::string>();
}

// `validation.stacks`: the error per software stack.
void read_validation_stacks(const YAML::Node& st, const std::string& path,
                            cost::ProfileValidation& pv) {
  if (!st.IsMap())
    throw UserError(where(path, st) +
                    ": validation.stacks: expected a mapping of stack name to {runs, "
                    "mape_percent, worst_percent, suites}");
  for (const auto& kv : st) {
    const std::string name = kv.first.Scalar();  // "" for a mapping used as a key: unknown
    bool known = false;
    for (const auto& [n, s] : model::stack_names()) known = known || n == name;
    if (!known)
      throw UserError(where(path, kv.first) + ": validation.stacks: unknown stack '" + name + "'");
    const YAML::Node x = kv.second;
    if (!x.IsMap())
      throw UserError(where(path, x) + ": validation.stacks." + name +
                      ": expected a mapping (runs, mape_percent, worst_percent, suites)");
    cost::ProfileValidation::Stack e;
    e.runs = static_cast<int>(number(x, path, "runs"));
    e.mape_percent = x["mape_percent"] ? number(x, path, "mape_percent") : 0.0;
    e.worst_percent = x["worst_percent"] ? number(x, path, "worst_percent") : 0.0;
    e.suites = text_value(x, "suites", "", path);
    e.precisions = text_value(x, "precisions", "", path);
    pv.stacks[name] = e;
  }
}

// `sources` and `validation`: what a profile says of where its figures come from and how well
// it predicts published runs.
void read_sources_and_validation(const YAML::Node& root, const std::string& path,
                                 cost::Profile& p) {
  if (const YAML::Node src = root["sources"]) {
    if (!src.IsSequence())
      throw UserError(where(path, src) + ": sources: expected a list of strings");
    for (const YAML::Node& x : src) {
      if (!x.IsScalar()) throw UserError(where(path, x) + ": sources: expected a string");
      p.sources.push_back(x.Scalar());
    }
  }
  if (const YAML::Node v = root["validation"]) {
    if (!v.IsMap())
      throw UserError(
          where(path, v) +
          ": validation: expected a mapping (runs, mape_percent, worst_percent, suites, date)");
    cost::ProfileValidation pv;
    pv.runs = static_cast<int>(number(v, path, "runs"));
    pv.mape_percent = v["mape_percent"] ? number(v, path, "mape_percent") : 0.0;
    pv.worst_percent = v["worst_percent"] ? number(v, path, "worst_percent") : 0.0;
    pv.suites = text_value(v, "suites", "", path);
    pv.precisions = text_value(v, "precisions", "", path);
    pv.date = text_value(v, "date", "", path);
    if (const YAML::Node st = v["stacks"]) read_validation_stacks(st, path, pv);
    p.validation = pv;
  }
}

// `tensor_clock_ratio` (with the text `tensor_clock_fitted_on`): the share of the profile's
// GEMM and attention rates that the part sustains in training, where no measurement gives it (a
// power-capped variant's clock; a public-figures profile's burst rate held over a long run). It
// scales both rates and is what `validate --fit` refits (validate/refit.cpp).
void read_tensor_clock(const YAML::Node& section, const std::string& path, cost::Profile& p) {
  if (!section["tensor_clock_ratio"]) return;
  const double clock = number(section, path, "tensor_clock_ratio");
  if (!(clock > 0))
    throw UserError(where(path, section["tensor_clock_ratio"]) +
                    ": tensor_clock_ratio: expected a positive number");
  p.compute.rate_scale.gemm *= clock;
  p.compute.rate_scale.attention *= clock;
  p.tensor_clock_ratio = clock;
  p.tensor_clock_fitted_on = text_value(section, "tensor_clock_fitted_on", "", path);
}

cost::Profile load_variant(const std::string& path, const YAML::Node& root);

// `device`'s peaks, bandwidth and capacity. One peak (fp32) gives every dtype's;
// peak_flops_bf16 gives bf16 and, unless named, fp8; each dtype named on its own line (as
// `calibrate --backend cuda` writes them) is that dtype's. fp16 runs at the bf16 rate unless
// peak_flops_fp16 is given; a zero means "no such dtype".
void read_device(const YAML::Node& d, const std::string& path, cost::Profile& p) {
  p.device.fp32 = p.device.tf32 = p.device.bf16 = p.device.fp8 = {number(d, path, "peak_flops")};
  if (d["peak_flops_bf16"]) p.device.bf16 = p.device.fp8 = {number(d, path, "peak_flops_bf16")};
  if (d["peak_flops_tf32"]) p.device.tf32 = {number(d, path, "peak_flops_tf32")};
  if (d["peak_flops_fp16"]) p.device.fp16 = {number(d, path, "peak_flops_fp16")};
  if (d["peak_flops_fp8"]) p.device.fp8 = {number(d, path, "peak_flops_fp8")};
  p.device.hbm_bandwidth = {number(d, path, "memory_bandwidth")};
  p.device.memory_capacity = {
      static_cast<int64_t>(d["memory_capacity"] ? number(d, path, "memory_capacity") : 0)};
}

// `compute.rate_scale`: calibrate --kineto's per-class corrections, a multiple of the rate the
// rest of the profile gives.
void read_rate_scale(const YAML::Node& r, const std::string& path, cost::Profile& p) {
  if (!r.IsMap())
    throw UserError(where(path, r) +
                    ": rate_scale: expected a mapping with gemm, attention, memory_bound");
  for (const auto& kv : r) {
    const std::string k = kv.first.Scalar();
    double* field = k == "gemm"           ? &p.compute.rate_scale.gemm
                    : k == "attention"    ? &p.compute.rate_scale.attention
                    : k == "memory_bound" ? &p.compute.rate_scale.memory_bound
                                          : nullptr;
    if (!field)
      throw UserError(where(path, kv.first) + ": rate_scale: unknown key '" + k +
                      "'; valid: gemm, attention, memory_bound");
    *field = number(r, path, k);
    if (*field < cost::kMinRateScale || *field > cost::kMaxRateScale) {
      char text[200];
      std::snprintf(text, sizeof text,
                    ": rate_scale.%s: %g is out of range: %g to %g (a multiple of the profile's "
                    "rate)",
                    k.c_str(), *field, cost::kMinRateScale, cost::kMaxRateScale);
      throw UserError(where(path, kv.second) + text);
    }
  }
}

// `executor_kernels`: the rates of the executor's own kernels (attention, norm, softmax).
void read_executor_kernels(const YAML::Node& x, const std::string& path, cost::Profile& p) {
  if (!x.IsMap())
    throw UserError(
        where(path, x) +
        ": executor_kernels: expected a mapping (attention_curves, norm_curve, softmax_curve)");
  cost::ExecutorKernels k;
  k.attention = curves_by_dtype(x, path, "attention_curves");
  k.norm = curve(x, path, "norm_curve");
  k.softmax = curve(x, path, "softmax_curve");
  p.executor = k;
}

// `variant_allowed` is false for a variant's base: a chain (or a loop) of variants is refused.
cost::Profile read_profile(const std::string& path, bool variant_allowed) {
  YAML::Node root;
  try {
    root = YAML::Load(read_text_file(
        path, "profile",
        kMaxYamlFileBytes));  // a directory: a UserError, not basic_filebuf::underflow
  } catch (const YAML::Exception& e) {
    throw UserError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap())
    throw UserError(path +
                    ": expected a mapping (name, measured_on, date, device, compute, collectives)");
  if (root["variant_of"]) {
    if (!variant_allowed)
      throw UserError(where(path, root["variant_of"]) +
                      ": this profile is the base of a variant and is itself a variant; a "
                      "variant_of must name a measured profile");
    return load_variant(path, root);
  }
  cost::Profile p;
  auto text = [&](const char* key, const std::string& otherwise) {
    return text_value(root, key, otherwise, path);
  };
  p.name = text("name", path);
  p.measured_on = text("measured_on", "");
  p.date = text("date", "");
  const YAML::Node d = root["device"], c = root["compute"];
  if (!d || !c) throw UserError(path + ": a profile needs 'device' and 'compute' sections");
  // A scalar there made every d[key] throw YAML::BadSubscript (found by fuzz/profile_fuzzer).
  if (!d.IsMap() || !c.IsMap())
    throw UserError(path + ": 'device' and 'compute' must be mappings of keys to numbers");
  for (const char* section : {"interference", "collectives"}) {
    if (root[section] && !root[section].IsMap())
      throw UserError(path + ": '" + section + "' must be a mapping of keys to numbers");
  }
  p.device.name = p.name;
  p.device.description = p.measured_on;
  // A profile named after a device preset (as the shipped ones are) is that GPU's architecture.
  p.device.arch = cost::arch_of_device(p.name);
  read_device(d, path, p);
  p.compute.gemm_max = number(c, path, "gemm_max_efficiency");
  p.compute.gemm_half_flops = number(c, path, "gemm_half_flops");
  p.compute.memory = number(c, path, "memory_efficiency");
  p.compute.attention =
      c["attention_efficiency"] ? number(c, path, "attention_efficiency") : p.compute.gemm_max;
  p.compute.launch_gap = SimTime::from_seconds(number(c, path, "launch_gap_s"));
  p.compute.gemm_table = gemm_grid(c, path, "gemm_table");
  if (const YAML::Node t = c["gemm_tables"]) {
    if (!t.IsMap())
      throw UserError(where(path, t) +
                      ": gemm_tables: expected a mapping of dtype to [[m, n, k, efficiency], ...]");
    for (const auto& kv : t)
      p.compute.gemm_tables[dtype_key(kv.first, path)] = gemm_grid(t, path, kv.first.Scalar());
  }
  if (c["misaligned_gemm"]) {
    p.compute.misaligned_gemm = number(c, path, "misaligned_gemm");
    if (!(p.compute.misaligned_gemm > 0))
      throw UserError(where(path, c["misaligned_gemm"]) +
                      ": misaligned_gemm: expected a share of the aligned rate in (0, 1]");
  }
  if (const YAML::Node r = c["rate_scale"]) read_rate_scale(r, path, p);
  read_tensor_clock(c, path, p);
  p.compute.attention_curve = curve(c, path, "attention_curve");
  p.compute.attention_curves = curves_by_dtype(c, path, "attention_curves");
  p.compute.attention_by_head_dim = attention_by_head_dim(c, path);
  p.compute.flash2_attention_by_head_dim =
      attention_by_head_dim(c, path, "flash2_attention_by_head_dim");
  p.compute.memory_curve = curve(c, path, "memory_curve");
  p.compute.optimizer_curve = curve(c, path, "optimizer_curve");
  p.compute.norm_curve = curve(c, path, "norm_curve");
  p.compute.softmax_curve = curve(c, path, "softmax_curve");
  if (const YAML::Node x = root["executor_kernels"]) read_executor_kernels(x, path, p);
  if (const YAML::Node i = root["interference"]) {
    p.interference.compute_slowdown = number(i, path, "compute_slowdown");
    p.interference.comm_slowdown = number(i, path, "comm_slowdown");
  }
  if (const YAML::Node k = root["collectives"]) {
    p.collectives = cost::MeasuredCollectives{SimTime::from_seconds(number(k, path, "latency_s")),
                                              {number(k, path, "bus_bandwidth")}};
  }
  if (p.device.fp32.value <= 0 || p.device.bf16.value <= 0 || p.device.hbm_bandwidth.value <= 0 ||
      p.compute.gemm_max <= 0 || p.compute.memory <= 0) {
    throw UserError(path +
                    ": peak_flops, peak_flops_bf16, memory_bandwidth, gemm_max_efficiency and "
                    "memory_efficiency must be positive");
  }
  read_sources_and_validation(root, path, p);
  p.file = path;
  return p;
}

// A variant of a measured part: the same die with other memory or another power limit (e.g. the
// H100 96 GB HBM2e at 500 W beside the measured H100 80 GB HBM3 at 700 W). It keeps every curve
// of the base profile (shares of the peak, which stays the datasheet's for MFU) and scales what
// the variant changes: the memory bandwidth, the capacity, and the tensor-core clock the part
// sustains (GEMM and attention rates).
cost::Profile load_variant(const std::string& path, const YAML::Node& root) {
  const YAML::Node base = root["variant_of"];
  if (!base.IsScalar() || base.Scalar().empty() ||
      base.Scalar().find_first_of("/\\") != std::string::npos)
    throw UserError(where(path, base) +
                    ": variant_of: expected the name of a profile in the same folder (e.g. "
                    "h100_sxm)");
  for (const char* section :
       {"device", "compute", "collectives", "interference", "executor_kernels"}) {
    if (root[section])
      throw UserError(where(path, root[section]) + ": a profile with variant_of takes '" + section +
                      "' from " + base.Scalar() +
                      "; say what differs under 'variant' (memory_bandwidth_ratio, "
                      "memory_capacity, tensor_clock_ratio)");
  }
  const std::string base_path =
      (std::filesystem::path(path).parent_path() / (base.Scalar() + ".yaml")).string();
  cost::Profile p = read_profile(base_path, false);
  const std::string base_name = p.name;
  const YAML::Node v = root["variant"];
  if (!v || !v.IsMap())
    throw UserError(path +
                    ": variant_of needs a 'variant' mapping (memory_bandwidth_ratio, "
                    "memory_capacity, tensor_clock_ratio)");
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    if (k == "tensor_clock_fitted_on") continue;  // text, read below
    if (k != "memory_bandwidth_ratio" && k != "memory_capacity" && k != "tensor_clock_ratio")
      throw UserError(where(path, kv.first) + ": variant: unknown key '" + k +
                      "'; valid: memory_bandwidth_ratio, memory_capacity, tensor_clock_ratio, "
                      "tensor_clock_fitted_on");
    if (!(number(v, path, k) > 0))
      throw UserError(where(path, kv.second) + ": variant." + k + ": expected a positive number");
  }
  if (v["memory_bandwidth_ratio"])
    p.device.hbm_bandwidth.value *= number(v, path, "memory_bandwidth_ratio");
  if (v["memory_capacity"])
    p.device.memory_capacity = {static_cast<int64_t>(number(v, path, "memory_capacity"))};
  read_tensor_clock(v, path, p);
  auto text = [&](const char* key, const std::string& otherwise) {
    return text_value(root, key, otherwise, path);
  };
  p.name = p.device.name = text("name", path);
  // "variant of h100_sxm (cuda: ..., 2026-11-22)": the base's measurement, with its date; the
  // variant's own date is when it was derived.
  std::string base_what = p.measured_on;
  if (!p.date.empty()) base_what += (base_what.empty() ? "" : ", ") + p.date;
  p.measured_on = p.device.description =
      "variant of " + base_name + (base_what.empty() ? "" : " (" + base_what + ")");
  p.date = text("date", "");
  p.sources.clear();
  p.validation.reset();
  read_sources_and_validation(root, path, p);
  p.file = path;
  return p;
}

}  // namespace

cost::Profile load_profile(const std::string& path) { return read_profile(path, true); }

void save_profile(const std::string& path, const cost::Profile& p) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << p.name;
  e << YAML::Key << "measured_on" << YAML::Value << p.measured_on;
  e << YAML::Key << "date" << YAML::Value << p.date;
  e << YAML::Key << "device" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "peak_flops" << YAML::Value << p.device.fp32.value
    << YAML::Comment("FLOP/s, fp32");
  // Each other dtype's peak on its own line where it differs from fp32's (the reader gives a
  // dtype not named here fp32's, and fp16 bf16's).
  const std::pair<const char*, double> dtype_peaks[] = {{"peak_flops_tf32", p.device.tf32.value},
                                                        {"peak_flops_bf16", p.device.bf16.value},
                                                        {"peak_flops_fp16", p.device.fp16.value},
                                                        {"peak_flops_fp8", p.device.fp8.value}};
  for (const auto& [key, value] : dtype_peaks) {
    if (value > 0 && value != p.device.fp32.value)
      e << YAML::Key << key << YAML::Value << value << YAML::Comment("FLOP/s");
  }
  e << YAML::Key << "memory_bandwidth" << YAML::Value << p.device.hbm_bandwidth.value
    << YAML::Comment("bytes/s, streaming");
  e << YAML::Key << "memory_capacity" << YAML::Value << p.device.memory_capacity.count
    << YAML::Comment("bytes (0: unknown)");
  e << YAML::EndMap;
  e << YAML::Key << "compute" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "gemm_max_efficiency" << YAML::Value << p.compute.gemm_max;
  e << YAML::Key << "gemm_half_flops" << YAML::Value << p.compute.gemm_half_flops
    << YAML::Comment("FLOPs at half of the max efficiency");
  e << YAML::Key << "memory_efficiency" << YAML::Value << p.compute.memory;
  e << YAML::Key << "attention_efficiency" << YAML::Value << p.compute.attention;
  e << YAML::Key << "launch_gap_s" << YAML::Value << p.compute.launch_gap.seconds()
    << YAML::Comment("per task");
  if (p.compute.misaligned_gemm != 1.0) {
    e << YAML::Key << "misaligned_gemm" << YAML::Value << p.compute.misaligned_gemm
      << YAML::Comment("share of the aligned rate when m, n or k breaks 16-byte alignment");
  }
  if (!p.compute.rate_scale.identity()) {
    e << YAML::Key << "rate_scale"
      << YAML::Comment(
             "per kernel class, a multiple of the rate the rest of this profile gives (calibrate "
             "--kineto)")
      << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "gemm" << YAML::Value << p.compute.rate_scale.gemm;
    e << YAML::Key << "attention" << YAML::Value << p.compute.rate_scale.attention;
    e << YAML::Key << "memory_bound" << YAML::Value << p.compute.rate_scale.memory_bound;
    e << YAML::EndMap;
  }
  emit_grid(e, "gemm_table", p.compute.gemm_table, "[m, n, k, efficiency of the dtype's peak]");
  if (!p.compute.gemm_tables.empty()) {
    e << YAML::Key << "gemm_tables"
      << YAML::Comment("per dtype, where measured: [m, n, k, efficiency of that dtype's peak]")
      << YAML::Value << YAML::BeginMap;
    for (const auto& [d, g] : p.compute.gemm_tables)
      emit_grid(e, std::string(ir::to_string(d)), g, "");
    e << YAML::EndMap;
  }
  emit_curve(e, "attention_curve", p.compute.attention_curve,
             "[FLOPs, efficiency of the dtype's peak]");
  emit_curves(e, "attention_curves", p.compute.attention_curves,
              "per dtype: [FLOPs, efficiency of that dtype's peak]");
  emit_attention_by_head_dim(e, p.compute.attention_by_head_dim);
  emit_attention_by_head_dim(e, p.compute.flash2_attention_by_head_dim,
                             "flash2_attention_by_head_dim",
                             "FlashAttention-2 (training.attention_backend: flash2)");
  emit_curve(e, "memory_curve", p.compute.memory_curve, "[bytes, efficiency of memory_bandwidth]");
  emit_curve(e, "optimizer_curve", p.compute.optimizer_curve,
             "[bytes, efficiency of memory_bandwidth]");
  emit_curve(e, "norm_curve", p.compute.norm_curve, "[bytes, efficiency of memory_bandwidth]");
  emit_curve(e, "softmax_curve", p.compute.softmax_curve,
             "[bytes, efficiency of memory_bandwidth]");
  e << YAML::EndMap;
  if (p.executor) {
    e << YAML::Key << "executor_kernels"
      << YAML::Comment(
             "clustersim's executor's own kernels: price only its runs (validate --measured)")
      << YAML::Value << YAML::BeginMap;
    emit_curves(e, "attention_curves", p.executor->attention,
                "unfused: batched cuBLASLt products around a row softmax");
    emit_curve(e, "norm_curve", p.executor->norm, "[bytes, efficiency of memory_bandwidth]");
    emit_curve(e, "softmax_curve", p.executor->softmax, "[bytes, efficiency of memory_bandwidth]");
    e << YAML::EndMap;
  }
  if (p.collectives) {
    e << YAML::Key << "collectives" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "latency_s" << YAML::Value << p.collectives->latency.seconds();
    e << YAML::Key << "bus_bandwidth" << YAML::Value << p.collectives->bus_bandwidth.value
      << YAML::Comment("bytes/s");
    e << YAML::EndMap;
  }
  if (p.interference.any()) {
    e << YAML::Key << "interference" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "compute_slowdown" << YAML::Value << p.interference.compute_slowdown
      << YAML::Comment("compute runs at 1/(1+x) while its rank communicates");
    e << YAML::Key << "comm_slowdown" << YAML::Value << p.interference.comm_slowdown
      << YAML::Comment("a collective runs at 1/(1+x) while one of its ranks computes");
    e << YAML::EndMap;
  }
  if (!p.sources.empty()) {
    e << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq;
    for (const std::string& x : p.sources) e << x;
    e << YAML::EndSeq;
  }
  if (p.validation) {
    e << YAML::Key << "validation"
      << YAML::Comment(
             "out-of-sample step time: the validation sources of `clustersim validate --suite`")
      << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "runs" << YAML::Value << p.validation->runs;
    e << YAML::Key << "mape_percent" << YAML::Value << p.validation->mape_percent;
    e << YAML::Key << "worst_percent" << YAML::Value << p.validation->worst_percent;
    e << YAML::Key << "suites" << YAML::Value << p.validation->suites;
    e << YAML::Key << "precisions" << YAML::Value << p.validation->precisions;
    e << YAML::Key << "date" << YAML::Value << p.validation->date;
    if (!p.validation->stacks.empty()) {
      e << YAML::Key << "stacks" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, x] : p.validation->stacks) {
        e << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
        e << YAML::Key << "runs" << YAML::Value << x.runs << YAML::Key << "mape_percent"
          << YAML::Value << x.mape_percent;
        e << YAML::Key << "worst_percent" << YAML::Value << x.worst_percent << YAML::Key << "suites"
          << YAML::Value << x.suites << YAML::Key << "precisions" << YAML::Value << x.precisions;
        e << YAML::EndMap;
      }
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  write_output_file(path, [&](std::ostream& f) {
    f << "# clustersim profile, written by `clustersim calibrate`\n" << e.c_str() << "\n";
  });
}

std::string profiles_dir() {
  const char* env = std::getenv("CLUSTERSIM_PROFILES");
  if (env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed =
        exe.parent_path().parent_path() / "share" / "clustersim" / "profiles";
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/profiles";
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(profiles_dir(), ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

bool is_profile_name(const std::string& value) {
  return !value.empty() && value.find('/') == std::string::npos &&
         !(value.size() > 5 && value.compare(value.size() - 5, 5, ".yaml") == 0);
}

}  // namespace

std::string profile_file(const std::string& value, const std::string& scenario_file) {
  if (is_profile_name(value)) {
    const std::string file = profiles_dir() + "/" + value + ".yaml";
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) return file;
    std::string list;
    for (const auto& n : profile_names()) list += (list.empty() ? "" : ", ") + n;
    throw UserError("no profile named '" + value + "' in " + profiles_dir() +
                    " (valid: " + (list.empty() ? std::string("none") : list) +
                    "); a file is named by its path, e.g. profiles/" + value + ".yaml");
  }
  const auto slash = scenario_file.rfind('/');
  if (!value.empty() && value[0] != '/' && slash != std::string::npos)
    return scenario_file.substr(0, slash + 1) + value;
  return value;
}

std::string profile_reference(const std::string& file) {
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(file, ec);
  const std::filesystem::path shipped = std::filesystem::path(profiles_dir()) / path.filename();
  if (path.extension() == ".yaml" && std::filesystem::equivalent(path, shipped, ec))
    return path.stem().string();
  return path.string();
}
}  // namespace cs::scenario
