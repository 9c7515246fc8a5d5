// The defaults of a training run's inputs, each with its source, so that the report can say what
// it assumed. Price and power depend on the GPU (by device preset name, cost_models/device_spec);
// the rest hold for any GPU.
#pragma once

#include <string>

namespace cs::training_run {

struct Default {
  double value = 0;
  std::string source;  // where the figure comes from, in a few words
};

Default default_usd_per_gpu_hour(const std::string& gpu);
Default default_watts_per_gpu(const std::string& gpu);
// Data-centre PUE, tokens per parameter, failure rate, storage bandwidth, restart overhead and
// bytes per parameter of a checkpoint.
Default default_pue();
Default default_tokens_per_parameter();
Default default_failures_per_gpu_hour();
Default default_checkpoint_bandwidth();  // bytes/s
Default default_restart_seconds();
Default default_checkpoint_bytes_per_parameter();

}  // namespace cs::training_run
