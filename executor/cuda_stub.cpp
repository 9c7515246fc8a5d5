// The cuda backend where no CUDA toolkit was found at build time.
#include "executor/cuda_backend.h"

namespace cs::exec {

bool cuda_backend_built() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "this build has no cuda backend (no CUDA toolkit was found when it was configured)";
  return 0;
}

Measured run_cuda(const ir::TaskGraph&, const CudaOptions&) {
  throw ExecutionError("this build has no cuda backend (no CUDA toolkit was found when it was configured)");
}

}  // namespace cs::exec
