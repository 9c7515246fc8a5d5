// `clustersim execute` and the hidden `execute-rank`: their options (workflows/execution.h runs
// them).
#include <memory>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "cli/options.h"
#include "common/error.h"
#include "executor/launch_env.h"
#include "workflows/execution.h"

namespace cs::cli {
namespace {

constexpr const char* kHelp =
    "usage: clustersim execute SCENARIO.yaml [--backend cpu|cuda] [--warmup W] [--steps N] "
    "[--trace FILE]\n"
    "                          [--json FILE] [--timeline FILE] [--timeout SECONDS]\n"
    "                          [--launcher auto|mpi|pmi|slurm|none] [--rendezvous DIR]\n"
    "  Runs the scenario's task graph with real kernels and collectives and prints the simulate\n"
    "  report from the measurements (the last measured step; step time is the median of N).\n"
    "  --backend cpu      one process per rank, OpenBLAS GEMMs, Gloo collectives over loopback "
    "(default)\n"
    "  --backend cuda     one GPU per rank on this machine, cuBLASLt and NCCL (untested on "
    "hardware so far)\n"
    "  --warmup W         unmeasured steps first (default 1)\n"
    "  --steps N          measured steps (default 3)\n"
    "  --timeout SECONDS  a collective or transfer that waits longer fails the run (default 30)\n"
    "  --timeline FILE    the measured timeline (every task's start and end) for `validate "
    "--measured`\n"
    "  --launcher L       under mpirun / srun every process runs one rank: auto (default) detects "
    "the\n"
    "                     launcher from OMPI_COMM_WORLD_*, PMI_* or SLURM_* when it started more "
    "than\n"
    "                     one process; rank 0 prints the report. none: start the ranks here "
    "(fork).\n"
    "                     e.g. mpirun -np 4 clustersim execute SCENARIO.yaml; srun -n 16 "
    "clustersim execute ...\n"
    "  --rendezvous DIR   where the ranks meet (Gloo's file store, the NCCL unique id, result "
    "files);\n"
    "                     default $CLUSTERSIM_RENDEZVOUS or /tmp/clustersim-<job id> (one node "
    "only:\n"
    "                     several nodes need a shared directory). The Gloo TCP device binds to\n"
    "                     $CLUSTERSIM_GLOO_HOST, else 127.0.0.1 on one node and this host's name "
    "on several.\n"
    "  Testing the error paths: --inject-kernel-failure TASK [--inject-rank R], --memory-limit "
    "BYTES,\n"
    "  --skip-collective TASK --skip-rank R (that rank never joins, its peers time out).\n"
    "  Exit status 5 when execution fails, naming the task, rank and stream.\n";

struct Parsed : workflows::ExecuteRequest {
  std::vector<std::string> files;
};

// The options of execute (people) and execute-rank (the processes execute starts, rank_mode).
std::shared_ptr<Parsed> add_options(CLI::App& sub, bool rank_mode) {
  auto p = std::make_shared<Parsed>();
  sub.add_option("SCENARIO", p->files, "the scenario file (YAML)")->type_name("FILE");
  text_option(
      sub, "--backend",
      [p](const std::string& v) {
        check_choice("--backend", v, {"cpu", "cuda"});
        p->backend = v;
      },
      "cpu: one process per rank, OpenBLAS GEMMs, Gloo collectives over loopback (default); cuda: "
      "one GPU per rank on this machine, "
      "cuBLASLt and NCCL",
      "cpu|cuda");
  text_option(
      sub, "--warmup", [p](const std::string& v) { p->warmup = int_flag("--warmup", v, 0); },
      "unmeasured steps first (default 1)", "W");
  text_option(
      sub, "--steps", [p](const std::string& v) { p->steps = int_flag("--steps", v, 1); },
      "measured steps (default 3)", "N");
  text_option(sub, "--trace", p->trace, "the measured step as a Chrome trace");
  text_option(sub, "--json", p->json, "the report as JSON (docs/schemas/report.schema.json)");
  text_option(sub, "--timeline", p->timeline,
              "the measured timeline (every task's start and end) for `validate --measured`");
  text_option(
      sub, "--timeout",
      [p](const std::string& v) { p->timeout_ms = 1000LL * int_flag("--timeout", v, 1); },
      "a collective or transfer that waits longer fails the run (default 30)", "SECONDS");
  text_option(
      sub, "--timeout-ms",
      [p](const std::string& v) { p->timeout_ms = int_flag("--timeout-ms", v, 1); },
      "the same in milliseconds", "MS");
  text_option(sub, "--inject-kernel-failure", p->faults.failing_task,
              "testing: this task's kernel fails", "TASK");
  text_option(
      sub, "--inject-rank",
      [p](const std::string& v) { p->faults.failing_rank = int_flag("--inject-rank", v, -1); },
      "testing: only on this rank", "R");
  text_option(
      sub, "--memory-limit",
      [p](const std::string& v) {
        try {
          p->faults.memory_limit = parse_bytes(v).count;
        } catch (const UnitError& e) {
          throw UserError(std::string("--memory-limit: ") + e.what());
        }
      },
      "testing: allocations beyond this fail", "BYTES");
  text_option(sub, "--skip-collective", p->faults.skipped_collective,
              "testing: a rank never joins this collective (its peers time out)", "TASK");
  text_option(
      sub, "--skip-rank",
      [p](const std::string& v) { p->faults.skipping_rank = int_flag("--skip-rank", v, 0); },
      "testing: the rank that skips", "R");
  if (rank_mode) {
    text_option(
        sub, "--rank", [p](const std::string& v) { p->rank = int_flag("--rank", v, 0); },
        "this process's rank", "R");
    text_option(sub, "--dir", p->dir, "the rendezvous directory", "DIR");
    text_option(sub, "--calibration", p->calibration, "a calibration suite instead of a scenario",
                "SUITE");
    text_option(
        sub, "--calibration-ranks",
        [p](const std::string& v) { p->calibration_ranks = int_flag("--calibration-ranks", v, 1); },
        "the suite's ranks", "N");
  } else {
    std::vector<std::string> launchers{"auto"};
    for (auto k : every_value<exec::LauncherKind>()) launchers.emplace_back(exec::to_string(k));
    text_option(
        sub, "--launcher",
        [p, launchers](const std::string& v) {
          check_choice("--launcher", v, launchers);
          p->launcher = v;
        },
        "under mpirun / srun every process runs one rank: auto (default) detects the launcher from "
        "OMPI_COMM_WORLD_*, PMI_* or "
        "SLURM_* when it started more than one process; rank 0 prints the report. none: start the "
        "ranks here (fork). "
        "e.g. mpirun -np 4 clustersim execute SCENARIO.yaml",
        choice_type(launchers));
    text_option(sub, "--rendezvous", p->rendezvous,
                "where the ranks meet (Gloo's file store, the NCCL unique id, result files); "
                "default $CLUSTERSIM_RENDEZVOUS or "
                "/tmp/clustersim-<job id> (one node only: several nodes need a shared directory)",
                "DIR");
  }
  return p;
}

// What needs every option read.
void check(Parsed& p) {
  p.scenario = one_file(p.files, "execute");
  if (p.scenario.empty() && p.calibration.empty())
    throw UserError("execute needs a scenario file (clustersim execute --help)");
}

}  // namespace

void add_execute_commands(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand(
      "execute",
      "run the same task graph with real kernels and collectives, report the measured step");
  auto p = add_options(*sub, false);
  sub->footer(kHelp);
  sub->callback([p, &ctx] {
    check(*p);
    ctx.status = workflows::execute(*p, ctx.out, ctx.err);
  });
  // What each process `execute` starts runs: not for people, hidden from --help.
  CLI::App* rank = app.add_subcommand("execute-rank", "one rank of an execute run")->group("");
  auto r = add_options(*rank, true);
  rank->callback([r, &ctx] {
    check(*r);
    ctx.status = workflows::execute_rank(*r);
  });
}

}  // namespace cs::cli
