#include "scenarios/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "cost_models/device_spec.h"
#include "interop/hf_config.h"
#include "scenarios/profile_io.h"

namespace cs::scenario {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The whole string as a finite number, or nullopt.
std::optional<double> to_double(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (used != s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Reads typed values out of a YAML tree, turning every problem into one ScenarioError that
// points at the offending node.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& msg) const {
    std::ostringstream o;
    o << file_;
    if (at.IsDefined() && at.Mark().line >= 0) o << ":" << at.Mark().line + 1 << ":" << at.Mark().column + 1;
    o << ": " << (path.empty() ? "" : path + ": ") << msg;
    throw ScenarioError(o.str());
  }

  void expect_map(const YAML::Node& n, const std::string& path) const {
    if (!n.IsMap()) fail(n, path, "expected a mapping of keys to values");
  }

  void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed) const {
    expect_map(map, path);
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(it->first, path.empty() ? key : path + "." + key, "unknown key; valid keys here: " + join(allowed));
      }
    }
  }

  YAML::Node require(const YAML::Node& map, const std::string& key, const std::string& path) const {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) fail(map, path, "missing required key '" + key + "'");
    return n;
  }

  std::string scalar(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected a single value");
    return n.Scalar();
  }

  int64_t positive_int(const YAML::Node& n, const std::string& path) const {
    const std::string s = scalar(n, path);
    const auto v = parse_integer(s);
    if (!v) fail(n, path, "expected a positive integer, got '" + s + "'");
    if (*v < 1) fail(n, path, "must be a positive integer, got " + s);
    return *v;
  }

  double fraction(const YAML::Node& n, const std::string& path) const {
    const auto v = to_double(scalar(n, path));
    if (!v || *v < 0 || *v >= 1) fail(n, path, "expected a number in [0, 1), got '" + n.Scalar() + "'");
    return *v;
  }

  double number(const YAML::Node& n, const std::string& path) const {
    const auto v = to_double(scalar(n, path));
    if (!v) fail(n, path, "expected a number, got '" + n.Scalar() + "'");
    return *v;
  }

  Bytes bytes(const YAML::Node& n, const std::string& path) const {
    const std::string s = scalar(n, path);
    if (!s.empty() && s[0] == '-') fail(n, path, "size must not be negative, got '" + s + "'");
    try {
      return parse_bytes(s);
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
  }

  BytesPerSecond bandwidth(const YAML::Node& n, const std::string& path) const {
    try {
      return parse_bandwidth(scalar(n, path));
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
  }

  SimTime duration(const YAML::Node& n, const std::string& path) const {
    try {
      return parse_duration(scalar(n, path));
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
  }

  template <class E>
  E choice(const YAML::Node& n, const std::string& path, const std::vector<std::pair<std::string, E>>& options) const {
    const std::string s = scalar(n, path);
    std::vector<std::string> names;
    for (const auto& [name, value] : options) {
      if (name == s) return value;
      names.push_back(name);
    }
    fail(n, path, "unknown value '" + s + "'; valid values: " + join(names));
  }

  // Runs `f` and re-throws a UserError from it as a ScenarioError pointing at `at`.
  template <class F>
  auto at(const YAML::Node& node, const std::string& path, F f) const {
    try {
      return f();
    } catch (const ScenarioError&) {
      throw;
    } catch (const UserError& e) {
      fail(node, path, e.what());
    }
  }

 private:
  std::string file_;
};

model::ModelSpec read_model(const Reader& rd, const YAML::Node& n, const std::string& file_name) {
  rd.check_keys(n, "model", {"preset", "hf_config", "name", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "max_seq", "dropout"});
  model::ModelSpec m;
  if (n["hf_config"]) {
    // A Hugging Face config.json, relative to the scenario file's folder; the keys below override it.
    if (n["preset"]) rd.fail(n, "model", "give either 'preset' or 'hf_config', not both");
    std::string path = rd.scalar(n["hf_config"], "model.hf_config");
    const auto slash = file_name.rfind('/');
    if (!path.empty() && path[0] != '/' && slash != std::string::npos) path = file_name.substr(0, slash + 1) + path;
    m = rd.at(n["hf_config"], "model.hf_config", [&] { return interop::load_hf_config(path).spec; });
  } else if (n["preset"]) {
    m = rd.at(n["preset"], "model.preset", [&] { return model::find_model_preset(rd.scalar(n["preset"], "model.preset")); });
  } else {
    // A user-defined model: the dimensions are required.
    m.name = n["name"] ? rd.scalar(n["name"], "model.name") : "custom";
    m.family = rd.choice<model::Family>(rd.require(n, "family", "model"), "model.family",
                                        {{"gpt", model::Family::gpt}, {"llama", model::Family::llama}, {"mlp", model::Family::mlp}});
    m.layers = static_cast<int>(rd.positive_int(rd.require(n, "layers", "model"), "model.layers"));
    m.hidden = rd.positive_int(rd.require(n, "hidden", "model"), "model.hidden");
    if (m.family != model::Family::mlp) {
      m.heads = static_cast<int>(rd.positive_int(rd.require(n, "heads", "model"), "model.heads"));
      m.kv_heads = m.heads;
      m.ffn_hidden = 4 * m.hidden;
      m.vocab = rd.positive_int(rd.require(n, "vocab", "model"), "model.vocab");
      m.max_seq = rd.positive_int(rd.require(n, "max_seq", "model"), "model.max_seq");
      m.dropout = m.family == model::Family::gpt ? 0.1 : 0.0;
    } else {
      m.ffn_hidden = m.hidden;
      m.max_seq = 1;
    }
  }
  if (n["name"]) m.name = rd.scalar(n["name"], "model.name");
  if (n["layers"]) m.layers = static_cast<int>(rd.positive_int(n["layers"], "model.layers"));
  if (n["hidden"]) m.hidden = rd.positive_int(n["hidden"], "model.hidden");
  if (n["heads"]) m.heads = static_cast<int>(rd.positive_int(n["heads"], "model.heads"));
  if (n["kv_heads"]) m.kv_heads = static_cast<int>(rd.positive_int(n["kv_heads"], "model.kv_heads"));
  else if (n["heads"] && !n["preset"] && !n["hf_config"]) m.kv_heads = m.heads;
  if (n["ffn_hidden"]) m.ffn_hidden = rd.positive_int(n["ffn_hidden"], "model.ffn_hidden");
  if (n["vocab"]) m.vocab = rd.positive_int(n["vocab"], "model.vocab");
  if (n["max_seq"]) m.max_seq = rd.positive_int(n["max_seq"], "model.max_seq");
  if (n["dropout"]) m.dropout = rd.fraction(n["dropout"], "model.dropout");
  rd.at(n, "model", [&] { model::validate(m); return 0; });
  return m;
}

void read_custom_topology(const Reader& rd, const YAML::Node& n, Scenario& s) {
  const YAML::Node devices = rd.require(n, "devices", "cluster");
  if (!devices.IsSequence()) rd.fail(devices, "cluster.devices", "expected a list of {name, kind, node}");
  std::set<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string path = "cluster.devices[" + std::to_string(i) + "]";
    const YAML::Node d = devices[i];
    rd.check_keys(d, path, {"name", "kind", "node"});
    Scenario::DeviceDecl decl;
    decl.name = rd.scalar(rd.require(d, "name", path), path + ".name");
    if (!names.insert(decl.name).second) rd.fail(d["name"], path + ".name", "device '" + decl.name + "' is defined twice");
    decl.kind = rd.choice<topo::DeviceKind>(rd.require(d, "kind", path), path + ".kind",
        {{"gpu", topo::DeviceKind::gpu}, {"nvswitch", topo::DeviceKind::nvswitch}, {"pcie_switch", topo::DeviceKind::pcie_switch},
         {"cpu", topo::DeviceKind::cpu}, {"nic", topo::DeviceKind::nic}, {"network_switch", topo::DeviceKind::network_switch}});
    decl.node = d["node"] ? static_cast<int>(rd.positive_int(d["node"], path + ".node")) - 1 : 0;
    s.devices.push_back(decl);
  }
  const YAML::Node links = rd.require(n, "links", "cluster");
  if (!links.IsSequence()) rd.fail(links, "cluster.links", "expected a list of {from, to, kind, bandwidth, latency}");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string path = "cluster.links[" + std::to_string(i) + "]";
    const YAML::Node l = links[i];
    rd.check_keys(l, path, {"from", "to", "kind", "bandwidth", "reverse_bandwidth", "latency"});
    Scenario::LinkDecl decl;
    for (const char* end : {"from", "to"}) {
      const std::string name = rd.scalar(rd.require(l, end, path), path + "." + end);
      if (!names.count(name)) {
        rd.fail(l[end], path + "." + end, "no device named '" + name + "'; devices are: " +
                join(std::vector<std::string>(names.begin(), names.end())));
      }
      (std::string(end) == "from" ? decl.from : decl.to) = name;
    }
    decl.kind = rd.choice<topo::LinkKind>(rd.require(l, "kind", path), path + ".kind",
        {{"nvlink", topo::LinkKind::nvlink}, {"pcie", topo::LinkKind::pcie}, {"infiniband", topo::LinkKind::infiniband}, {"ethernet", topo::LinkKind::ethernet}});
    decl.bandwidth = rd.bandwidth(rd.require(l, "bandwidth", path), path + ".bandwidth");
    decl.reverse_bandwidth = l["reverse_bandwidth"] ? rd.bandwidth(l["reverse_bandwidth"], path + ".reverse_bandwidth") : decl.bandwidth;
    decl.latency = l["latency"] ? rd.duration(l["latency"], path + ".latency") : SimTime{};
    s.links.push_back(decl);
  }
}

// `cluster.node`: changes to the preset's server.
void read_node(const Reader& rd, const YAML::Node& n, topo::NodeSpec& node) {
  rd.check_keys(n, "cluster.node", {"gpus", "intra", "nvlink_bandwidth", "nvls", "pcie_bandwidth", "gpus_per_pcie_switch",
                                    "sockets", "inter_socket_bandwidth", "nics", "nic_bandwidth", "network"});
  auto count = [&](const char* key) { return static_cast<int>(rd.positive_int(n[key], std::string("cluster.node.") + key)); };
  auto bw = [&](const char* key) { return rd.bandwidth(n[key], std::string("cluster.node.") + key); };
  if (n["gpus"]) node.gpus = count("gpus");
  if (n["intra"]) {
    node.intra = rd.choice<topo::IntraNode>(n["intra"], "cluster.node.intra",
        {{"nvswitch", topo::IntraNode::nvswitch}, {"nvlink_pairs", topo::IntraNode::nvlink_pairs}, {"pcie", topo::IntraNode::pcie}});
  }
  if (n["nvlink_bandwidth"]) node.nvlink = bw("nvlink_bandwidth");
  if (n["nvls"]) node.nvls = rd.choice<bool>(n["nvls"], "cluster.node.nvls", {{"true", true}, {"false", false}});
  if (n["pcie_bandwidth"]) node.pcie = bw("pcie_bandwidth");
  if (n["gpus_per_pcie_switch"]) node.gpus_per_pcie_switch = count("gpus_per_pcie_switch");
  if (n["sockets"]) node.sockets = count("sockets");
  if (n["inter_socket_bandwidth"]) node.inter_socket = bw("inter_socket_bandwidth");
  if (n["nics"]) node.nics = count("nics");
  if (n["nic_bandwidth"]) node.nic = bw("nic_bandwidth");
  if (n["network"]) {
    node.network = rd.choice<topo::LinkKind>(n["network"], "cluster.node.network",
        {{"infiniband", topo::LinkKind::infiniband}, {"ethernet", topo::LinkKind::ethernet}, {"roce", topo::LinkKind::ethernet}});
  }
}

void read_fabric(const Reader& rd, const YAML::Node& n, topo::FabricSpec& f) {
  rd.check_keys(n, "cluster.fabric", {"type", "nodes_per_leaf", "oversubscription"});
  if (n["type"]) {
    f.kind = rd.choice<topo::FabricKind>(n["type"], "cluster.fabric.type",
        {{"single_switch", topo::FabricKind::single_switch}, {"rail_optimized", topo::FabricKind::rail_optimized},
         {"fat_tree", topo::FabricKind::fat_tree}});
  }
  if (n["nodes_per_leaf"]) f.nodes_per_leaf = static_cast<int>(rd.positive_int(n["nodes_per_leaf"], "cluster.fabric.nodes_per_leaf"));
  if (n["oversubscription"]) {
    f.oversubscription = rd.number(n["oversubscription"], "cluster.fabric.oversubscription");
    if (!(f.oversubscription >= 1.0)) rd.fail(n["oversubscription"], "cluster.fabric.oversubscription", "must be at least 1 (leaf downlink : uplink bandwidth)");
  }
}

void read_cluster(const Reader& rd, const YAML::Node& n, Scenario& s) {
  rd.check_keys(n, "cluster", {"preset", "nodes", "gpu", "node", "fabric", "devices", "links"});
  if (n["preset"]) {
    if (n["devices"] || n["links"]) rd.fail(n, "cluster", "give either 'preset' or 'devices' and 'links', not both");
    s.cluster = rd.at(n["preset"], "cluster.preset", [&] { return topo::find_cluster_preset(rd.scalar(n["preset"], "cluster.preset")); });
    s.cluster_name = s.cluster.name;
    s.gpu = s.cluster.gpu;
    s.cluster.nodes = n["nodes"] ? static_cast<int>(rd.positive_int(n["nodes"], "cluster.nodes")) : 1;
    if (n["node"]) read_node(rd, n["node"], s.cluster.node);
    if (n["fabric"]) read_fabric(rd, n["fabric"], s.cluster.fabric);
    rd.at(n, "cluster", [&] { topo::validate(s.cluster); return 0; });
    s.nodes = s.cluster.nodes;
    s.gpus = s.cluster.gpu_count();
  } else {
    if (n["node"] || n["fabric"]) rd.fail(n, "cluster", "'node' and 'fabric' change a preset; a cluster of 'devices' and 'links' describes its wiring itself");
    s.cluster_name = "custom";
    read_custom_topology(rd, n, s);
    try {  // every GPU must reach every other; built here so the error points at the cluster
      const topo::Topology t = build_topology(s);
      for (int r = 1; r < t.gpu_count(); ++r) t.route(0, r);
      s.gpus = t.gpu_count();
      s.nodes = t.node_count();
    } catch (const UserError& e) {
      rd.fail(n, "cluster", e.what());
    }
    if (s.gpus == 0) rd.fail(n["devices"], "cluster.devices", "a cluster needs at least one device of kind 'gpu'");
  }
  if (n["gpu"]) s.gpu = rd.scalar(n["gpu"], "cluster.gpu");
  if (s.gpu.empty()) rd.fail(n, "cluster", "missing required key 'gpu' (the device kind of a custom cluster)");
  rd.at(n["gpu"] ? n["gpu"] : n, "cluster.gpu", [&] { return cost::find_device(s.gpu).name; });
}

// `network:` fidelity level and NCCL_ALGO / NCCL_PROTO-like overrides.
void read_network(const Reader& rd, const YAML::Node& n, Scenario& s) {
  rd.check_keys(n, "network", {"fidelity", "algorithm", "protocol"});
  if (n["fidelity"]) {
    s.fidelity = rd.choice<cost::NetworkFidelity>(n["fidelity"], "network.fidelity",
        {{"analytic", cost::NetworkFidelity::analytic}, {"flow", cost::NetworkFidelity::flow}});
  }
  // auto (nullopt): NCCL's own choice.
  using OptAlgorithm = std::optional<cost::Algorithm>;
  using OptProtocol = std::optional<cost::Protocol>;
  if (n["algorithm"]) {
    s.collectives.algorithm = rd.choice<OptAlgorithm>(n["algorithm"], "network.algorithm",
        {{"auto", std::nullopt}, {"ring", cost::Algorithm::ring}, {"tree", cost::Algorithm::tree}, {"nvls", cost::Algorithm::nvls},
         {"hierarchical", cost::Algorithm::hierarchical}});
  }
  if (n["protocol"]) {
    s.collectives.protocol = rd.choice<OptProtocol>(n["protocol"], "network.protocol",
        {{"auto", std::nullopt}, {"ll", cost::Protocol::ll}, {"ll128", cost::Protocol::ll128}, {"simple", cost::Protocol::simple}});
  }
}

strategy::Layout read_layout(const Reader& rd, const YAML::Node& n) {
  using strategy::DataParallel;
  rd.check_keys(n, "layout", {"tp", "pp", "dp", "cp", "ep", "data_parallel", "bucket_size", "sequence_parallel", "schedule",
                              "virtual_stages", "first_stage_layers", "last_stage_layers", "order"});
  strategy::Layout l;
  if (n["tp"]) l.tp = static_cast<int>(rd.positive_int(n["tp"], "layout.tp"));
  if (n["pp"]) l.pp = static_cast<int>(rd.positive_int(n["pp"], "layout.pp"));
  if (n["dp"]) l.dp = static_cast<int>(rd.positive_int(n["dp"], "layout.dp"));
  if (n["cp"]) l.cp = static_cast<int>(rd.positive_int(n["cp"], "layout.cp"));
  if (n["ep"]) l.ep = static_cast<int>(rd.positive_int(n["ep"], "layout.ep"));
  if (n["first_stage_layers"]) l.first_stage_layers = static_cast<int>(rd.positive_int(n["first_stage_layers"], "layout.first_stage_layers"));
  if (n["last_stage_layers"]) l.last_stage_layers = static_cast<int>(rd.positive_int(n["last_stage_layers"], "layout.last_stage_layers"));
  if (n["data_parallel"]) {
    // zero3 is FSDP FULL_SHARD: both shard parameters, gradients and optimizer state per unit.
    l.data_parallel = rd.choice<DataParallel>(n["data_parallel"], "layout.data_parallel",
        {{"ddp", DataParallel::ddp}, {"ddp_flat", DataParallel::ddp_flat}, {"zero1", DataParallel::zero1},
         {"zero2", DataParallel::zero2}, {"zero3", DataParallel::fsdp_full_shard},
         {"fsdp_shard_grad_op", DataParallel::fsdp_shard_grad_op}, {"fsdp_full_shard", DataParallel::fsdp_full_shard}});
  }
  if (n["bucket_size"]) {
    l.bucket_size = rd.bytes(n["bucket_size"], "layout.bucket_size");
    if (l.bucket_size.count <= 0) rd.fail(n["bucket_size"], "layout.bucket_size", "must be positive");
  }
  if (n["sequence_parallel"]) {
    l.sequence_parallel = rd.choice<bool>(n["sequence_parallel"], "layout.sequence_parallel", {{"true", true}, {"false", false}});
  }
  if (n["schedule"]) {
    l.schedule = rd.choice<strategy::PipelineSchedule>(n["schedule"], "layout.schedule",
        {{"gpipe", strategy::PipelineSchedule::gpipe}, {"1f1b", strategy::PipelineSchedule::one_f_one_b},
         {"interleaved", strategy::PipelineSchedule::interleaved}, {"zb_h1", strategy::PipelineSchedule::zb_h1}});
  }
  if (n["virtual_stages"]) l.virtual_stages = static_cast<int>(rd.positive_int(n["virtual_stages"], "layout.virtual_stages"));
  if (n["order"]) {
    using strategy::Dim;
    // Innermost first; a three-dimension order places cp right after tp (Megatron's tp-cp-ep-dp-pp).
    const std::string text = rd.scalar(n["order"], "layout.order");
    std::vector<Dim> dims;
    for (size_t start = 0; start <= text.size();) {
      const size_t end = std::min(text.find('-', start), text.size());
      const std::string d = text.substr(start, end - start);
      if (d == "tp") dims.push_back(Dim::tp);
      else if (d == "cp") dims.push_back(Dim::cp);
      else if (d == "dp") dims.push_back(Dim::dp);
      else if (d == "pp") dims.push_back(Dim::pp);
      else rd.fail(n["order"], "layout.order", "unknown dimension '" + d + "'; write a permutation of tp, cp, dp, pp innermost first, e.g. tp-cp-dp-pp");
      start = end + 1;
    }
    if (dims.size() == 3 && std::find(dims.begin(), dims.end(), Dim::cp) == dims.end()) {
      dims.insert(std::find(dims.begin(), dims.end(), Dim::tp) + 1, Dim::cp);
    }
    std::vector<Dim> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp}) {
      rd.fail(n["order"], "layout.order", "'" + text + "' is not a permutation of tp, dp, pp (and optionally cp), e.g. tp-cp-dp-pp");
    }
    std::copy(dims.begin(), dims.end(), l.order.begin());
  }
  return l;
}

strategy::TrainingSpec read_training(const Reader& rd, const YAML::Node& n) {
  rd.check_keys(n, "training", {"global_batch", "micro_batch", "seq_len", "precision", "attention", "recompute", "optimizer"});
  strategy::TrainingSpec t;
  t.global_batch = rd.positive_int(rd.require(n, "global_batch", "training"), "training.global_batch");
  t.micro_batch = rd.positive_int(rd.require(n, "micro_batch", "training"), "training.micro_batch");
  t.seq_len = rd.positive_int(rd.require(n, "seq_len", "training"), "training.seq_len");
  if (n["precision"]) {
    t.precision = rd.choice<model::Precision>(n["precision"], "training.precision",
        {{"fp32", model::Precision::fp32}, {"amp_fp16", model::Precision::amp_fp16}, {"amp_bf16", model::Precision::amp_bf16},
         {"mixed_fp16", model::Precision::mixed_fp16}, {"mixed_bf16", model::Precision::mixed_bf16}});
  }
  if (n["attention"]) {
    t.attention = rd.choice<model::AttentionImpl>(n["attention"], "training.attention",
        {{"fused", model::AttentionImpl::fused}, {"eager", model::AttentionImpl::eager}});
  }
  if (n["recompute"]) {
    t.recompute = rd.choice<model::Recompute>(n["recompute"], "training.recompute",
        {{"none", model::Recompute::none}, {"selective", model::Recompute::selective}, {"full", model::Recompute::full}});
  }
  if (n["optimizer"]) rd.choice<int>(n["optimizer"], "training.optimizer", {{"adamw", 0}});
  return t;
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& file_name) {
  Reader rd(file_name);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(file_name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw ScenarioError(file_name + ": expected a mapping with keys name, model, cluster, layout, training");
  rd.check_keys(root, "", {"name", "description", "model", "cluster", "network", "profile", "layout", "training"});
  Scenario s;
  s.file = file_name;
  s.name = root["name"] ? rd.scalar(root["name"], "name") : file_name;
  s.model = read_model(rd, rd.require(root, "model", ""), file_name);
  read_cluster(rd, rd.require(root, "cluster", ""), s);
  if (root["network"]) read_network(rd, root["network"], s);
  if (root["profile"]) {
    // Relative to the scenario file's folder.
    std::string path = rd.scalar(root["profile"], "profile");
    const auto slash = file_name.rfind('/');
    if (!path.empty() && path[0] != '/' && slash != std::string::npos) path = file_name.substr(0, slash + 1) + path;
    s.profile = rd.at(root["profile"], "profile", [&] { return load_profile(path); });
  }
  const YAML::Node layout_node = rd.require(root, "layout", "");
  s.layout = read_layout(rd, layout_node);
  const YAML::Node training_node = rd.require(root, "training", "");
  s.training = read_training(rd, training_node);
  rd.at(layout_node, "layout", [&] { strategy::validate(s.layout, s.training, s.model, s.gpus); return 0; });
  return s;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ": cannot open scenario file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), path);
}

topo::Topology build_topology(const Scenario& s) {
  if (s.cluster_name != "custom") return topo::build_cluster(s.cluster);
  topo::Topology t;
  for (const auto& d : s.devices) t.add_device(d.kind, d.name, d.node);
  for (const auto& l : s.links) t.add_link(t.find(l.from), t.find(l.to), l.kind, l.bandwidth, l.reverse_bandwidth, l.latency);
  return t;
}

}  // namespace cs::scenario
