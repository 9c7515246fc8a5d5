// `clustersim import hf|megatron|deepspeed`: argument parsing and printing around interop/.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cs::cli {

// Prints a scenario (or, for hf, a model block) as YAML on `out` and warnings on `err`; returns
// the exit status; throws UserError on bad input.
int import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cs::cli
