// parse_scenario on arbitrary bytes (the file name "fuzz.yaml": relative hardware, profile and
// HF config paths resolve beside the working directory).
#include "fuzz/fuzz_target.h"
#include "scenarios/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return cs::fuzz::run_reader([&] { cs::scenario::parse_scenario(text, "fuzz.yaml"); });
}
