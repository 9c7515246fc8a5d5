#include "cli/app.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <ostream>

#include "cli/build_info.h"
#include "cli/options.h"
#include "common/error.h"
#include "cost_models/device_spec.h"
#include "models/model_spec.h"
#include "scenarios/named_models.h"
#include "scenarios/profile_io.h"
#include "topology/cluster_spec.h"
#include "workflows/simulate.h"

namespace cs::cli {

std::string version_text() {
  return std::string("clustersim ") + CLUSTERSIM_VERSION + " (commit " + CLUSTERSIM_GIT_COMMIT +
         ", " + CLUSTERSIM_COMPILER + ", " +
         (std::string(CLUSTERSIM_BUILD_TYPE).empty() ? "no build type" : CLUSTERSIM_BUILD_TYPE) +
         ")";
}

// The values --algo and --proto take: the registry's (scenarios/named_models.h), "auto" being
// NCCL's own choice. Case-insensitive, as NCCL_ALGO and NCCL_PROTO are.
std::vector<std::string> algorithm_names() {
  return scenario::model_names(scenario::collective_algorithms());
}

std::vector<std::string> protocol_names() {
  return scenario::model_names(scenario::collective_protocols());
}

namespace {
std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::optional<cost::Algorithm> algorithm_flag(const std::string& text) {
  return scenario::find_named_model(scenario::collective_algorithms(), "--algo", lower_case(text));
}

std::optional<cost::Protocol> protocol_flag(const std::string& text) {
  return scenario::find_named_model(scenario::collective_protocols(), "--proto", lower_case(text));
}

void add_run_options(CLI::App& sub, training_run::RunInputs& run) {
  for (const training_run::InputKey& k : training_run::input_keys()) {
    text_option(
        sub, k.flag,
        [&run, k](const std::string& v) {
          try {
            k.read(run, v);
          } catch (const training_run::InputError& e) {
            throw UserError(std::string(k.flag) + " '" + v + "': " + e.what());
          }
        },
        std::string(k.help) + "; overrides the scenario's run." + k.key, k.type);
  }
}

void add_simulate_command(CLI::App& app, Context& ctx) {
  struct Args : workflows::SimulateRequest {
    std::vector<std::string> files;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "predict one optimizer step: step time, tokens/s, speedup over one GPU, MFU, per-rank "
      "compute / communication / exposed / idle time, peak memory and OOM verdict");
  sub->add_option("SCENARIO", a->files, "the scenario file (YAML)")->type_name("FILE");
  text_option(*sub, "--json", a->json, "write the same report as JSON");
  text_option(*sub, "--trace", a->trace,
              "write the step as a trace (open in ui.perfetto.dev), streamed: Chrome trace-event "
              "JSON, gzip-compressed when FILE ends in .gz, or Perfetto's protobuf format when "
              "FILE ends in .pftrace (a third of the bytes: for large traces); flow arrows "
              "send->recv and through each collective, memory and link-utilisation counters");
  text_option(
      *sub, "--trace-ranks",
      [a](const std::string& v) { a->trace_options.ranks = sim::parse_rank_ranges(v); },
      "only these cluster ranks in the trace, e.g. 0-7,16", "LIST");
  text_option(
      *sub, "--trace-window",
      [a](const std::string& v) { a->trace_options.window = sim::parse_time_window(v); },
      "only events overlapping A..B milliseconds into the step (one step is simulated, so a time "
      "window stands in for a step filter)",
      "A:B");
  text_option(*sub, "--html", a->html, "a self-contained HTML report (charts inline, no network)");
  text_option(*sub, "--emit-megatron", a->emit_megatron,
              "write the scenario's Megatron-LM launch arguments (torchrun ... pretrain_gpt.py); "
              "`import megatron --file FILE` reads them back");
  text_option(*sub, "--chakra", a->chakra,
              "write the step's task graph as Chakra execution traces, one per rank "
              "(DIR/clustersim.<rank>.et, the format ASTRA-sim "
              "reads) and DIR/comm_group.json; simulates every rank",
              "DIR");
  // The rank modes a person picks (automatic is the default, chosen by the GPU count).
  const std::vector<std::pair<std::string, driver::RankMode>> modes{
      {"all", driver::RankMode::all}, {"representative", driver::RankMode::representative}};
  text_option(
      *sub, "--ranks",
      [a, modes](const std::string& v) { a->options.ranks = parse_named("--ranks", v, modes); },
      "all: simulate every GPU; representative: one rank per pipeline stage (replicas are "
      "identical; default above 64 GPUs)",
      choice_type(names_of(modes)));
  sub->add_flag_callback(
      "--no-baseline", [a] { a->options.with_baseline = false; },
      "skip the single-GPU twin (speedup); skipped anyway above 16 GPUs");
  text_option(
      *sub, "--fidelity",
      [a](const std::string& v) {
        a->fidelity = scenario::find_named_model(scenario::network_models(), "--fidelity", v);
      },
      "network model: analytic (each collective alone, closed form; default) or flow (collectives "
      "and transfers share links max-min fairly)",
      choice_type(scenario::model_names(scenario::network_models())));
  text_option(
      *sub, "--algo", [a](const std::string& v) { a->algo = algorithm_flag(v); },
      "force NCCL's algorithm where it applies; overrides the scenario's network:",
      choice_type(algorithm_names()));
  text_option(
      *sub, "--proto", [a](const std::string& v) { a->proto = protocol_flag(v); },
      "force NCCL's protocol; overrides the scenario's network:", choice_type(protocol_names()));
  text_option(*sub, "--profile", a->profile,
              "a calibrated profile (clustersim calibrate) instead of datasheet figures");
  sub->add_flag("--no-profile", a->no_profile,
                "datasheet figures even where the GPU has a shipped profile; by default a scenario "
                "without a profile uses profiles/<gpu>.yaml "
                "when it exists (folder: $CLUSTERSIM_PROFILES, else the source tree's profiles/)");
  set_option(*sub, a->overrides,
             "a dotted scenario key and its YAML value overriding the file's (repeatable), e.g. "
             "--set layout.tp=4 --set training.micro_batch=2");
  sub->add_flag("--stragglers", a->stragglers,
                "also simulate one slow GPU (0.8x compute), one slow node (0.8x) and one degraded "
                "NIC (0.5x bandwidth), each alone, and print their step time against the healthy "
                "one (any other case: the scenario's degraded: list)");
  text_option(*sub, "--stragglers-json", a->stragglers_json,
              "write the straggler analysis as JSON (implies --stragglers)");
  add_run_options(*sub, a->run);
  sub->footer(
      "When the layout does not fit, memory-saving alternatives are simulated and listed. The "
      "report ends with the whole training run: days, GPU-hours, dollars, MWh and goodput under "
      "failures, from the step time and the run's inputs (defaults stated with their sources).");
  sub->callback([a, sub, &ctx] {
    if (a->run.tokens && a->run.steps) throw UserError("give --tokens or --steps, not both");
    a->scenario_file = one_file(a->files, "simulate");
    if (a->scenario_file.empty()) throw UserError("simulate needs a scenario file\n" + sub->help());
    a->generator = version_text();
    workflows::simulate(*a, ctx.out);
  });
}

void add_list_command(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "list",
      "list the model, cluster and device presets and the named cost models (with their sources)");
  sub->callback([&ctx] {
    char line[256];
    ctx.out << "models:\n";
    for (const auto& m : model::model_presets()) {
      std::snprintf(line, sizeof line,
                    "  %-12s %3d layers, hidden %6lld, heads %3d (kv %3d), %8.2fB parameters\n",
                    m.name.c_str(), m.layers, static_cast<long long>(m.hidden), m.heads, m.kv_heads,
                    static_cast<double>(model::parameter_count(m)) * 1e-9);
      ctx.out << line;
    }
    ctx.out << "clusters:\n";
    for (const auto& c : topo::cluster_presets()) {
      std::snprintf(line, sizeof line, "  %-14s %s\n", c.name.c_str(), c.description.c_str());
      ctx.out << line;
    }
    ctx.out << "devices:\n";
    for (const auto& d : cost::device_specs()) {
      std::snprintf(line, sizeof line, "  %-14s %s\n", d.name.c_str(), d.description.c_str());
      ctx.out << line;
    }
    ctx.out << "measured profiles (a scenario's `profile: NAME`), in " << scenario::profiles_dir()
            << ":\n";
    for (const auto& name : scenario::profile_names()) ctx.out << "  " << name << "\n";
    ctx.out << scenario::describe_named_models();
  });
}

namespace {

// The names of the subcommands a person may type (execute-rank, for the executor, is hidden).
std::vector<std::string> visible_commands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s :
       app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
    names.push_back(s->get_name());
  return names;
}

// A refusal quotes what it refuses, and one quoting a whole oversized value (a 3 MB model name in
// a config) printed megabytes (124 MB in issue 34). Past 4,096 bytes the middle is left out: the
// start names the file, the place and the key, the end the bound and the reason.
std::string bounded_message(const std::string& m) {
  constexpr size_t kMax = 4096, kTail = 1024;
  if (m.size() <= kMax) return m;
  const auto boundary = [&m](size_t i) {  // back to the start of a UTF-8 character
    while (i > 0 && (static_cast<unsigned char>(m[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const size_t head = boundary(kMax - kTail), tail = boundary(m.size() - kTail);
  return m.substr(0, head) + " [... " + std::to_string(tail - head) + " bytes left out ...] " +
         m.substr(tail);
}

}  // namespace

int run_cli(const std::vector<std::string>& given, std::ostream& out, std::ostream& err) {
  Context ctx{out, err};
  CLI::App app(
      "clustersim: predicts step time, speedup, exposed communication and memory of a parallel "
      "training layout by "
      "discrete-event simulation of its task graph",
      "clustersim");
  app.get_formatter()->column_width(34);
  app.set_version_flag("--version", version_text(), "print the version and build, then exit");
  app.require_subcommand(0, 1);
  app.footer("clustersim COMMAND --help prints a command's options.");
  try {
    add_simulate_command(app, ctx);
    add_plan_command(app, ctx);
    add_sweep_command(app, ctx);
    add_bench_collective_command(app, ctx);
    add_execute_commands(app, ctx);
    add_validate_command(app, ctx);
    add_calibrate_command(app, ctx);
    add_import_command(app, ctx);
    add_compare_command(app, ctx);
    add_list_command(app, ctx);
    std::vector<std::string> args = given;
    if (args.empty()) {
      out << app.help();
      return 2;
    }
    // `clustersim help` and `clustersim help CMD` as --help.
    if (args[0] == "help") {
      args.erase(args.begin());
      args.push_back("--help");
    }
    const auto commands = visible_commands(app);
    if (!args[0].empty() && args[0][0] != '-' && args[0] != "execute-rank" &&
        std::find(commands.begin(), commands.end(), args[0]) == commands.end()) {
      throw UserError("unknown command '" + args[0] + "'; valid commands: " + join(commands));
    }
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    try {
      app.parse(args);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e, out, err);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e, out, err);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e, out, err);
    } catch (const CLI::ParseError& e) {
      // Unknown option, missing value, ...: CLI11's message, and where the options are listed.
      const CLI::App* sub = nullptr;
      for (const CLI::App* s : app.get_subcommands()) sub = s;
      err << "error: " << bounded_message(e.what()) << "\n"
          << "run 'clustersim " << (sub ? sub->get_name() + " " : std::string())
          << "--help' for the options\n";
      return 1;
    }
    if (app.get_subcommands().empty()) {
      out << app.help();
      return 2;
    }
    return ctx.status;
  } catch (const UserError& e) {
    err << "error: " << bounded_message(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "internal error: " << bounded_message(e.what()) << "\n";
    return 3;
  }
}

}  // namespace cs::cli
