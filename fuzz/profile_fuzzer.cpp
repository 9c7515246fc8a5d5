// load_profile on arbitrary bytes.
#include "fuzz/fuzz_target.h"
#include "scenarios/profile_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cs::fuzz::write_temp(data, size, ".profile.yaml");
  return cs::fuzz::run_reader([&] { cs::scenario::load_profile(path); });
}
