// `clustersim validate` and `clustersim calibrate`: their shared options, help and the checks of
// which modes go together (workflows/validation.h runs them).
#include <memory>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "scenarios/named_models.h"
#include "workflows/validation.h"

namespace cs::cli {
namespace {

struct Args : workflows::ValidationRequest {
  std::vector<std::string> files;
  std::string collective;  // --collective, checked once every option is read
};

constexpr const char* kValidateHelp =
    "usage: clustersim validate --suite validate/suites [--no-profile] [--rows] [--markdown] "
    "[--json FILE] [--html FILE]\n"
    "       clustersim validate --table FILE [--seed N] [--csv FILE] [--json FILE]\n"
    "       clustersim validate --recipes validate/recipes [--threads N] [--max-failures N] "
    "[--markdown] [--json FILE]\n"
    "  With --recipes (a folder of recipe files, or one): each published training recipe\n"
    "  planned with `plan`'s default search for its model, cluster, GPUs, sequence, batch,\n"
    "  precision and stack; its layout must rank in the top 5, or a faster layout must rank\n"
    "  above it (the reason from the two simulated breakdowns, with both memories). Failures:\n"
    "  a recipe that does not fit by our count, one outside the search space, one faster than\n"
    "  the plan's winner yet unranked. Rows that cannot be posed are listed with the missing\n"
    "  feature. Exit status 1 beyond --max-failures (default 0). --markdown: a table per\n"
    "  source and one row per recipe (docs/recipes.md, scripts/recipe-table.sh).\n"
    "       clustersim validate --measured RUN.json SCENARIO.yaml [--profile P.yaml] [--trace "
    "FILE]\n"
    "       clustersim validate --loop SCENARIO.yaml [--runs N] [--steps S] [--max-error PCT]\n"
    "       clustersim validate --kineto TRACE.json [SCENARIO.yaml] [--profile P.yaml | "
    "--no-profile] [--json FILE]\n"
    "  With --kineto: a PyTorch profiler Chrome trace of your run against the scenario's simulated "
    "step:\n"
    "  step time, kernel time by class (gemm, attention, nccl, memory_bound by kernel name), NCCL "
    "time\n"
    "  by collective and exposed communication (NCCL time under no compute kernel), per step.\n"
    "  Without SCENARIO.yaml: the trace alone, each device's measured step broken down the same "
    "way.\n"
    "       clustersim validate --nccl-tests LOG... [--collective C] [--cluster PRESET] [--profile "
    "P.yaml] [--max-error PCT] [--json FILE]\n"
    "  With --nccl-tests: each nccl-tests output log (all_reduce_perf, all_gather_perf, "
    "reduce_scatter_perf,\n"
    "  broadcast_perf, alltoall_perf) against our prediction of the same collective over the same "
    "GPUs\n"
    "  (its Rank lines: GPUs per host; the cluster from the GPU's name unless --cluster): per size "
    "the\n"
    "  measured time (the better of out-of-place and in-place), the predicted one and the error, "
    "then\n"
    "  MAPE and the worst size. --profile: predict with the profile's measured collective line\n"
    "  (calibrate --nccl-tests). --max-error: exit status 1 when a log's MAPE is beyond PCT.\n"
    "  With --loop (cpu backend): N times over (default 5), calibrate, simulate with that "
    "profile,\n"
    "  execute S steps (default 5) and compare the median step; prints each error and the median\n"
    "  error. --max-error: exit status 1 when the median error's magnitude is beyond PCT, 77 when\n"
    "  the machine's speed moved by more than 20% across runs (the error is then not judged).\n"
    "  With --suite (a folder of suite files, or one): every row of each published table "
    "predicted\n"
    "  with the GPU's shipped profile (--no-profile: datasheet figures); per source the rows run,\n"
    "  MAPE, median, worst, signed bias and each row not expressible with the reason; exit status "
    "1\n"
    "  when a source is beyond its bound. --rows: every row's prediction; --markdown: the summary\n"
    "  as a markdown table (the README's accuracy section). --json FILE: every source and row as "
    "JSON\n"
    "  (docs/schemas/validate.schema.json); --html FILE: one self-contained page with the "
    "summary,\n"
    "  a chart of every row's error per source and the error by profile and stack.\n"
    "  With --measured: the scenario simulated (with the profile) against an executor run\n"
    "  (`execute --timeline`): step-time error, error per op class and phase, the 10 tasks with "
    "the\n"
    "  largest error, and a Chrome trace with predicted and measured side by side.\n"
    "  Predicts every row of a published table (vTrain's format: GPUs, global batch, micro batch,\n"
    "  hidden, heads, layers, sequence, TP, DP, PP, iteration ms), fits a few global factors on a\n"
    "  random half (seed N, default 42) and reports the error on the other half: MAPE, median,\n"
    "  worst, and by parallelism type. --csv writes every row's prediction.\n";

constexpr const char* kCalibrateHelp =
    "usage: clustersim calibrate --backend cpu --out profiles/NAME.yaml [--ranks N] [--raw "
    "FILE.csv]\n"
    "       clustersim calibrate --from-table FILE\n"
    "       clustersim calibrate --nccl-tests LOG... --out profiles/NAME.yaml [--profile "
    "BASE.yaml]\n"
    "       clustersim calibrate --kineto TRACE.json SCENARIO.yaml --out profiles/NAME.yaml "
    "[--profile BASE.yaml]\n"
    "  --kineto: fits three kernel rates (GEMMs, attention, memory-bound kernels, each a multiple "
    "of\n"
    "  BASE's rate; default BASE: the GPU's shipped profile) so that the scenario's simulated "
    "step\n"
    "  spends what the trace spends per step in each class; writes BASE with them as rate_scale.\n"
    "  --nccl-tests: fits the profile's collective line, latency + bus bytes / bus bandwidth, on "
    "every\n"
    "  size of the logs (least squares of the relative error), into a copy of BASE (default: the\n"
    "  GPU's shipped profile); simulate --profile then prices every collective with that line.\n"
    "  --backend cpu: runs microbenchmark suites through the executor on N ranks at once (default "
    "2,\n"
    "  one per core): a GEMM grid (m, n, k in 128..1024), causal attention, streaming kernels,\n"
    "  AdamW, near-empty kernels, all-reduces of 64 KiB-16 MiB, and GEMMs beside all-reduces. Fits "
    "a\n"
    "  Profile that `simulate --profile` uses: GEMM efficiency by shape, kernel efficiency by "
    "size,\n"
    "  per-task overhead, all-reduce latency and bandwidth, and how much compute and "
    "communication\n"
    "  slow each other when they overlap. Takes a few seconds.\n"
    "  --backend cuda: the same suites on GPU 0 at a GPU's scale (GEMMs 512..32768 in bf16, fp16, "
    "tf32\n"
    "  and fp8 where the GPU has it; attention at the GPT-2 scenarios' shapes; streams to 4 GiB;\n"
    "  launch overhead; GEMMs beside a copy), fitted on the GPU's device preset (about 2 "
    "minutes).\n"
    "  --raw FILE.csv: also write every benchmark's start and end (suite, name, rank).\n"
    "  --from-table: fits the table model's global factors on every row of a published table.\n";

// The options validate and calibrate share (each takes what its help lists; both read all).
std::shared_ptr<Args> add_options(CLI::App& sub) {
  auto a = std::make_shared<Args>();
  sub.add_option("SCENARIO", a->files, "the scenario (--loop, --measured)")->type_name("FILE");
  aliased_option(
      sub, {"--table", "--from-table"},
      [a](const std::string&, const std::string& v) { a->table = v; },
      "a published table of measured iterations (vTrain's format)", "FILE");
  text_option(sub, "--suite", a->suite, "a folder of suite files, or one", "PATH");
  text_option(sub, "--recipes", a->recipes, "a folder of published recipes, or one file", "PATH");
  text_option(
      sub, "--max-failures",
      [a](const std::string& v) { a->max_failures = int_flag("--max-failures", v, 0); },
      "recipes allowed to fail before the exit status is 1 (--recipes, default 0)", "N");
  text_option(
      sub, "--threads",
      [a](const std::string& v) {
        a->threads = static_cast<unsigned>(int_flag("--threads", v, 1));
      },
      "planner threads (--recipes; default every core)", "N");
  text_option(sub, "--kineto", a->kineto,
              "a PyTorch profiler (Kineto) Chrome trace of the scenario's run (validate: compare; "
              "calibrate: fit the kernel rates into --out)",
              "TRACE.json");
  text_option(sub, "--measured", a->measured, "an executor run (execute --timeline)", "RUN.json");
  sub.add_flag("--loop", a->loop,
               "calibrate, simulate with that profile, execute and compare, --runs times over (cpu "
               "backend)");
  text_option(sub, "--backend", a->backend, "calibrate on this backend", "cpu|cuda");
  text_option(sub, "--out", a->out, "where calibrate writes the profile", "profiles/NAME.yaml");
  text_option(sub, "--profile", a->profile, "the profile to simulate with (--measured)", "P.yaml");
  text_option(sub, "--trace", a->trace,
              "predicted and measured side by side as a Chrome trace (--measured)");
  text_option(sub, "--csv", a->csv, "every row's prediction as CSV (--table)");
  text_option(sub, "--raw", a->raw, "every benchmark's start and end (calibrate)", "FILE.csv");
  sub.add_flag("--no-profile", a->no_profile,
               "datasheet figures instead of the GPUs' shipped profiles (--suite)");
  sub.add_flag(
      "--markdown", a->markdown,
      "the summary as a markdown table (--suite); the tables of docs/recipes.md (--recipes)");
  sub.add_flag("--rows", a->rows, "every row's prediction (--suite)");
  sub.add_flag("--fit", a->fit,
               "redo each global fit from its calibration sources, beside the shipped values "
               "(--suite)");
  sub.add_flag("--cross-validate", a->cross_validate,
               "each source's error with the fits made on it redone without it (--suite; "
               "leave-one-source-out)");
  text_option(sub, "--json", a->json,
              "the result as JSON (validate --suite, --table, --kineto, --nccl-tests, --recipes; "
              "docs/schemas/validate.schema.json except --recipes)",
              "FILE");
  text_option(sub, "--html", a->html, "a self-contained HTML page of the result (validate --suite)",
              "FILE");
  text_option(
      sub, "--runs", [a](const std::string& v) { a->runs = int_flag("--runs", v, 1); },
      "loops (--loop, default 5)", "N");
  text_option(
      sub, "--steps", [a](const std::string& v) { a->steps = int_flag("--steps", v, 1); },
      "measured steps per loop (--loop, default 5)", "S");
  text_option(
      sub, "--max-error",
      [a](const std::string& v) {
        a->max_error =
            number_flag("--max-error", v, 0.0, "the magnitude of an error, in percent", true);
      },
      "exit status 1 when the median error's magnitude (--loop) or a log's MAPE (--nccl-tests) is "
      "beyond PCT",
      "PCT");
  text_option(
      sub, "--ranks", [a](const std::string& v) { a->ranks = int_flag("--ranks", v, 1); },
      "ranks of the cpu calibration (default 2)", "N");
  sub.add_option(
         "--nccl-tests", a->nccl.logs,
         "nccl-tests output logs (validate: error per size; calibrate: fit the collective line)")
      ->type_name("LOG...")
      ->expected(1, 1 << 20);
  const auto collectives = names_of(every_value<ir::CollectiveType>());
  text_option(sub, "--collective", a->collective,
              "the collective of the logs, where they do not name their binary (--nccl-tests)",
              choice_type(collectives));
  text_option(sub, "--cluster", a->nccl.cluster,
              "cluster preset the logs ran on (--nccl-tests; default from the GPU's name)",
              "PRESET");
  text_option(
      sub, "--gpus", [a](const std::string& v) { a->nccl.gpus = int_flag("--gpus", v, 2); },
      "GPUs of logs without Rank lines (--nccl-tests)", "N");
  text_option(
      sub, "--nodes", [a](const std::string& v) { a->nccl.nodes = int_flag("--nodes", v, 1); },
      "hosts of logs without Rank lines (--nccl-tests)", "M");
  text_option(
      sub, "--fidelity",
      [a](const std::string& v) {
        a->nccl.fidelity = scenario::find_named_model(scenario::network_models(), "--fidelity", v);
      },
      "network model of the prediction (--nccl-tests; default analytic)",
      choice_type(scenario::model_names(scenario::network_models())));
  text_option(
      sub, "--seed",
      [a](const std::string& v) { a->seed = static_cast<unsigned>(int_flag("--seed", v, 0)); },
      "the random half fitted on (--table, default 42)", "N");
  return a;
}

// --fit and --cross-validate redo the fits of a suite and print a table only.
void check_refit(const Args& a, const char* command) {
  if (!a.fit && !a.cross_validate) return;
  const std::string flag = a.fit ? "--fit" : "--cross-validate";
  if (std::string(command) == "calibrate" || a.suite.empty() || !a.nccl.logs.empty() ||
      !a.kineto.empty())
    throw UserError(std::string(command) + " " + flag +
                    " redoes the fits of a --suite: clustersim validate --suite validate/suites " +
                    flag);
  if (!a.json.empty() || !a.html.empty() || a.markdown || a.rows)
    throw UserError("validate " + flag +
                    " prints its table only (no --json, --html, --markdown or --rows)");
}

// What parse() checked once every option is read.
void check(Args& a, const char* command) {
  if (a.files.size() > 1) throw UserError("unknown option '" + a.files[1] + "' for " + command);
  a.scenario = a.files.empty() ? "" : a.files[0];
  a.nccl.profile = a.profile;
  a.nccl.out = a.out;
  a.nccl.max_error = a.max_error;
  check_refit(a, command);
  if (a.table.empty() && a.backend.empty() && a.measured.empty() && !a.loop && a.suite.empty() &&
      a.nccl.logs.empty() && a.kineto.empty() && a.recipes.empty()) {
    throw UserError(std::string(command) + ": nothing to do (clustersim " + command +
                    " --help lists the options)");
  }
  // Only the suite and the table have one result to write; elsewhere the flags would be ignored.
  const bool suite = !a.suite.empty() && a.nccl.logs.empty() && a.kineto.empty();
  const bool table = !suite && !a.table.empty() && a.nccl.logs.empty() && a.kineto.empty() &&
                     a.measured.empty() && !a.loop;
  if (std::string(command) == "calibrate" && (!a.json.empty() || !a.html.empty()))
    throw UserError("calibrate writes no --json or --html (validate does)");
  const bool kineto = !a.kineto.empty() && a.nccl.logs.empty();
  const bool nccl = !a.nccl.logs.empty();
  const bool recipes = !a.recipes.empty() && !suite && !kineto && !nccl;
  if (!a.json.empty() && !suite && !table && !kineto && !nccl && !recipes)
    throw UserError(
        "validate --json is written for --suite, --table, --kineto, --nccl-tests and --recipes "
        "only");
  if (!a.recipes.empty() && std::string(command) == "calibrate")
    throw UserError("calibrate takes no --recipes (validate does)");
  a.nccl.json = a.json;
  if (!a.html.empty() && !suite) throw UserError("validate --html is written for --suite only");

  a.generator = version_text();
  if (!a.collective.empty() && !a.nccl.logs.empty())  // read with the logs, as before
    a.nccl.collective =
        parse_choice("--collective", a.collective, every_value<ir::CollectiveType>());
}

}  // namespace

namespace {

// validate and calibrate share one option set; each checks it against its own mode, then runs.
void add_command(CLI::App& app, Context& ctx, const char* name, const char* description,
                 const char* help, int (*run)(const workflows::ValidationRequest&, std::ostream&)) {
  CLI::App* sub = app.add_subcommand(name, description);
  auto a = add_options(*sub);
  sub->footer(help);
  sub->callback([a, &ctx, name, run] {
    check(*a, name);
    ctx.status = run(*a, ctx.out);
  });
}

}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  add_command(app, ctx, "validate",
              "predictions against published tables, suites and executor runs (exit status 1 "
              "beyond a bound)",
              kValidateHelp, workflows::validate);
}

void add_calibrate_command(CLI::App& app, Context& ctx) {
  add_command(app, ctx, "calibrate",
              "fit a profile from microbenchmarks (--backend cpu|cuda) or a table model's factors "
              "(--from-table)",
              kCalibrateHelp, workflows::calibrate);
}

}  // namespace cs::cli
