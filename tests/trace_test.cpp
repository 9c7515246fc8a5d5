// The Chrome trace of the seed 002 DDP scenario is valid trace-event JSON with one process per
// rank, one thread per stream, one complete event per non-memory task and a memory counter.
#include <gtest/gtest.h>

#include <algorithm>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "driver/simulation.h"
#include "sim/chrome_trace.h"

namespace cs {
namespace {

TEST(ChromeTrace, SeedDdpTraceHasTheExpectedStructure) {
  const auto s = scenario::load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/gpt2-large-2xh100-ddp.yaml");
  const auto r = driver::simulate(s, {.with_baseline = false});
  std::ostringstream out;
  sim::write_chrome_trace(out, r.step.graph, r.timeline);
  const auto doc = nlohmann::json::parse(out.str());  // throws on invalid JSON
  ASSERT_TRUE(doc.contains("traceEvents"));
  size_t complete = 0, counters = 0;
  double peak_gib = 0;  // the highest per-category sum among rank 0's memory counters
  std::set<int> processes;
  std::map<int, std::set<int>> threads;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name") processes.insert(e.at("pid").get<int>());
    if (ph == "M" && e.at("name") == "thread_name") threads[e.at("pid").get<int>()].insert(e.at("tid").get<int>());
    if (ph == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
      EXPECT_TRUE(e.at("name").is_string());
    }
    if (ph == "C") {
      ++counters;
      double sum = 0;
      for (const auto& [category, gib] : e.at("args").items()) sum += gib.get<double>();
      if (e.at("pid") == 0) peak_gib = std::max(peak_gib, sum);
    }
  }
  size_t memory_tasks = 0;
  for (const auto& t : r.step.graph.tasks()) memory_tasks += t.kind == ir::TaskKind::memory;
  EXPECT_EQ(processes, (std::set<int>{0, 1}));                       // two ranks
  EXPECT_EQ(threads[0], (std::set<int>{0, 1}));                      // compute and comm streams
  EXPECT_EQ(complete, r.step.graph.size() - memory_tasks);           // every other task once
  EXPECT_EQ(counters, memory_tasks);                                 // one sample per memory change
  // The stacked categories reach exactly the reported peak.
  EXPECT_NEAR(peak_gib, static_cast<double>(r.report.ranks[0].memory.peak) / (1 << 30), 1e-9);

  // Determinism, byte for byte: a second simulation writes the identical trace.
  const auto again = driver::simulate(s, {.with_baseline = false});
  std::ostringstream out2;
  sim::write_chrome_trace(out2, again.step.graph, again.timeline);
  EXPECT_EQ(out.str(), out2.str());
}

}  // namespace
}  // namespace cs
