#pragma once
// Where the tests find the source tree and the clustersim program. Compiled into one file
// (test_paths.cpp) rather than into every test, so that each test's object is the same in every
// clone and ccache shares it (scripts/loaded-check.sh builds several clones one after another).
#include <string>

namespace cs::test_paths {

// The source tree this build was configured from (the repository root).
std::string source_dir();
// The clustersim program this build made (the executor tests start it once per rank).
std::string clustersim_binary();

}  // namespace cs::test_paths
