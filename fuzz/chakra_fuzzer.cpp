// The Chakra execution-trace reader (length-delimited protobuf messages) on arbitrary bytes.
#include <cstdio>

#include "fuzz/fuzz_target.h"
#include "interop/chakra/chakra_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cs::fuzz::write_temp(data, size, ".et");
  const int status = cs::fuzz::run_reader([&] { cs::interop::read_chakra_trace(path); });
  std::remove(path.c_str());
  return status;
}
