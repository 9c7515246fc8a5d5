// The command line (cli/app.cpp, CLI11): --help everywhere exits 0, --opt=value reads as
// --opt value, value lists in the help and in error messages come from the enums' to_string, and
// bad input is an "error: ..." line with exit status 1, never a crash. Runs the parser in process.
#include <gtest/gtest.h>

#include <sstream>

#include "cli/app.h"
#include "cli/options.h"
#include "models/model_work.h"
#include "taskgraph/task_graph.h"

namespace cs {
namespace {

struct CliRun {
  int status;
  std::string out, err;
};

CliRun run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = cli::run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

const std::vector<std::string> kCommands{"simulate", "plan",     "sweep",     "bench-collective",
                                         "execute",  "validate", "calibrate", "import",
                                         "compare",  "list"};

TEST(CommandLine, HelpExitsZeroForEveryCommand) {
  const CliRun top = run({"--help"});
  EXPECT_EQ(top.status, 0);
  for (const auto& c : kCommands) {
    EXPECT_NE(top.out.find("\n  " + c + " "), std::string::npos)
        << c << " missing from clustersim --help";
    const CliRun r = run({c, "--help"});
    EXPECT_EQ(r.status, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find("Usage: clustersim " + c), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
  EXPECT_EQ(top.out.find("execute-rank"), std::string::npos);  // the executor's own, hidden
  EXPECT_EQ(run({"help", "plan"}).out, run({"plan", "--help"}).out);
  EXPECT_EQ(run({"import", "megatron", "--help"}).status, 0);
}

TEST(CommandLine, NoArgumentsPrintsUsageWithStatus2) {
  const CliRun r = run({});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("Usage: clustersim"), std::string::npos);
}

TEST(CommandLine, VersionNamesTheBuild) {
  const CliRun r = run({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, cli::version_text() + "\n");
  EXPECT_EQ(r.out.rfind("clustersim ", 0), 0u);
  EXPECT_NE(r.out.find("(commit "), std::string::npos);
}

TEST(CommandLine, ChoiceListsComeFromTheEnums) {
  const std::string plan = run({"plan", "--help"}).out;
  EXPECT_NE(plan.find("--precision " +
                      cli::choice_type(cli::names_of(cli::every_value<model::Precision>()))),
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find(cli::choice_type(cli::names_of(cli::every_value<model::Recompute>()))),
            std::string::npos);
  EXPECT_EQ(cli::every_value<model::Precision>().size(),
            10u);  // fp32 .. nvfp4: the enum's ten
  const std::string bench = run({"bench-collective", "--help"}).out;
  EXPECT_NE(
      bench.find("--op " + cli::choice_type(cli::names_of(cli::every_value<ir::CollectiveType>()))),
      std::string::npos)
      << bench;
  // p2p is one send/recv pair, not an algorithm a collective can be forced to: refused by both
  // commands that take --algo, with one message listing the same values.
  const std::string expected =
      "error: --algo 'p2p': valid values are " + cli::join(cli::algorithm_names()) + "\n";
  EXPECT_EQ(cli::algorithm_names().front(), "auto");
  EXPECT_EQ(expected.find("p2p", expected.find("valid values")), std::string::npos);
  const CliRun sim = run({"simulate", "scenarios/none.yaml", "--algo", "p2p"});
  EXPECT_EQ(sim.status, 1);
  EXPECT_EQ(sim.err, expected);
  const CliRun b = run({"bench-collective", "--algo=p2p"});
  EXPECT_EQ(b.status, 1);
  EXPECT_EQ(b.err, expected);
}

TEST(CommandLine, EqualsFormReadsAsTwoArguments) {
  const CliRun spaced = run({"bench-collective", "--cluster", "dgx_h100", "-g", "8", "--min",
                             "1MiB", "--max", "4MiB", "--algo", "ring", "--fidelity", "analytic"});
  const CliRun joined = run({"bench-collective", "--cluster=dgx_h100", "--gpus=8", "--min=1MiB",
                             "--max=4MiB", "--algo=ring", "--fidelity=analytic"});
  ASSERT_EQ(spaced.status, 0) << spaced.err;
  ASSERT_EQ(joined.status, 0) << joined.err;
  // Rows of 1, 2 and 4 MiB; the wall-time line at the end differs run to run.
  auto table = [](const std::string& s) { return s.substr(0, s.find("# wall time")); };
  EXPECT_EQ(table(joined.out), table(spaced.out));
  EXPECT_NE(spaced.out.find("     4194304 "), std::string::npos) << spaced.out;
}

TEST(CommandLine, BadInputIsOneErrorLineAndStatus1) {
  const CliRun unknown = run({"simulate", "scenarios/gpt2-large-2xh100-ddp.yaml", "--bogus"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_EQ(unknown.err,
            "error: The following argument was not expected: --bogus\nrun 'clustersim simulate "
            "--help' for the options\n");
  const CliRun missing = run({"plan", "--json"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err.rfind("error: --json: 1 required FILE missing", 0), 0u) << missing.err;
  const CliRun range = run({"plan", "--model=gpt2-large", "--cluster=dgx_h100", "--gpus=0",
                            "--global-batch=8", "--seq=1024"});
  EXPECT_EQ(range.err,
            "error: --gpus '0': expected a positive integer\n");  // flags.h's check and message
  const CliRun command = run({"simulte"});
  EXPECT_EQ(command.status, 1);
  EXPECT_EQ(command.err,
            "error: unknown command 'simulte'; valid commands: " + cli::join(kCommands) + "\n");
  // The last of a repeated option wins, as before CLI11.
  const CliRun twice = run({"bench-collective", "--gpus", "4", "--gpus", "99999999"});
  EXPECT_EQ(
      twice.err,
      "error: --gpus 99999999: a cluster of 99999999 GPUs is above the limit of 131072 GPUs (twice "
      "the largest announced training cluster)\n");
}

}  // namespace
}  // namespace cs
