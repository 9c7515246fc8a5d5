// Data parallelism as a policy the step builder calls at fixed points of a rank's step. One
// policy per flavour (ASTRA-sim keeps one class per collective algorithm; we keep one per
// data-parallel flavour), so the builder never asks which flavour it runs:
//
//   make_units        group a stage's parameters into gradient-sync units
//   begin_rank        model state at rest (ZeRO's accounting) and the flavour's own buffers
//   syncs             whether micro-batch mb synchronises gradients (no_sync before the last)
//   before_forward / after_forward / before_backward / after_backward
//                     parameter use around each block (FSDP gathers and reshards)
//   gradients_ready   parameters' gradients are complete; a unit syncs with its last one
//   optimizer_params  parameters this rank's optimizer steps (sharded under ZeRO)
//   after_optimizer   after the step (ZeRO-1/2 gather the updated parameters)
//
// Flavours: ddp.cpp (DDP bucketed and flat), zero.cpp (ZeRO-1, ZeRO-2), fsdp.cpp (FULL_SHARD,
// SHARD_GRAD_OP), each beside its entry in the registry (flavour.h) that answers the rest. With
// dp = 1 every policy emits no communication and keeps whole state.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model_work.h"
#include "strategies/layout.h"
#include "strategies/model_state.h"
#include "strategies/stage_plan.h"
#include "strategies/step_emitter.h"

namespace cs::strategy {

struct PolicyContext {
  Layout layout;
  model::PrecisionInfo precision{};
  // Bytes of a gradient element in the data-parallel reduction
  // (DataParallelFlavour::reduced_gradient_bytes): FSDP2 reduces 16-bit gradients in fp32.
  int64_t reduce_bytes = 0;
  const std::vector<model::ParameterTensor>* params =
      nullptr;              // global ids (with a tied copy, if any)
  int blocks = 0;           // model blocks
  bool transformer = true;  // blocks 0 and blocks-1 are the embedding and the head
  int64_t micro_batches = 1;
  int gradient_ranks = 1;          // ranks sharing the parameters: dp x cp
  int expert_gradient_ranks = 1;   // ranks sharing a routed expert: dp x cp / ep
  ir::StreamId gather_stream = 0;  // parameter gathers (ZeRO / FSDP)
  bool overlap_param_gather =
      false;  // ZeRO-1/2: gather at the step's start, forward waits per bucket
  std::function<int(int)> layer_of;  // block -> layer label
  // PyTorch autograd on one rank, no data-parallel wrapper (training_step.cpp): each .grad is
  // allocated when backward first writes it and freed by zero_grad(set_to_none=True) after the
  // step, instead of a gradient buffer held all step (DDP's buckets, Megatron's grad buffer).
  bool lazy_gradients = false;
  // The framework: under DeepSpeed, FULL_SHARD is ZeRO stage 3 and reduces as DeepSpeed does
  // (fsdp.cpp).
  model::Stack stack = model::Stack::ideal;
};

class DataParallelPolicy {
 public:
  DataParallelPolicy(const PolicyContext& c, StepEmitter& e) : ctx_(c), e_(e) {}
  virtual ~DataParallelPolicy() = default;

  virtual SyncUnits make_units(const Stage& st) const = 0;
  virtual void begin_rank(RankState& r, const Stage& st);
  virtual bool syncs(int mb) const;
  virtual void before_forward(RankState&, const Stage&, int /*block*/, int /*mb*/) {}
  virtual void after_forward(RankState&, const Stage&, int /*block*/, int /*mb*/) {}
  // `pos` indexes `blocks` (one model chunk, forward order) at the block whose backward starts.
  virtual void before_backward(RankState&, const Stage&, const std::vector<int>& /*blocks*/,
                               size_t /*pos*/, int /*mb*/) {}
  virtual void after_backward(RankState&, const Stage&, int /*block*/, bool /*sync*/, int /*mb*/) {}
  // The gradients of `params` are complete at `producer` (one op's; an MoE layer's expert GEMM
  // completes hundreds, mostly of one unit, taken a run of one unit at a time).
  void gradients_ready(RankState& r, const Stage& st, const std::vector<int>& params,
                       TaskId producer, bool sync, int layer, int mb);
  virtual int64_t optimizer_params(const Stage& st) const { return st.trained_numel(); }
  virtual void after_optimizer(RankState&, const Stage&, TaskId /*optimizer*/) {}
  // zero_grad(set_to_none=True) under lazy_gradients: the gradients backward allocated are freed.
  void free_lazy_gradients(RankState& r, const Stage& st);

 protected:
  // Unit u's last gradient of micro-batch mb is ready (after `producer`).
  virtual void unit_complete(RankState& r, const Stage& st, int u, TaskId producer, bool sync,
                             int layer, int mb) = 0;
  // Unsharded gradients held only while their unit is being reduced (ZeRO-2, FSDP).
  virtual bool transient_gradients() const { return false; }
  // The model state a rank holds when the step starts, from the ZeRO paper's accounting
  // (model_state.h); a flavour whose framework keeps it otherwise says so.
  virtual ModelState resting_state(const ModelState& s) const { return s; }
  // Whether a unit's gradients are still copied when no other rank shares them (FSDP2's
  // chunk_cat runs at world size 1): unit_complete is then called for a one-rank unit too.
  virtual bool copies_gradients_alone() const { return false; }
  virtual std::string unit_tag(int u) const { return "dp.bucket" + std::to_string(u); }

  // PyTorch DDP's buckets over the stage's trainable parameters (DDP and ZeRO-1/2 use them);
  // routed experts' parameters are bucketed apart (Megatron keeps a separate expert gradient
  // buffer).
  SyncUnits bucket_units(const Stage& st) const;
  // Fills unit_of_param from the units' parameter lists.
  void index_units(SyncUnits& s) const;

  // A memory-bound pass over gradient bytes on the compute stream, after `after`.
  TaskId gradient_pass(RankState& r, ir::OpClass cls, int64_t bytes, const std::string& name,
                       int layer, int mb);
  // Reduces unit u's gradients on the gradient stream after `after` and, for transient
  // gradients, frees them; the optimizer waits for both. Returns the collective.
  // The unit's gradients reduced by `type`, `bytes` on the wire (default: the unit's own).
  TaskId reduce_unit(RankState& r, const Stage& st, int u, ir::CollectiveType type, TaskId after,
                     int layer, int mb, std::optional<Bytes> bytes = std::nullopt);
  // Frees unit u's unsharded gradients (transient_gradients()) on the gradient stream, after
  // what was last issued there; the optimizer waits for it.
  void free_unsharded_gradients(RankState& r, const Stage& st, int u, int layer, int mb);
  int64_t unit_param_bytes(const Bucket& u) const {
    return u.bytes.count / ctx_.precision.grad_bytes * ctx_.precision.weight_bytes;
  }
  // Ranks the gradients are averaged and the state sharded over (dp x cp), and for routed
  // experts (dp x cp / ep).
  int dp() const { return ctx_.gradient_ranks; }
  int expert_dp() const { return ctx_.expert_gradient_ranks; }
  // A unit's gradient group and its size.
  ir::GroupId group_of(const RankState& r, const Bucket& u) const {
    return u.experts ? r.expert_dp_group : r.dp_group;
  }
  int ranks_of(const Bucket& u) const { return u.experts ? expert_dp() : dp(); }
  // Parameters this rank steps when the optimizer state is sharded over the gradient groups.
  int64_t sharded_params(const Stage& st) const;

  PolicyContext ctx_;
  StepEmitter& e_;

 private:
  // `count` more of unit u's gradients complete at `producer`.
  void unit_gradients_ready(RankState& r, const Stage& st, int u, int count, TaskId producer,
                            bool sync, int layer, int mb);
  std::map<int, std::vector<int>> remaining_;  // per micro-batch, per unit: gradients to complete
  std::vector<bool> grad_held_;                // per unit: unsharded gradient allocated
};

// The policy of the context's layout.data_parallel (its flavour's, data_parallel/flavour.h).
std::unique_ptr<DataParallelPolicy> make_data_parallel_policy(const PolicyContext& c,
                                                              StepEmitter& e);

}  // namespace cs::strategy
