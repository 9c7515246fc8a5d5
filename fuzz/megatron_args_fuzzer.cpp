// The Megatron-LM importer on arbitrary bytes: a launch script split into arguments, then the
// arguments read into a scenario draft (both halves of `clustersim import megatron`).
#include "fuzz/fuzz_target.h"
#include "interop/megatron_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return cs::fuzz::run_reader([&] {
    const std::vector<std::string> args = cs::interop::launch_script_arguments(text, "train.sh");
    cs::interop::import_megatron(args, cs::interop::ImportOptions{});
  });
}
