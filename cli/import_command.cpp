#include "cli/import_command.h"

#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "cli/flags.h"
#include "common/error.h"
#include "interop/hf_config.h"
#include "interop/megatron_args.h"
#include "interop/scenario_draft.h"
#include "topology/cluster_spec.h"

namespace cs::cli {
namespace {

constexpr const char* kImportUsage =
    "usage:\n"
    "  clustersim import hf CONFIG.json\n"
    "      the scenario model block for a Hugging Face config.json, and its parameter count\n"
    "  clustersim import megatron [--file launch.sh] [--gpus N] [--cluster PRESET] [--name NAME] [MEGATRON ARGS...]\n"
    "      a scenario from Megatron-LM arguments (given inline, or read from a launch script)\n"
    "  clustersim import deepspeed ds_config.json (--model PRESET | --hf CONFIG.json) [--gpus N] [--seq S]\n"
    "                              [--cluster PRESET] [--name NAME]\n"
    "      a scenario from a DeepSpeed config\n";

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open " + what);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string billions(int64_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fB", static_cast<double>(n) * 1e-9);
  return b;
}

int import_hf(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1) throw UserError("import hf takes one config.json\n" + std::string(kImportUsage));
  const std::string& path = args[0];
  const interop::HfModel hf = interop::load_hf_config(path);
  const model::ModelSpec& m = hf.spec;
  out << "# " << hf.architecture << " from " << path << "\n";
  out << "# parameters: " << interop::with_commas(model::parameter_count(m)) << " (" << billions(model::parameter_count(m)) << ")";
  if (m.moe.enabled()) out << ", active per token: " << interop::with_commas(model::active_parameter_count(m)) << " (" << billions(model::active_parameter_count(m)) << ")";
  out << "\n";
  if (m.mtp_depth > 0) out << "# multi-token prediction modules: " << interop::with_commas(model::mtp_parameter_count(m)) << " more (trained, not in the count above)\n";
  for (const auto& n : hf.notes) out << "# note: " << n << "\n";
  out << "model:\n  hf_config: " << path << "   # relative to the scenario file's folder\n";
  out << "  # the same model by its dimensions (keys marked * are not read by the scenario reader yet):\n";
  for (const auto& [k, v] : interop::model_keys(m)) {
    out << "  # " << k << ": " << v << (interop::scenario_reads("model", k, v) ? "" : "   *") << "\n";
  }
  return 0;
}

// Options shared by megatron and deepspeed; the rest of the arguments are left in `rest`.
interop::ImportOptions common_options(const std::vector<std::string>& args, std::vector<std::string>& rest, std::string& file,
                                      bool deepspeed) {
  interop::ImportOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--file" && !deepspeed) file = value();
    else if (a == "--gpus") o.gpus = int_flag("--gpus", value(), 1);
    else if (a == "--cluster") o.cluster = value();
    else if (a == "--name") o.name = value();
    else if (deepspeed && a == "--model") o.model_preset = value();
    else if (deepspeed && a == "--hf") o.hf_config = value();
    else if (deepspeed && a == "--seq") o.seq_len = int_flag("--seq", value(), 1);
    else rest.push_back(a);
  }
  o.gpus_per_node = topo::find_cluster_preset(o.cluster).node.gpus;
  return o;
}

void print_draft(const interop::ScenarioDraft& d, std::ostream& out, std::ostream& err) {
  for (const auto& w : d.warnings) err << "warning: " << w << "\n";
  out << interop::to_yaml(d);
}

}  // namespace

int import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << kImportUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string kind = args[0];
  const std::vector<std::string> rest_args(args.begin() + 1, args.end());
  if (kind == "hf") return import_hf(rest_args, out);
  std::vector<std::string> rest;
  std::string file;
  if (kind == "megatron") {
    const interop::ImportOptions o = common_options(rest_args, rest, file, false);
    std::vector<std::string> megatron_args;
    if (!file.empty()) megatron_args = interop::launch_script_arguments(read_file(file, "launch script"), file);
    megatron_args.insert(megatron_args.end(), rest.begin(), rest.end());  // inline arguments come last and win
    print_draft(interop::import_megatron(megatron_args, o), out, err);
    return 0;
  }
  if (kind == "deepspeed") {
    const interop::ImportOptions o = common_options(rest_args, rest, file, true);
    if (rest.size() != 1 || rest[0].rfind("--", 0) == 0) {
      throw UserError("import deepspeed takes one ds_config.json and the options --model, --hf, --gpus, --seq, --cluster, --name\n" + std::string(kImportUsage));
    }
    print_draft(interop::import_deepspeed(read_file(rest[0], "DeepSpeed config"), rest[0], o), out, err);
    return 0;
  }
  throw UserError("unknown import format '" + kind + "'; valid formats: hf, megatron, deepspeed");
}

}  // namespace cs::cli
