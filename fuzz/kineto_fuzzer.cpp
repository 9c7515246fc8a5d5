// The Kineto (PyTorch profiler) trace reader on arbitrary bytes, then each device's step
// breakdown: the arithmetic where 1e17-us timestamps once gave zero exposed communication.
#include "fuzz/fuzz_target.h"
#include "validate/kineto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return cs::fuzz::run_reader([&] {
    const cs::validate::KinetoTrace trace = cs::validate::parse_kineto_trace(text, "trace.json");
    for (int device : trace.devices) cs::validate::measured_breakdown(trace, device);
  });
}
