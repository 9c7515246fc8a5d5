#include "test_paths.h"

namespace cs::test_paths {

std::string source_dir() { return CLUSTERSIM_SOURCE_DIR; }
std::string clustersim_binary() { return CLUSTERSIM_BINARY; }

}  // namespace cs::test_paths
