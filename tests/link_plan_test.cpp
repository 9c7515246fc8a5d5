// A phase's loads (cost::LoadList) are shared between the plans that hold them; a scaled list
// reads its weights through the scale and leaves the list it came from as it was.
#include "cost_models/link_plan.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/flow_network.h"

namespace cs {
namespace {

std::vector<double> weights(const cost::LoadList& l) {
  std::vector<double> w;
  for (const cost::LinkLoad& x : l) w.push_back(x.weight);
  return w;
}

TEST(LoadList, AScaledListLeavesTheOriginalAsItWas) {
  const cost::LoadList a{{0, 1.0, 2.0}, {3, 4.0, 5.0}};
  const cost::LoadList b = a.scaled(3.0);
  EXPECT_EQ(weights(a), (std::vector<double>{2.0, 5.0}));
  EXPECT_EQ(weights(b), (std::vector<double>{6.0, 15.0}));  // 2 x 3, 5 x 3
  // Links and payloads are not scaled: only the capacity each unit takes.
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].link, 3u);
  EXPECT_EQ(b[1].bytes, 4.0);
  EXPECT_EQ(b[1].weight, 15.0);
  // Scaled twice: (w x 3) x 0.5, as two scalings in place gave.
  const cost::LoadList c = b.scaled(0.5);
  EXPECT_EQ(weights(c), (std::vector<double>{3.0, 7.5}));
  EXPECT_EQ(weights(b), (std::vector<double>{6.0, 15.0}));
  EXPECT_TRUE(cost::LoadList{}.empty());
  EXPECT_EQ(weights(cost::LoadList{}), std::vector<double>{});
}

TEST(LoadList, AFlowRunsAtTheRateOfItsScaledWeights) {
  // Link 0 carries 12 B/s, link 3 30 B/s. Scaled by 3 the weights are 6 and 15 per unit: alone,
  // the flow runs at min(12 / 6, 30 / 15) = 2 units/s; unscaled it would be min(6, 6) = 6.
  sim::FlowNetwork net({12.0, 1.0, 1.0, 30.0});
  const cost::LoadList a{{0, 1.0, 2.0}, {3, 4.0, 5.0}};
  const auto f = net.start(SimTime{}, 10.0, a.scaled(3.0));
  EXPECT_DOUBLE_EQ(net.rate(f), 2.0);
  EXPECT_EQ(net.next_completion(), SimTime::from_seconds(5.0));  // 10 units at 2 units/s
}

}  // namespace
}  // namespace cs
