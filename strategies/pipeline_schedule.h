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
//
// Each schedule has one owner here (PipelineScheduleFlavour) answering every question asked of it:
// its order, the micro-batches a stage holds at its peak (the planner's memory bound), its
// pipeline fill in closed form (the planner's step estimate), the layouts it refuses, which
// software stacks run it and with how many chunks the planner tries it, its names and its launch
// arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/software_stack.h"
#include "strategies/launch_args.h"
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

// Micro-batches a stage holds at its peak: awaiting their backward (whole activations) and,
// under zero bubble, awaiting only their W pass (the linears' inputs).
struct HeldMicroBatches {
  int64_t awaiting_backward = 0, awaiting_weight_grad = 0;
  bool operator==(const HeldMicroBatches&) const = default;
};

// A chunk count the planner tries, and whether its layers split with the embedding and the loss
// counted as layers (Layout::embedding_in_split and loss_in_split) rather than evenly.
struct PlannedChunks {
  int chunks = 1;
  bool ends_counted = false;
};

class PipelineScheduleFlavour {
 public:
  PipelineScheduleFlavour(PipelineSchedule id, std::string_view name) : id(id), name(name) {}
  virtual ~PipelineScheduleFlavour() = default;

  const PipelineSchedule id;
  const std::string_view name;  // the scenario's and the report's
  // Runs several model chunks per stage (virtual_stages > 1).
  virtual bool interleaves() const { return false; }
  // Splits each backward into B and W (Pass::input_grad, Pass::weight_grad).
  virtual bool splits_backward() const { return false; }

  // Stage `stage` of `stages`, `chunks` model chunks per stage, `micro_batches` micro-batches.
  virtual std::vector<Slot> order(int stages, int chunks, int stage, int micro_batches) const = 0;
  // Where its exchanges block (pipeline_p2p_blocks): how many passes of order(stages, chunks,
  // stage, micro_batches) from the one at `first` run between one exchange and the next. Each
  // exchange sends what the passes before it produced and receives what the passes after it
  // need, all at once (Megatron's batched p2p calls).
  virtual size_t passes_per_exchange(int /*stages*/, int /*chunks*/, int /*stage*/,
                                     int /*micro_batches*/, size_t /*first*/) const {
    return 1;
  }

  // --- memory ---------------------------------------------------------------------------------
  // At the peak of stage s of p with m micro-batches (p > 1).
  virtual HeldMicroBatches held_at_peak(int p, int s, int64_t m) const;
  // Whether the peak grows with the micro-batch count (every one held until backward).
  virtual bool memory_grows_with_micro_batches() const { return false; }

  // --- the planner's closed form --------------------------------------------------------------
  // The fill and drain of p stages: `fill` is the stage times beyond the busiest (sum - busiest:
  // (p - 1) stage times for equal stages), `weight_grad` the busiest stage's W passes.
  virtual double fill_seconds(double fill, int p, int chunks_per_stage, double weight_grad) const;
  // Micro-batch counts of the two short runs the planner extrapolates from (pp > 1): the first
  // is p, where every stage has filled; the second one more (a multiple of p when interleaved).
  virtual int64_t second_short_run(int p) const { return p + 1; }

  // --- constraints ----------------------------------------------------------------------------
  // Why the layout cannot run it ("" when it can), with `micro_batches` per replica.
  virtual std::string refusal(const Layout& l, int64_t micro_batches) const;
  // Whether the framework `stack` stands for runs it (ideal: every schedule modelled, a bound).
  virtual bool run_by(model::Stack stack) const = 0;
  // The model chunks per stage the planner tries under `stack` on `pp` stages of a model with
  // `layers` layers: 1, or (interleaved) more, at most `max_chunks` when it is above 0.
  virtual std::vector<PlannedChunks> planned_chunks(model::Stack /*stack*/, int /*layers*/,
                                                    int /*pp*/, int /*max_chunks*/) const {
    return {{1, false}};
  }

  // --- names and launch -----------------------------------------------------------------------
  virtual LaunchArgs megatron_args(const Layout& l) const;
  // torch.distributed.pipelining's schedule class.
  virtual std::string_view torch_schedule_class() const = 0;
};

// The registry.
const PipelineScheduleFlavour& pipeline_schedule_flavour(PipelineSchedule s);
// Every schedule in enum order.
const std::vector<const PipelineScheduleFlavour*>& pipeline_schedule_flavours();
// (name, schedule) pairs for the scenario reader.
std::vector<std::pair<std::string, PipelineSchedule>> pipeline_schedule_names();

// The order of stage `stage` (pipeline_schedule_flavour(kind).order).
std::vector<Slot> pipeline_schedule(PipelineSchedule kind, int stages, int chunks, int stage,
                                    int micro_batches);
// How many exchanges stage `stage` waits for when they block (passes_per_exchange over its order).
int64_t blocking_exchanges(PipelineSchedule kind, int stages, int chunks, int stage,
                           int micro_batches);

}  // namespace cs::strategy
