// The DeepSpeed config importer on arbitrary bytes, with a model preset (a DeepSpeed config does
// not describe the model) and the world size, then the draft as YAML (`clustersim import
// deepspeed`).
#include "fuzz/fuzz_target.h"
#include "interop/megatron_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return cs::fuzz::run_reader([&] {
    cs::interop::ImportOptions o;
    o.model_preset = "gpt2-large";
    o.gpus = 8;
    o.seq_len = 1024;
    cs::interop::to_yaml(cs::interop::import_deepspeed(text, "ds_config.json", o));
  });
}
