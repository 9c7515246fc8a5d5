// `clustersim plan` and `clustersim sweep`: their options (workflows/planning.h runs them), and
// `plan --emit DIR`, which writes the printed layouts (workflows::emit_layouts).
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "driver/simulation.h"
#include "planner/preset_scenario.h"
#include "scenarios/named_models.h"
#include "workflows/planning.h"

namespace cs::cli {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// --profile F / --no-profile, as simulate has them: by default the GPU's shipped profile, so that
// plan, sweep and simulate price a layout alike.
void add_profile_flags(CLI::App& sub, std::string& profile, bool& no_profile) {
  text_option(sub, "--profile", profile, "a calibrated profile instead of the GPU's shipped one",
              "FILE");
  sub.add_flag("--no-profile", no_profile,
               "datasheet figures even where the GPU has a shipped profile (profiles/<gpu>.yaml)");
}

struct PlanArgs : workflows::PlanRequest {
  std::vector<std::string> files;
  std::string emit_dir;
};

struct SweepArgs : workflows::SweepRequest {
  std::vector<std::string> files;
};

}  // namespace

void add_plan_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* sub =
      app.add_subcommand("plan",
                         "rank every layout that fits: clustersim plan --model M --cluster C "
                         "--gpus N --global-batch B --seq S, "
                         "or clustersim plan SCENARIO.yaml (the scenario's layout is ignored)");
  sub->footer(
      "Enumerates every layout the stack runs (TP, CP, PP, DP, EP for MoE models, its ZeRO/FSDP "
      "flavours, micro-batch, its schedules and interleave, stage split, recompute, "
      "bucket size), prunes by a memory bound, simulates the rest (fast level, then the detailed "
      "level for the best) and ranks those that leave the headroom free. Layouts within the "
      "profile's measured error of the fastest tie and are ordered by robustness; layouts that "
      "differ only in bucket size within it share a row.");
  sub->add_option("SCENARIO", a->files,
                  "a scenario file instead of --model/--cluster/--gpus/--global-batch/--seq")
      ->type_name("FILE");
  text_option(*sub, "--model", a->model, "model preset (clustersim list)", "NAME");
  text_option(*sub, "--cluster", a->cluster, "cluster preset (clustersim list)", "NAME");
  auto count = [](const char* flag, auto& target) {
    return [flag, &target](const std::string& v) {
      target = static_cast<std::remove_reference_t<decltype(target)>>(int_flag(flag, v, 1));
    };
  };
  text_option(*sub, "--gpus", count("--gpus", a->gpus), "GPUs in the cluster", "N");
  text_option(*sub, "--global-batch", count("--global-batch", a->global_batch),
              "sequences per optimizer step", "B");
  text_option(*sub, "--seq", count("--seq", a->seq), "sequence length (tokens)", "S");
  const auto precisions = every_value<model::Precision>();
  text_option(
      *sub, "--precision",
      [a, precisions](const std::string& v) {
        a->precision = parse_choice("--precision", v, precisions);
      },
      "training precision (default mixed_bf16)", choice_type(names_of(precisions)));
  const auto attentions = every_value<model::AttentionImpl>(2);
  text_option(
      *sub, "--attention",
      [a, attentions](const std::string& v) {
        a->attention = parse_choice("--attention", v, attentions);
      },
      "attention kernels (default fused)", choice_type(names_of(attentions)));
  text_option(
      *sub, "--objective",
      [a](const std::string& v) {
        a->options.objective = parse_named("--objective", v, workflows::objective_names());
      },
      "what ranks first (default throughput)", choice_type(names_of(workflows::objective_names())));
  text_option(*sub, "--top", count("--top", a->top), "rows to print (default 10)", "K");
  text_option(*sub, "--detailed", count("--detailed", a->options.detailed),
              "candidates simulated at the detailed level (default 4)", "N");
  text_option(
      *sub, "--micro-batches",
      [a](const std::string& v) {
        a->space.micro_batches.clear();
        for (const auto& m : split(v))
          a->space.micro_batches.push_back(int_flag("--micro-batches", m, 1));
      },
      "micro-batch sizes to try (default 1,2,4,8,16)", "LIST");
  text_option(
      *sub, "--buckets",
      [a](const std::string& v) {
        a->space.bucket_sizes.clear();
        for (const auto& b : split(v)) a->space.bucket_sizes.push_back(size_flag("--buckets", b));
      },
      "DDP / ZeRO bucket sizes to try (default 25MiB,100MiB)", "LIST");
  const auto recomputes = every_value<model::Recompute>();
  text_option(
      *sub, "--recompute",
      [a, recomputes](const std::string& v) {
        a->space.recompute.clear();
        for (const auto& r : split(v))
          a->space.recompute.push_back(parse_choice("--recompute", r, recomputes));
        if (a->space.recompute.empty()) throw UserError("--recompute needs at least one value");
      },
      "activation recompute to try (default: the stack's; megatron_core and deepspeed "
      "none,selective,full; torch_compile and pytorch_eager none,op_selective,full)",
      "LIST of " + choice_type(names_of(recomputes)));
  text_option(*sub, "--max-tp", count("--max-tp", a->space.max_tp),
              "largest tensor-parallel size (default: one node's GPUs)", "N");
  text_option(*sub, "--max-cp", count("--max-cp", a->space.max_cp),
              "largest context-parallel size, powers of two (default 16; 1: none)", "N");
  text_option(*sub, "--max-ep", count("--max-ep", a->space.max_ep),
              "largest expert-parallel size for MoE models (default: no bound)", "N");
  text_option(*sub, "--max-vstages", count("--max-vstages", a->space.max_virtual_stages),
              "interleaved schedule with up to N chunks per stage (default: megatron_core every N "
              "dividing the layers per stage, as Megatron-LM allows; other stacks 4; 1: none)",
              "N");
  sub->add_flag_callback(
      "--no-zero-bubble", [a] { a->space.zero_bubble = false; },
      "leave ZB-H1 out (where the stack runs it)");
  text_option(
      *sub, "--memory-headroom",
      [a](const std::string& v) {
        planner::MemoryHeadroom h;
        if (!v.empty() && v.back() == '%') {
          h.share = number_flag("--memory-headroom", v.substr(0, v.size() - 1), 0,
                                "a share of the GPU's memory", true) /
                    100;
          if (h.share >= 1) {
            throw UserError("--memory-headroom '" + v +
                            "' is out of range: below 100% (a share of the GPU's memory, and a "
                            "layout needs some of it)");
          }
        } else {
          h.bytes = size_flag("--memory-headroom", v).count;
        }
        a->options.headroom = h;
      },
      "memory a layout must leave free beyond its simulated peak, e.g. 5% or 4GiB (default 5%, "
      "about 4 GiB of an 80 GB GPU: a margin for the memory model's own error, about 6% on "
      "measured H100 runs, beside the peak's reserve category that already counts the context, "
      "NCCL and cuBLAS buffers and the typical fragmentation; a judgement, not a measurement)",
      "SIZE|PCT");
  sub->add_flag(
      "--grad-reduce-in-bf16", a->grad_reduce_in_bf16,
      "Megatron-Core: keep and reduce gradients in bf16 (its --grad-reduce-in-bf16, which "
      "every Megatron-Bridge performance recipe sets) instead of fp32 main_grad buffers");
  sub->add_flag("--timing", a->timing,
                "put the search's wall-clock seconds in --json (without it, two runs write the "
                "same bytes)");
  sub->add_flag_callback(
      "--even-splits", [a] { a->space.uneven_variants = false; },
      "leave out the lighter first/last stages");
  text_option(*sub, "--simulate", count("--simulate", a->options.simulate),
              "layouts simulated at the fast level, the best by a closed-form price first; more "
              "while fewer than --detailed fit (default 16)",
              "N");
  text_option(*sub, "--threads", count("--threads", a->options.threads),
              "worker threads (default: every core)", "N");
  text_option(*sub, "--json", a->json_path,
              "every simulated layout as JSON (docs/schemas/plan.schema.json)");
  text_option(*sub, "--csv", a->csv_path, "every simulated layout as CSV");
  text_option(*sub, "--html", a->html_path,
              "a self-contained HTML page: the Pareto frontier (step time against memory per GPU) "
              "and the ranked table");
  text_option(
      *sub, "--emit", a->emit_dir,
      "write each printed layout (--top) to DIR: rankN.yaml (a scenario `clustersim simulate` "
      "runs), rankN.megatron.sh "
      "(Megatron-LM arguments) and rankN.torchrun.py (a torchrun/FSDP configuration sketch)",
      "DIR");
  sub->add_flag("--explain", a->want_explain, "where the winner's time goes against the runner-up");
  sub->add_flag("--stragglers", a->stragglers,
                "re-simulate the top rows (at most 5) with one GPU slowed to 0.8x, one node to "
                "0.8x and one NIC to 0.5x bandwidth, each alone, and order them by their worst "
                "slowdown: which layout suffers least from degraded hardware");
  text_option(
      *sub, "--stack",
      [a](const std::string& v) {
        a->stack = scenario::find_named_model(scenario::software_stacks(), "--stack", v);
      },
      "the framework to plan for (default: the scenario's, else megatron_core): only the "
      "schedules and data-parallel flavours it runs are searched, with its fusion, host cost per "
      "kernel, AdamW and overlap defaults; ideal is a bound searching everything modelled",
      choice_type(scenario::model_names(scenario::software_stacks())));
  add_profile_flags(*sub, a->profile, a->no_profile);
  add_run_options(*sub, a->run);  // the winner's training run, as simulate reports it
  sub->footer(
      sub->get_footer() +
      "\nExit status 1 when no layout fits, with the smallest peak found and what dominates it.");
  sub->callback([a, &ctx] {
    a->scenario_file = one_file(a->files, "plan");
    const workflows::PlanRun run = workflows::plan(*a, ctx.out);
    if (run.status == 0 && !a->emit_dir.empty())
      workflows::emit_layouts(a->emit_dir, run.base, run.result, a->top, ctx.out);
    ctx.status = run.status;
  });
}

void add_sweep_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand(
      "sweep",
      "the scenario at each value of a comma-separated list: speedup over the first point, scaling "
      "efficiency (GPU and node sweeps), the step time split and peak memory");
  sub->add_option("SCENARIO", a->files, "the scenario file (YAML)")->type_name("FILE");
  auto axis = [a](planner::SweepAxis ax, const char* flag) {
    return [a, ax, flag](const std::string& v) {
      if (a->axis && *a->axis != ax) {
        throw UserError("sweep over one thing at a time (" +
                        std::string(planner::to_string(*a->axis)) + " and " +
                        std::string(flag + 2) + " given)");
      }
      a->axis = ax;
      a->values = split(v);
      if (a->values.empty()) throw UserError(std::string(flag) + " needs at least one value");
    };
  };
  add_profile_flags(*sub, a->profile, a->no_profile);
  text_option(*sub, "--gpus", axis(planner::SweepAxis::gpus, "--gpus"),
              "GPUs of the scenario's cluster kind, e.g. 1,2,4,8; TP, CP, PP, EP and the global "
              "batch stay, DP scales",
              "LIST");
  text_option(*sub, "--nodes", axis(planner::SweepAxis::nodes, "--nodes"),
              "the same in whole nodes, e.g. 1,2,4", "LIST");
  text_option(*sub, "--batch", axis(planner::SweepAxis::global_batch, "--batch"),
              "global batch (sequences), e.g. 16,32,64", "LIST");
  text_option(*sub, "--seq", axis(planner::SweepAxis::seq_len, "--seq"),
              "sequence length, e.g. 1024,2048", "LIST");
  text_option(*sub, "--bandwidth", axis(planner::SweepAxis::nic_bandwidth, "--bandwidth"),
              "NIC bandwidth per direction, e.g. 100Gbps,400Gbps", "LIST");
  text_option(*sub, "--csv", a->csv_path, "the table as CSV");
  text_option(*sub, "--plot", a->plot_path, "speedup and step-time split as an SVG chart",
              "FILE.svg");
  text_option(
      *sub, "--html", a->html_path,
      "a self-contained HTML page: scaling curves (log axes over GPUs or nodes) and the table");
  text_option(*sub, "--json", a->json_path, "the table as JSON (docs/schemas/sweep.schema.json)");
  text_option(
      *sub, "--threads",
      [a](const std::string& v) {
        a->threads = static_cast<unsigned>(int_flag("--threads", v, 1));
      },
      "worker threads (default: every core)", "N");
  sub->callback([a, &ctx] {
    a->scenario_file = one_file(a->files, "sweep");
    ctx.status = workflows::sweep(*a, ctx.out);
  });
}

}  // namespace cs::cli
