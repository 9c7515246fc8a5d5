// The Hugging Face config.json importer on arbitrary bytes.
#include "fuzz/fuzz_target.h"
#include "interop/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return cs::fuzz::run_reader([&] { cs::interop::parse_hf_config(text, "config.json"); });
}
