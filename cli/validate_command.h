// `clustersim validate --table` and `clustersim calibrate --from-table`: predictions against a
// published table of measured iterations, with a few fitted global factors (validate/).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cs::cli {

int validate_command(const std::vector<std::string>& args, std::ostream& out);
int calibrate_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace cs::cli
