// `clustersim plan`: which layout a team would launch to train a model fastest (or leanest) on a
// cluster, with the framework the base's stack names (training.stack; the workflow defaults it to
// kDefaultPlanStack, Megatron-Core; Stack::ideal searches everything modelled, as a bound).
//
// 1. Enumerate: every TP x CP x PP x DP that divides the GPUs (TP up to one node by default; CP
//    in powers of two for transformers, where seq_len % (2 cp) == 0, up to PlanSpace::max_cp), EP
//    and ETP for mixture-of-experts models on Megatron-Core's expert grid (ETP 1 or TP, EP every
//    divisor of tp x cp x dp / ETP and of the expert count), every data-parallel flavour
//    the layout allows and the stack runs (the registry's DataParallelFlavour::planned and run_by:
//    Megatron-Core DDP, the distributed optimizer, FSDP2 without a pipeline; sharding over
//    dp x cp), micro-batch size, every pipeline schedule the stack runs
//    (PipelineScheduleFlavour::run_by: Megatron-Core 1F1B and interleaved with every v dividing
//    the layers per stage, or the layers + 2 with the embedding and the loss counted in the split,
//    planned_chunks), the stage split (the default split where the layers do not divide by pp,
//    and variants with the first or last stage one layer lighter),
//    activation recompute and DDP/ZeRO bucket size; strategy::validate rejects what the model or
//    batch cannot take (counted by reason). Sequence parallelism is on whenever tp > 1.
// 2. Prune by a memory lower bound that needs no simulation, on every stage: its parameters (by
//    block: embedding on the first stage, head on the last, routed experts divided by ep; TP taken
//    to split them all), sharded as the flavour shards them over dp x cp (routed experts over
//    dp x cp / ep), plus the activations of its layers (seq / cp tokens; an MoE layer's own
//    figure, with its routed token copies) for the micro-batches it must hold (m under GPipe,
//    p - s on stage s under 1F1B, 1 without a pipeline; under ZB-H1 stage s also holds the
//    linears' inputs of up to s micro-batches awaiting their W), plus what FSDP unshards (every
//    unit under SHARD_GRAD_OP, the largest under FULL_SHARD, and the unsharded gradients that
//    accumulate over no_sync micro-batches), the low-precision weight copies of an FP8 / FP4
//    recipe, and on the last stage one micro-batch's logits. A layout whose busiest stage's
//    bound exceeds the usable memory (the GPU's less PlanOptions::headroom) cannot fit.
// 3. Pricing: every survivor gets a closed-form step time (step_estimate.h: per-block op costs
//    from the simulator's own cost model, pipeline fill by schedule, data-parallel collectives
//    less the backward they hide under), microseconds each, and is ordered by it.
// 4. Fast level: the best-priced layouts are simulated with representative ranks and few
//    micro-batches (PlanOptions::simulate of them, more until `detailed` fit; while none fits,
//    on down the price order up to PlanOptions::fit_budget). Past pipeline
//    fill, a step is linear in the micro-batch count, so two short runs (p and p + 1
//    micro-batches, p and 2p interleaved, 1 and 2 without a pipeline, 2 and 3 for FSDP)
//    extrapolate step time and per-rank compute / exposed / idle time to the real count, exactly
//    for equal stages; peak memory grows with the count only under GPipe. A test checks fast
//    against detailed. A layout is skipped when its structure did not fit at a setting needing
//    no more memory.
//    Bucket sizes barely move a price: the fast level takes the best-priced one of each setting.
// 5. Detailed level: the best fast candidates are simulated with their real micro-batch count,
//    down the fast order until `detailed` fit; then the winner's other bucket sizes.
// Ranked: layouts that fit in the usable memory in their own simulation, by the objective. Two
// honest margins: layouts that differ only in bucket size and move the step by less than the
// expected error (PlanOptions::expected_error, the profile's measured MAPE) share one row
// (PlanResult::folded); the leading layouts within that error of the fastest tie
// (PlanResult::tied) and are ordered by robustness (memory left, exposed communication, bubble),
// not by a difference the model cannot resolve. Same input, same ranking (candidates are
// evaluated in parallel but ordered by value, then by enumeration order).
// A model whose per-op work cannot be built yet (MoE, MLA) is enumerated and pruned but not
// simulated: PlanResult::not_simulated says why.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace cs::driver {
struct SimulationResult;
}

namespace cs::planner {

struct PlanSpace {
  // 16: TorchTitan's Llama 3.1 70B on 256 H100 runs local batch 16 without accumulation.
  std::vector<int64_t> micro_batches{1, 2, 4, 8, 16};
  std::vector<Bytes> bucket_sizes{Bytes{25LL << 20}, Bytes{100LL << 20}};
  // Activation recompute to try; empty: the stack's options (planned_recompute).
  std::vector<model::Recompute> recompute;
  // Interleaved 1F1B with up to this many chunks per stage (1: no interleaving; 0: the stack's
  // default, PipelineScheduleFlavour::planned_chunks: Megatron-Core every v dividing the layers
  // per stage, others 2 .. 4).
  int max_virtual_stages = 0;
  // Tensor parallelism up to this size; 0: the GPUs of one node (beyond a node every layer's
  // all-gather and reduce-scatter cross the network; no published large run does it).
  int max_tp = 0;
  // Context parallelism in powers of two up to this size (1: none). 16 is the largest published
  // (Llama 3 405B at 128K tokens, Dubey et al. 2024, Table 4).
  int max_cp = 16;
  // Expert parallelism (MoE models only) up to this size; 0: every divisor of dp and the experts.
  int max_ep = 0;
  bool zero_bubble = true;  // ZB-H1 where the stack runs it (false: leave it out)
  // Beside the default split, the first stage, the last stage, or both one layer lighter (those
  // layers to the other stages, which must still split evenly): they carry the embedding and the
  // head and loss.
  bool uneven_variants = true;
};

// The activation recompute a stack offers, as the plan tries it by default:
//   megatron_core, deepspeed: none, selective (Megatron's --recompute-granularity selective: the
//     attention core) and full (--recompute-granularity full, every layer from its input);
//     Megatron-DeepSpeed takes Megatron-LM's flags.
//   torch_compile, pytorch_eager: none, op_selective and full: TorchTitan's
//     activation_checkpoint.mode none / selective with selective_ac_option "op" (its per-op
//     policy) / full. Neither offers Megatron's attention-core recompute.
//   ideal: every policy modelled (a bound).
std::vector<model::Recompute> planned_recompute(model::Stack s);
// The space's recompute options for a stack: PlanSpace::recompute, else planned_recompute.
std::vector<model::Recompute> recompute_options(const PlanSpace& space, model::Stack s);

struct Candidate {
  strategy::Layout layout;
  strategy::TrainingSpec training;
  // "tp8 pp4 dp16 zero1 mb1 interleaved(v2) rc:selective b:25MiB"; with cp, ep and an uneven
  // split: "tp8 cp2 pp16 dp64 zero1 mb1 zb_h1 rc:selective b:25MiB L7,8x14,7".
  std::string describe() const;
  // Decoder layers per stage when uneven ("7,8x14,7"); interleaved with the embedding and the loss
  // counted in the split, per model chunk ("1,2x62,1"); else empty.
  std::string split;
};

struct Enumeration {
  size_t considered = 0;                  // combinations generated
  std::vector<Candidate> candidates;      // the valid ones
  std::map<std::string, size_t> invalid;  // why the rest were rejected, by reason
};
Enumeration enumerate_layouts(const scenario::Scenario& base, const PlanSpace& space);

// Lower bound on the busiest rank's peak memory, in bytes, by part.
struct MemoryBound {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;
  // The low-precision copies of the weights an FP8 / FP4 recipe keeps for the step
  // (strategies/data_parallel/policy.cpp, alloc.fp8_weights), and the last stage's logits with
  // the loss's fp32 intermediates (Block::logits), held beside one micro-batch's activations.
  int64_t weight_copies = 0, logits = 0;
  int64_t reserve = 0;  // beside the tensors (strategies/memory_reserve.h)
  int64_t total() const {
    return parameters + gradients + optimizer_state + activations + weight_copies + logits +
           reserve;
  }
};
// Parameters by block (0: embedding, 1..L: decoder layers, L + 1: head and MTP modules; an MLP's
// layers are its blocks), routed experts apart (they divide by ep). `*_matrices`: of those, the
// decoder layers' tensor-parallel weight matrices, which a low-precision recipe copies.
struct BlockParameters {
  std::vector<int64_t> dense, routed;
  std::vector<int64_t> dense_matrices, routed_matrices;
};
BlockParameters block_parameters(const model::ModelSpec& m);
MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c);
MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c,
                               const BlockParameters& blocks);
// ZB-H1's held micro-batches on stage s of p with m micro-batches, at its peak (after a forward):
// {awaiting their B (full activations), awaiting their W (the linears' inputs)} =
// {min(p - s, m), min(s, max(0, m - p + s))}: the ZB-H1 schedule's held_at_peak
// (strategies/pipeline_schedule.cpp).
std::pair<int64_t, int64_t> zb_h1_held(int p, int s, int64_t m);
// A decoder layer's weight-gradient inputs per micro-batch (Block::weight_grad_inputs), which
// each micro-batch awaiting its W keeps under ZB-H1.
struct HeldActivations {
  int64_t weight_grad_inputs_per_layer = 0;
};
MemoryBound memory_lower_bound(const scenario::Scenario& base, const Candidate& c,
                               const BlockParameters& blocks, const HeldActivations* held);

struct Evaluation {
  size_t candidate = 0;   // index into Enumeration::candidates
  bool detailed = false;  // simulated with the real micro-batch count
  SimTime step_time;
  double tokens_per_second = 0;
  double mfu = 0;
  int64_t peak_memory = 0;
  int64_t memory_left = 0;  // usable memory (capacity less headroom) less the peak; 0: no limit
  std::array<int64_t, ir::kMemoryCategoryCount> at_peak{};
  bool fits = false;
  double bubble = 0;                             // largest pipeline-stage idle share
  SimTime compute, exposed_communication, idle;  // means over the simulated ranks
  std::string error;  // the simulation failed (a strategy or engine error): never ranked
};

// A simulation of candidate `candidate` summarised: per-rank means over the simulated ranks and
// the largest stage bubble; it fits when its peak leaves the headroom free (`capacity`: the
// usable memory, PlanResult::usable_memory; 0: the GPU's whole memory).
Evaluation summarise(const driver::SimulationResult& r, size_t candidate, bool detailed,
                     int64_t capacity);

// The figure that first tells two layouts' robustness apart, in the order ties are broken by:
// memory left where it is scarce (in whole GiB up to a tenth of the usable memory: a few MiB
// decide nothing, and beyond a tenth more free memory is no safer), exposed communication, bubble.
enum class RobustnessFigure : uint8_t { memory_left, exposed_communication, bubble, none };
RobustnessFigure robustness_difference(const Evaluation& a, const Evaluation& b);

enum class Objective : uint8_t { throughput, memory };

// What a layout must leave free of the GPU's memory beyond its simulated peak, which already holds
// the per-GPU reserve (strategies/memory_reserve.h: CUDA context, NCCL and cuBLAS buffers, the
// median fragmentation): a margin for the memory model's error and for runs fragmenting more than
// the median. A share of the capacity, or bytes when `bytes` >= 0.
struct MemoryHeadroom {
  // 5%: 4 GiB of an 80 GB H100, about the memory model's measured error (peak-memory MAPE 5.9%
  // on H100 runs, validate --suite); a judgement, not a fitted figure (--memory-headroom).
  double share = 0.05;
  int64_t bytes = -1;
  int64_t of(int64_t capacity) const {
    return bytes >= 0 ? bytes : static_cast<int64_t>(share * static_cast<double>(capacity));
  }
};

// The stack plan searches for when neither the request nor the scenario names one: the framework
// behind NVIDIA's published recipes (NeMo / Megatron-Bridge) and the one whose layouts (TP within a
// node, interleaved PP, distributed optimizer) most published large dense runs report, so that a
// plan is one a team can launch. Stack::ideal is a bound, asked for by name.
inline constexpr model::Stack kDefaultPlanStack = model::Stack::megatron_core;
// Sets the stack plan searches for on `base`: `requested` (--stack), else the scenario's when it
// names one (`scenario_names_stack`), else kDefaultPlanStack. Returns why, for the header.
std::string choose_plan_stack(scenario::Scenario& base, std::optional<model::Stack> requested,
                              bool scenario_names_stack);

struct PlanOptions {
  Objective objective = Objective::throughput;
  size_t detailed = 4;   // how many of the best fast candidates get the detailed level
  unsigned threads = 0;  // 0: every core
  // How many of the best-priced layouts get the fast level (more while fewer than `detailed`
  // of them fit, up to 4 x this many; past that, more while none fits, up to `fit_budget`).
  size_t simulate = 16;
  // The most layouts the fast level simulates looking for one that fits (about 25 s on 2 cores
  // for an 8-GPU MoE plan): where the price's best all exceed memory (the bound is a lower
  // bound: what it leaves out, such as FSDP's gradients waiting on a slow reduction, only the
  // simulation finds), the plan goes on down the price order rather than rank nothing.
  size_t fit_budget = 256;
  MemoryHeadroom headroom;
  // The model's expected step-time error, a share (0.09 for 9%): layouts within it of the
  // fastest tie and are ordered by robustness, and layouts differing only in bucket size within
  // it are folded into one row. The workflow takes it from the profile's validation figure
  // (driver::expected_step_error, the one the header quotes); 0: not measured, no ties.
  double expected_error = 0;
  // expected_error from the base's profile (driver::expected_step_error), as `plan` sets it.
  void take_expected_error(const scenario::Scenario& base);
  // Called as work completes: (stage "price" | "fast" | "detailed", done, total). From worker
  // threads, one call at a time; "fast" counts each batch on its own.
  std::function<void(const char*, size_t, size_t)> progress;
};

struct Pruned {
  size_t candidate = 0;
  MemoryBound bound;
  std::string reason;
};

// A survivor of the memory bound with its closed-form price.
struct Priced {
  size_t candidate = 0;
  double step_seconds = 0;   // StepEstimator's step time (infinity when it could not price it)
  int64_t memory_bound = 0;  // memory_lower_bound(...).total()
};

struct PlanResult {
  Enumeration enumeration;
  std::vector<Pruned> pruned;
  std::vector<Evaluation>
      evaluations;             // every simulated candidate, best fidelity, enumeration order
  std::vector<size_t> ranked;  // indices into evaluations: fitting, best first
  std::vector<size_t> pareto;  // indices into evaluations: throughput vs memory frontier
  // Set when nothing was simulated because the model's per-op work cannot be built (the reason).
  std::string not_simulated;
  std::vector<Priced> priced;  // every survivor of the memory bound, best first by the objective
  // Survivors the closed form could not price (an estimator error): ranked after every priced
  // one, in enumeration order, and said in the header with the first one's reason.
  size_t unpriced = 0;
  std::string first_unpriced_reason;
  // Layouts the fast level simulated in batches begun past 4 x PlanOptions::simulate because
  // none had fit yet (up to PlanOptions::fit_budget in all); 0 when the usual search found one.
  size_t simulated_looking_for_fit = 0;
  // The first `tied` of `ranked` are within the expected error of the fastest of them (a tie),
  // ordered by robustness: more memory left (in whole GiB), then less exposed communication,
  // then a smaller bubble. 1 without a tie; 0 when nothing fits.
  size_t tied = 0;
  // Layouts folded into a ranked row (index into evaluations -> the folded evaluations): they
  // differ from it only in bucket size and move the step by less than the expected error (or
  // kTieGap). They are not in `ranked`.
  std::map<size_t, std::vector<size_t>> folded;
  int64_t usable_memory = 0;  // the GPU's memory less the headroom: a layout must fit in it
  double seconds = 0;
  bool any_fits() const { return !ranked.empty(); }
  size_t out_of_memory() const;  // simulated and found not to fit
  size_t failed() const;         // whose simulation failed (see Evaluation::error)
  std::map<std::string, size_t> pruned_reasons() const;
};

PlanResult plan(const scenario::Scenario& base, const PlanSpace& space, const PlanOptions& options);

// The scenario with a candidate's layout and training set-up.
scenario::Scenario with_candidate(const scenario::Scenario& base, const Candidate& c);

}  // namespace cs::planner
