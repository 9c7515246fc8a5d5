// The clustersim command line: one CLI11 app with a subcommand per command (cli/options.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cs::cli {

// Parses `args` (without the program name) and runs the command; returns the exit status:
// 0, the command's own status, 1 for bad input (UserError or a CLI11 parse error, printed on
// `err` as "error: ..."), 2 for no arguments at all (usage printed), 3 for an internal error.
// --help and --version print on `out` and return 0.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// "clustersim 0.17.0 (commit abc123, GNU 12.2.0, RelWithDebInfo)".
std::string version_text();

}  // namespace cs::cli
