// The launch files a layout is written as: Megatron-LM's arguments (which `import megatron`,
// interop/megatron_args.h, reads back) and a torchrun + PyTorch FSDP/DDP configuration sketch.
// The data-parallel flavour and pipeline schedule say their own flags (strategies' registries).
#pragma once

#include <string>
#include <vector>

#include "models/model_spec.h"
#include "strategies/layout.h"

namespace cs::interop {

// A model, layout and training set-up on `gpus` GPUs, `gpus_per_node` to a node.
struct LaunchTarget {
  std::string name;
  const model::ModelSpec& model;
  const strategy::Layout& layout;
  const strategy::TrainingSpec& training;
  int gpus = 1;
  int gpus_per_node = 1;
};

// Megatron-LM's arguments, one flag (and value) per entry, e.g. {"--tensor-model-parallel-size 2",
// "--sequence-parallel", ...}. What Megatron-LM cannot express (FSDP flavours, ZB-H1,
// op_selective recompute, ...) is said in `notes`.
std::vector<std::string> megatron_arguments(const LaunchTarget& t, std::vector<std::string>& notes);

// A launch script: `torchrun --nnodes N --nproc-per-node G pretrain_gpt.py \` and the arguments
// one a line, the notes as comments.
std::string megatron_launch_script(const LaunchTarget& t);

// A torchrun + PyTorch FSDP/DDP configuration sketch (Python) for the layout: process groups,
// the wrapper and its sharding strategy, mixed precision, activation checkpointing, batch sizes.
std::string torchrun_sketch(const LaunchTarget& t);

}  // namespace cs::interop
