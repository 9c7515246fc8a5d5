// What `clustersim plan` says about a plan beyond its ranking, computed from a PlanResult: why the
// winner beats the runner-up, the leanest layout when none fits, and which pipeline and expert
// sizes the layouts that passed the memory bound have. Figures only; cli/plan_command.cpp words
// and prints them. Tests: tests/plan_summary_test.cpp (hand-built results).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "planner/planner.h"

namespace cs::planner {

// The component of the step that separates the winner from the runner-up.
enum class WinReason : uint8_t {
  only_fit,          // no runner-up: the winner is the only layout that fits
  tie_lower_memory,  // as fast (within kTieGap), and leaner
  tie_order,         // as fast and not leaner: first in enumeration order
  // Within the expected error of each other (PlanResult::tied): ranked first for robustness.
  more_memory_left,
  less_exposed_when_tied,
  smaller_bubble_when_tied,
  less_compute,  // compute moved the most
  less_exposed_communication,
  less_idle,  // pipeline bubble and waiting
};

// Step times within this share of each other are a tie (0.05%: below the fast level's error).
inline constexpr double kTieGap = 5e-4;

struct WinnerVerdict {
  WinReason reason = WinReason::only_fit;
  // (runner-up step - winner step) / runner-up step; 0 without a runner-up.
  double gap = 0;
};

// The verdict on ranked[0] against ranked[1]: within the expected error of each other, which
// robustness figure put the winner first (PlanResult::tied); else, where two components moved
// equally, exposed communication is named before idle time, idle time before compute. Needs
// r.any_fits().
WinnerVerdict winner_verdict(const PlanResult& r);

// The leanest layout found when nothing fits: the simulated one with the smallest peak, else
// (nothing simulated) the pruned one with the smallest memory lower bound.
struct LeanestLayout {
  size_t candidate = 0;     // index into r.enumeration.candidates
  int64_t peak_memory = 0;  // bytes: the simulated peak, or the lower bound
  std::array<int64_t, ir::kMemoryCategoryCount> at_peak{};  // the same by category
  bool lower_bound = false;  // from the memory bound, not a simulation
};
std::optional<LeanestLayout> leanest_layout(const PlanResult& r);

// The category holding the most bytes (the first of equals).
ir::MemoryCategory dominant_category(const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak);

// The layouts that passed the memory bound, counted by (pp, ep).
std::map<std::pair<int, int>, size_t> survivors_by_pp_ep(const PlanResult& r);

}  // namespace cs::planner
