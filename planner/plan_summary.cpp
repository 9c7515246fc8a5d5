#include "planner/plan_summary.h"

#include <climits>
#include <vector>

namespace cs::planner {

WinnerVerdict winner_verdict(const PlanResult& r) {
  if (r.ranked.size() < 2) return {WinReason::only_fit, 0};
  const Evaluation& w = r.evaluations[r.ranked[0]];
  const Evaluation& u = r.evaluations[r.ranked[1]];
  const double gap = (u.step_time - w.step_time).seconds() / u.step_time.seconds();
  if (r.tied >= 2) {
    switch (robustness_difference(w, u)) {
      case RobustnessFigure::memory_left:
        return {WinReason::more_memory_left, gap};
      case RobustnessFigure::exposed_communication:
        return {WinReason::less_exposed_when_tied, gap};
      case RobustnessFigure::bubble:
        return {WinReason::smaller_bubble_when_tied, gap};
      case RobustnessFigure::none:
        break;
    }
  }
  if (gap < kTieGap)
    return {w.peak_memory < u.peak_memory ? WinReason::tie_lower_memory : WinReason::tie_order,
            gap};
  const int64_t dc = (u.compute - w.compute).ps,
                de = (u.exposed_communication - w.exposed_communication).ps,
                di = (u.idle - w.idle).ps;
  if (de >= dc && de >= di) return {WinReason::less_exposed_communication, gap};
  if (di >= dc && di >= de) return {WinReason::less_idle, gap};
  return {WinReason::less_compute, gap};
}

std::optional<LeanestLayout> leanest_layout(const PlanResult& r) {
  std::optional<LeanestLayout> out;
  for (const Evaluation& e : r.evaluations) {
    if (!out || e.peak_memory < out->peak_memory)
      out = LeanestLayout{e.candidate, e.peak_memory, e.at_peak, false};
  }
  if (out) return out;
  for (const Pruned& p : r.pruned) {
    if (out && p.bound.total() >= out->peak_memory) continue;
    LeanestLayout l{p.candidate, p.bound.total(), {}, true};
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::parameters)] = p.bound.parameters;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::gradients)] = p.bound.gradients;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::optimizer_state)] = p.bound.optimizer_state;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::activations)] = p.bound.activations;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::workspace)] = p.bound.weight_copies;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::logits)] = p.bound.logits;
    l.at_peak[static_cast<size_t>(ir::MemoryCategory::reserve)] = p.bound.reserve;
    out = l;
  }
  return out;
}

ir::MemoryCategory dominant_category(const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak) {
  size_t best = 0;
  for (size_t c = 1; c < at_peak.size(); ++c) {
    if (at_peak[c] > at_peak[best]) best = c;
  }
  return static_cast<ir::MemoryCategory>(best);
}

std::map<std::pair<int, int>, size_t> survivors_by_pp_ep(const PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  std::vector<bool> pruned(cands.size(), false);
  for (const Pruned& p : r.pruned) pruned[p.candidate] = true;
  std::map<std::pair<int, int>, size_t> out;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!pruned[i]) ++out[{cands[i].layout.pp, cands[i].layout.ep}];
  }
  return out;
}

}  // namespace cs::planner
