// The order in which one pipeline stage runs forward and backward passes of its model chunks.
//
//   gpipe        all m forwards, then all m backwards (keeps m micro-batches of activations)
//   1f1b         PipeDream-Flush / Megatron: p - s - 1 warm-up forwards, then one forward one
//                backward, then the remaining backwards (keeps at most p - s in flight)
//   interleaved  Megatron's interleaved 1F1B over v model chunks per stage (Narayanan et al.
//                2021, section 2.2): virtual micro-batch k runs chunk (k mod pv) / p on
//                micro-batch (k / pv) * p + k mod p; the bubble shrinks by v
#pragma once

#include <vector>

#include "strategies/layout.h"

namespace cs::strategy {

struct Slot {
  bool forward = true;
  int chunk = 0;        // model chunk local to the stage (0..v-1)
  int micro_batch = 0;
};

// Stage `stage` of `stages`, `chunks` model chunks per stage, `micro_batches` micro-batches.
std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int stages, int chunks, int stage, int micro_batches);

}  // namespace cs::strategy
