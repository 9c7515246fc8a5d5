// read_vtrain_table (validate --table) on arbitrary bytes.
#include "fuzz/fuzz_target.h"
#include "validate/table_validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cs::fuzz::write_temp(data, size, ".table.csv");
  return cs::fuzz::run_reader([&] { cs::validate::read_vtrain_table(path); });
}
