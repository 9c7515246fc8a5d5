// What `plan --emit DIR` and `simulate --emit-megatron FILE` write: a layout as a runnable
// scenario (YAML that `clustersim simulate` reads back to the same step), as Megatron-LM launch
// arguments (which `clustersim import megatron --file` reads back), and as a torchrun/FSDP
// configuration sketch.
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace cs::cli {

// The scenario as YAML. When `s.file` is a scenario file, its model and cluster blocks are kept
// as written (relative paths in them made absolute, so the file runs from any folder) and its
// layout, training, stack and network blocks are replaced by `s`'s; a scenario built from plan's
// flags is written with model and cluster presets. `header` lines go first as comments.
std::string scenario_yaml(const scenario::Scenario& s, const std::vector<std::string>& header);

// Megatron-LM's arguments for the scenario's model, layout and training set-up, one flag (and
// value) per entry, e.g. {"--tensor-model-parallel-size 2", "--sequence-parallel", ...}. What
// Megatron-LM cannot express (FSDP flavours, ZB-H1, op_selective recompute, ...) is said in
// `notes`.
std::vector<std::string> megatron_arguments(const scenario::Scenario& s,
                                            std::vector<std::string>& notes);

// A launch script: `torchrun --nnodes N --nproc-per-node G pretrain_gpt.py \` and the arguments
// one a line, the notes as comments.
std::string megatron_launch_script(const scenario::Scenario& s);

// A torchrun + PyTorch FSDP/DDP configuration sketch (Python) for the layout: process groups,
// the wrapper and its sharding strategy, mixed precision, activation checkpointing, batch sizes.
std::string torchrun_sketch(const scenario::Scenario& s);

}  // namespace cs::cli
