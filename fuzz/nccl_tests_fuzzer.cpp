// The nccl-tests log reader on arbitrary bytes, then the check of its rows against the collective
// its binary names (both halves of `clustersim nccl-tests`' reading).
#include <sstream>

#include "fuzz/fuzz_target.h"
#include "validate/nccl_tests_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  return cs::fuzz::run_reader([&] {
    cs::validate::NcclTestsLog log = cs::validate::parse_nccl_tests_log(in, "nccl.log");
    cs::validate::settle_collective(log, std::nullopt);
  });
}
