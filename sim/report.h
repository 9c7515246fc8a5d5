// The figures a person reads off a run: step time, throughput, MFU, per-rank busy / exposed
// communication / idle time and overlap, collective counts, and memory with an OOM verdict.
//
// Definitions (per rank, over one step of length T):
//   compute       = length of the union of compute-task intervals
//   communication = length of the union of collective / send / recv intervals (after rendezvous)
//   exposed comm  = |compute U communication| - compute  (communication with no compute under it)
//   idle          = T - |compute U communication|        (includes waiting for peers)
//   overlap %     = 1 - exposed / communication
//   peer wait     = sum over collectives and sends of start - ready (receives are posted ahead)
//   bubble        = idle / T averaged over a pipeline stage's ranks (with equal stage times and
//                   free communication this is the (p-1)/(m+p-1) of GPipe and 1F1B)
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::sim {

struct RankReport {
  ir::RankId cluster_rank = 0;  // the GPU this (possibly representative) rank is
  int stage = 0;                // pipeline stage
  SimTime compute, communication, exposed_communication, idle, peer_wait;
  double overlap_percent = 100.0;
  RankMemory memory;
};

struct CollectiveStat {
  int64_t calls = 0;  // on rank 0's side (one per collective rank 0 joins)
  Bytes bytes;
  SimTime time;
};

// A topology link's kind as the report groups links: "nvlink", "pcie", "infiniband", ... (static
// storage: topo::to_string's).
struct LinkInfo {
  std::string_view kind;
};
// A link's name, "n0.gpu3 -> n0.nvswitch", made when asked: a 131,072-GPU cluster has two million
// directed links, and a report names the few it prints (the JSON all that carried traffic).
using LinkNamer = std::function<std::string(uint32_t link)>;

// What one directed link carried over the step. utilisation = busy / step time, where busy is
// the time its capacity was taken (payload and protocol overhead at full rate).
struct LinkUtilisation {
  uint32_t link = 0;
  std::string_view kind;  // LinkInfo's
  double bytes = 0;
  double busy_seconds = 0;
  double utilisation = 0;
};

struct LinkKindSummary {
  int links = 0;  // links of this kind that carried traffic
  double bytes = 0;
  double mean_utilisation = 0;
  double max_utilisation = 0;
};

struct WorkloadFacts {  // what the strategy knows about the step, passed in as plain numbers
  double tokens_per_step = 0;
  double samples_per_step = 0;
  Flops model_flops_per_step;
  FlopsPerSecond peak_flops_per_gpu;
  Bytes memory_capacity;
  std::vector<int> stage_of_rank;  // pipeline stage of each graph rank (empty: all stage 0)
  const std::vector<LinkInfo>* links = nullptr;  // by topology link index (null: no link report)
  LinkNamer link_name;                           // with `links`
};

struct StageReport {
  SimTime idle;  // mean over the stage's ranks
};

struct Report {
  SimTime step_time;
  double tokens_per_second = 0;
  double samples_per_second = 0;
  double mfu = 0;                   // model FLOPs / (step time x GPUs x dense peak)
  std::vector<RankReport> ranks;    // per graph rank (one per stage with representative ranks)
  std::vector<StageReport> stages;  // per pipeline stage
  std::map<std::string, CollectiveStat> collectives;  // by collective type
  int64_t peak_memory = 0;                            // the highest rank peak
  size_t peak_index = 0;  // index into `ranks` of the rank that reached it
  Bytes memory_capacity;
  bool fits = true;
  size_t tasks = 0;
  std::vector<LinkUtilisation> links;                 // links that carried traffic, busiest first
  std::map<std::string, LinkKindSummary> link_kinds;  // by link kind
  LinkNamer link_name;                                // names `links`' entries

  // Idle share of the step on a pipeline stage: its bubble.
  double bubble_fraction(size_t stage) const {
    return step_time.ps > 0
               ? static_cast<double>(stages[stage].idle.ps) / static_cast<double>(step_time.ps)
               : 0.0;
  }
};

Report make_report(const ir::TaskGraph& g, const Timeline& tl, const WorkloadFacts& facts);

// The report with another step time than its timeline's span (a measured run reports the median
// period across its steps, not the span of the one step shown): throughput and MFU follow it, as
// rates per step time; the rest (per-rank times, bubbles' idle time, memory) stays the shown
// step's. No change when either step time is zero.
void set_step_time(Report& r, SimTime step_time);

// Per-rank compute, exposed communication and idle time, averaged over the report's ranks.
struct MeanRankTimes {
  SimTime compute, exposed_communication, idle;
};
MeanRankTimes mean_rank_times(const Report& r);

}  // namespace cs::sim
