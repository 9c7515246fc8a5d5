// The order in which one pipeline stage runs forward and backward passes of its model chunks.
//
//   gpipe        all m forwards, then all m backwards (keeps m micro-batches of activations)
//   1f1b         PipeDream-Flush / Megatron: p - s - 1 warm-up forwards, then one forward one
//                backward, then the remaining backwards (keeps at most p - s in flight)
//   interleaved  Megatron's interleaved 1F1B over v model chunks per stage (Narayanan et al.
//                2021, section 2.2): virtual micro-batch k runs chunk (k mod pv) / p on
//                micro-batch (k / pv) * p + k mod p; the bubble shrinks by v
//   zb_h1        Qi et al. 2024 (ZB-H1): each backward split into B (input gradient, sent
//                upstream at once) and W (weight gradient). 1F1B's order with W passes slotted
//                in: stage s lets at most s W passes wait behind their B (the first stage none),
//                so it holds p - s micro-batches' activations and s micro-batches' linear inputs,
//                never more than the first stage's 1F1B peak of p micro-batches. The held W
//                passes fill the cool-down: with equal F, B and W the bubble is
//                (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W). Memory: B frees what
//                only the input gradients read, W the linears' inputs it reads
//                (Block::weight_grad_inputs), as the paper counts it. Under full recomputation
//                those inputs are re-materialised tensors, more than the checkpoint a micro-batch
//                awaiting B keeps, so ZB-H1 then holds more than 1F1B (GPT-3 175B, PP 8, 96
//                micro-batches: 59.1 GiB against 52.3 on the busiest stage).
#pragma once

#include <vector>

#include "strategies/layout.h"

namespace cs::strategy {

enum class Pass : uint8_t {
  forward,
  backward,     // the whole backward (input and weight gradients)
  input_grad,   // zero-bubble B: the input gradient only
  weight_grad,  // zero-bubble W: the weight gradients (and the gradient syncs they complete)
};

struct Slot {
  Pass pass = Pass::forward;
  int chunk = 0;  // model chunk local to the stage (0..v-1)
  int micro_batch = 0;
};

// Stage `stage` of `stages`, `chunks` model chunks per stage, `micro_batches` micro-batches.
std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int stages, int chunks, int stage,
                                    int micro_batches);

}  // namespace cs::strategy
