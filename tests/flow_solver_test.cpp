// The flow network's incremental max-min solver (sim/flow_network.cpp) against a full progressive
// filling written here from its definition, and one allocation derived by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sim/flow_network.h"

namespace cs {
namespace {

using Loads = std::vector<cost::LinkLoad>;

// Weighted max-min fair rates by progressive filling over every link: all unfrozen flows grow
// together until a link is full (what is left would not move its flows by a relative 1e-9); the
// flows on a full link freeze.
std::vector<double> full_solve(const std::vector<double>& capacity,
                               const std::vector<const Loads*>& flows) {
  std::vector<double> rate(flows.size(), 0.0), residual = capacity;
  std::vector<char> frozen(flows.size(), 0);
  for (size_t f = 0; f < flows.size(); ++f) {
    if (flows[f]->empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
    }
  }
  while (std::find(frozen.begin(), frozen.end(), 0) != frozen.end()) {
    std::vector<double> weight(capacity.size(), 0.0);
    for (size_t f = 0; f < flows.size(); ++f) {
      if (!frozen[f])
        for (const cost::LinkLoad& l : *flows[f]) weight[l.link] += l.weight;
    }
    double step = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacity.size(); ++l) {
      if (weight[l] > 0) step = std::min(step, residual[l] / weight[l]);
    }
    if (std::isinf(step)) {  // the unfrozen flows load no link with any weight: unlimited
      for (size_t f = 0; f < flows.size(); ++f) {
        if (!frozen[f]) rate[f] = step;
      }
      break;
    }
    std::vector<char> full(capacity.size(), 0);
    for (size_t l = 0; l < capacity.size(); ++l) {
      residual[l] -= step * weight[l];
      full[l] = weight[l] > 0 && residual[l] <= 1e-9 * capacity[l];
    }
    for (size_t f = 0; f < flows.size(); ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (const cost::LinkLoad& l : *flows[f]) frozen[f] |= full[l.link];
    }
  }
  return rate;
}

TEST(FlowSolver, AFlowsOwnTightLinkFreezesItBeforeTheLinkItShares) {
  // Links A 10, B 3, C 10 (bytes/s). Flow 1 loads A and B, flow 2 A, flow 3 C at weight 2.
  // B alone holds flow 1 to 3; A then leaves 10 - 3 = 7 to flow 2; C holds flow 3 to 10 / 2 = 5.
  sim::FlowNetwork net({10, 3, 10});
  const Loads ab{{0, 1, 1}, {1, 1, 1}}, a{{0, 1, 1}}, c{{2, 1, 2}};
  const auto f1 = net.start(SimTime{}, 3, ab);  // done after 3 / 3 = 1 s
  const auto f2 = net.start(SimTime{}, 70, a);
  const auto f3 = net.start(SimTime{}, 10, c);  // 2 s
  EXPECT_DOUBLE_EQ(net.rate(f1), 3);
  EXPECT_DOUBLE_EQ(net.rate(f2), 7);
  EXPECT_DOUBLE_EQ(net.rate(f3), 5);
  // Flow 1 ends at 1 s: A is flow 2's alone, all 10 of it; flow 3 is unchanged.
  const auto done = net.advance(net.next_completion());
  ASSERT_EQ(done, std::vector<sim::FlowNetwork::FlowId>{f1});
  EXPECT_EQ(net.next_completion(), SimTime::from_seconds(2));
  EXPECT_DOUBLE_EQ(net.rate(f2), 10);
  EXPECT_DOUBLE_EQ(net.rate(f3), 5);
}

TEST(FlowSolver, IncrementalRatesMatchTheFullSolveAsFlowsComeAndGo) {
  // 400 random flows over 60 links of 1-100 bytes/s (a third of the links ten times tighter),
  // each loading 1-12 links at weights 0.25-4, some with a zero weight; started in bursts and
  // run to their completions. After every start and every completion, each active flow's rate
  // must be the full solve's.
  std::mt19937_64 gen(20261128);  // raw engine output only: the same numbers everywhere
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(gen() >> 11) * 0x1.0p-53;
  };
  const size_t links = 60;
  std::vector<double> capacity(links);
  for (size_t l = 0; l < links; ++l) capacity[l] = uniform(1, 100) * (l % 3 == 0 ? 0.1 : 1.0);
  std::vector<Loads> loads(400);
  for (Loads& f : loads) {
    const size_t n = 1 + gen() % 12;
    std::vector<uint32_t> picked;
    while (picked.size() < n) {
      const auto l = static_cast<uint32_t>(gen() % links);
      if (std::find(picked.begin(), picked.end(), l) == picked.end()) picked.push_back(l);
    }
    std::sort(picked.begin(), picked.end());
    for (uint32_t l : picked) f.push_back({l, 1, gen() % 10 == 0 ? 0.0 : uniform(0.25, 4)});
  }
  sim::FlowNetwork net(capacity);
  std::vector<sim::FlowNetwork::FlowId> active;
  std::vector<const Loads*> active_loads;
  size_t checks = 0;
  auto check = [&] {
    const std::vector<double> want = full_solve(capacity, active_loads);
    for (size_t i = 0; i < active.size(); ++i) {
      if (std::isinf(want[i]))
        EXPECT_TRUE(std::isinf(net.rate(active[i]))) << "flow " << active[i];
      else
        EXPECT_NEAR(net.rate(active[i]), want[i], 1e-9 * want[i]) << "flow " << active[i];
    }
    ++checks;
  };
  SimTime now{};
  size_t next = 0;
  while (next < loads.size() || !active.empty()) {
    // A burst of up to 6 starts, then time runs to the next completion (or 0.5 s on).
    for (size_t b = gen() % 7; b > 0 && next < loads.size(); --b, ++next) {
      active.push_back(net.start(now, uniform(1, 50), loads[next]));
      active_loads.push_back(&loads[next]);
      check();
    }
    const SimTime later = now + SimTime::from_seconds(0.5);
    if (net.idle()) {
      now = later;
      continue;
    }
    now = std::min(later, net.next_completion());
    const auto done = net.advance(now);
    for (auto f : done) {
      const auto it = std::find(active.begin(), active.end(), f);
      ASSERT_NE(it, active.end());
      active_loads.erase(active_loads.begin() + (it - active.begin()));
      active.erase(it);
    }
    if (!done.empty()) check();
  }
  EXPECT_GT(checks, 400u);  // every start was checked, and completions beside them
}

}  // namespace
}  // namespace cs
