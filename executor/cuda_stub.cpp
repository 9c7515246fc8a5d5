// The cuda backend where no CUDA toolkit was found at build time.
#include "executor/cuda_backend.h"

namespace cs::exec {
namespace {
constexpr const char* kNotBuilt =
    "this build has no cuda backend (no CUDA toolkit was found when it was configured)";
}

bool cuda_backend_built() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = kNotBuilt;
  return 0;
}

std::string cuda_environment(std::string* why) {
  if (why) *why = kNotBuilt;
  return "";
}

bool cuda_has_fp8() { return false; }

Measured run_cuda(const ir::TaskGraph&, const CudaOptions&) { throw ExecutionError(kNotBuilt); }

std::optional<Measured> run_cuda_launched(const ir::TaskGraph&, const CudaOptions&,
                                          const CudaLaunch&) {
  throw ExecutionError(kNotBuilt);
}

}  // namespace cs::exec
