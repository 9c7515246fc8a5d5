
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "common/text_file.h"
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
    "  clustersim import megatron [--file launch.sh] [--gpus N] [--cluster PRESET] [--name NAME] "
    "[MEGATRON ARGS...]\n"
    "      a scenario from Megatron-LM arguments (given inline, or read from a launch script)\n"
    "  clustersim import deepspeed ds_config.json (--model PRESET | --hf CONFIG.json) [--gpus N] "
    "[--seq S]\n"
    "                              [--cluster PRESET] [--name NAME]\n"
    "      a scenario from a DeepSpeed config\n";

// Bounded (common/text_file.h): /dev/zero was read until std::bad_alloc.
std::string read_file(const std::string& path, const std::string& what) {
  return read_text_file(path, what);
}

std::string billions(int64_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fB", static_cast<double>(n) * 1e-9);
  return b;
}

int import_hf(const std::string& path, std::ostream& out) {
  const interop::HfModel hf = interop::load_hf_config(path);
  const model::ModelSpec& m = hf.spec;
  out << "# " << hf.architecture << " from " << path << "\n";
  out << "# parameters: " << interop::with_commas(model::parameter_count(m)) << " ("
      << billions(model::parameter_count(m)) << ")";
  if (m.moe.enabled())
    out << ", active per token: " << interop::with_commas(model::active_parameter_count(m)) << " ("
        << billions(model::active_parameter_count(m)) << ")";
  out << "\n";
  if (m.mtp_depth > 0)
    out << "# multi-token prediction modules: "
        << interop::with_commas(model::mtp_parameter_count(m))
        << " more (trained, not in the count above)\n";
  for (const auto& n : hf.notes) out << "# note: " << n << "\n";
  out << "model:\n  hf_config: " << path << "   # relative to the scenario file's folder\n";
  out << "  # or the same model by its dimensions, in place of hf_config:\n";
  for (const auto& [k, v] : interop::model_keys(m)) out << "  # " << k << ": " << v << "\n";
  return 0;
}

// Options shared by megatron and deepspeed.
void add_common_options(CLI::App& sub, interop::ImportOptions& o) {
  text_option(
      sub, "--gpus", [&o](const std::string& v) { o.gpus = int_flag("--gpus", v, 1); },
      "GPUs of the scenario", "N");
  text_option(sub, "--cluster", o.cluster, "cluster preset (clustersim list)", "PRESET");
  text_option(sub, "--name", o.name, "the scenario's name", "NAME");
}

void print_draft(const interop::ScenarioDraft& d, std::ostream& out, std::ostream& err) {
  for (const auto& w : d.warnings) err << "warning: " << w << "\n";
  out << interop::to_yaml(d);
}

}  // namespace

void add_import_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("import",
                                     "a scenario (or model block) from a Hugging Face config, "
                                     "Megatron-LM arguments or a DeepSpeed config");
  sub->require_subcommand(1);
  sub->footer(kImportUsage);

  auto hf = std::make_shared<std::vector<std::string>>();
  CLI::App* h = sub->add_subcommand(
      "hf", "the scenario model block for a Hugging Face config.json, and its parameter count");
  h->add_option("CONFIG", *hf, "config.json")->type_name("FILE");
  h->callback([hf, &ctx] {
    if (hf->size() != 1)
      throw UserError("import hf takes one config.json\n" + std::string(kImportUsage));
    ctx.status = import_hf((*hf)[0], ctx.out);
  });

  // Megatron's own flags are many and change between versions: every argument not listed here is
  // handed to the Megatron reader in order (it warns about the ones it does not know).
  struct Megatron {
    interop::ImportOptions o;
    std::string file;
  };
  auto mg = std::make_shared<Megatron>();
  CLI::App* m = sub->add_subcommand(
      "megatron",
      "a scenario from Megatron-LM arguments (given inline, or read from a launch script)");
  m->allow_extras();
  text_option(*m, "--file", mg->file, "a launch script whose Megatron arguments are read",
              "launch.sh");
  add_common_options(*m, mg->o);
  m->footer(
      "Every other argument is a Megatron-LM argument, e.g. --num-layers 24 "
      "--tensor-model-parallel-size 2.");
  m->callback([mg, m, &ctx] {
    interop::ImportOptions o = mg->o;
    o.gpus_per_node = topo::find_cluster_preset(o.cluster).node.gpus;
    std::vector<std::string> megatron_args;
    if (!mg->file.empty())
      megatron_args =
          interop::launch_script_arguments(read_file(mg->file, "launch script"), mg->file);
    o.script = mg->file;  // a refusal of one of its values names it
    o.script_words = megatron_args.size();
    const std::vector<std::string> rest = m->remaining();
    megatron_args.insert(megatron_args.end(), rest.begin(),
                         rest.end());  // inline arguments come last and win
    print_draft(interop::import_megatron(megatron_args, o), ctx.out, ctx.err);
  });

  struct DeepSpeed {
    interop::ImportOptions o;
    std::vector<std::string> files;
  };
  auto ds = std::make_shared<DeepSpeed>();
  CLI::App* d = sub->add_subcommand("deepspeed", "a scenario from a DeepSpeed config");
  d->add_option("CONFIG", ds->files, "ds_config.json")->type_name("FILE");
  text_option(*d, "--model", ds->o.model_preset, "model preset (clustersim list)", "PRESET");
  text_option(*d, "--hf", ds->o.hf_config, "the model from a Hugging Face config.json",
              "CONFIG.json");
  text_option(
      *d, "--seq", [ds](const std::string& v) { ds->o.seq_len = int_flag("--seq", v, 1); },
      "sequence length", "S");
  add_common_options(*d, ds->o);
  d->callback([ds, &ctx] {
    if (ds->files.size() != 1) {
      throw UserError(
          "import deepspeed takes one ds_config.json and the options --model, --hf, --gpus, --seq, "
          "--cluster, --name\n" +
          std::string(kImportUsage));
    }
    interop::ImportOptions o = ds->o;
    o.gpus_per_node = topo::find_cluster_preset(o.cluster).node.gpus;
    print_draft(
        interop::import_deepspeed(read_file(ds->files[0], "DeepSpeed config"), ds->files[0], o),
        ctx.out, ctx.err);
  });
}

}  // namespace cs::cli
