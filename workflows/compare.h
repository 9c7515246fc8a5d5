// `clustersim compare A.yaml B.yaml` (or `compare A.yaml --set key=value ...`, A against A with
// the change): both scenarios simulated, their step time, throughput, MFU, peak memory by
// category, exposed communication, bubble and bottleneck side by side, with the scenario keys
// that differ between the two files.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "driver/simulation.h"

namespace cs::workflows {

struct CompareRequest {
  std::string a_file, b_file;                       // b_file empty: A again, with set_b
  std::vector<scenario::KeyOverride> set_a, set_b;  // --set for A (simulate) and for B
  std::string json, html;                           // output paths (empty: none)
  std::string profile;                              // --profile / --no-profile, for both sides
  bool no_profile = false;
};

// One side's figures, as the simulate report states them.
struct CompareSide {
  std::string label;  // the file, and its --set changes
  std::string scenario, layout;
  int gpus = 0;
  SimTime step_time;
  double tokens_per_second = 0, mfu = 0;
  int64_t peak_memory = 0, capacity = 0;
  bool fits = true;
  // On the rank that reached the peak, by ir::MemoryCategory name ("parameters", ...).
  std::map<std::string, int64_t> memory_at_peak;
  SimTime exposed_communication;  // mean over ranks
  double bubble = 0;              // the largest stage's idle share of the step (0 without PP)
  std::string bottleneck;         // the first sentence of what bounds the step
};

// A key whose value differs ("" where one file has no such key).
struct KeyChange {
  std::string key, a, b;
};

struct Comparison {
  CompareSide a, b;
  std::vector<KeyChange> changes;
};

// The side of one simulated scenario.
CompareSide compare_side(const std::string& label, const driver::SimulationResult& r,
                         const driver::Platform& platform);
// The keys of `a` and `b` (scenario::scenario_keys) whose values differ, in key order.
std::vector<KeyChange> changed_keys(const std::map<std::string, std::string>& a,
                                    const std::map<std::string, std::string>& b);

Comparison compare_scenarios(const CompareRequest& request);
// Prints the comparison and writes the files the request names; throws UserError on bad input.
void compare(const CompareRequest& request, std::ostream& out);

void print_comparison(std::ostream& out, const Comparison& c);
void write_comparison_json(std::ostream& out, const Comparison& c);
void write_comparison_html(std::ostream& out, const Comparison& c);

}  // namespace cs::workflows
