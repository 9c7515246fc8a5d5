// What bounds a simulated step, in words ("step bound by compute ...; infiniband links at 4%
// (busiest 6%) and 0.1% of the step waits on them: more InfiniBand bandwidth will not help").
//
// Figures (bottleneck_figures): the critical path split by class (sim/critical_path.h); each kind
// of communication's exposed time (its task intervals with no compute of its rank under them,
// mean over the simulated ranks; two overlapping transfers both count) keyed by parallelism (from
// the stream's name: dp.* data-parallel, pp.* pipeline, cp.* context-parallel, collectives on the
// compute stream tensor-parallel, all_to_all there expert-parallel), operation, and the link kind
// that limits it (the kind of the link with the most busy time in its cost-model plan); link
// utilisation by kind from the Report.
// Verdict (explain_bottleneck): the largest critical-path share names the bound; the largest
// exposed communication is named when communication is over kMentionShare of the path; every
// network link kind (infiniband, ethernet) gets a line saying whether more of its bandwidth can
// help: not when its busiest link is under kBusyLink and the communication it limits is exposed
// for under kExposedShare of the step. Thresholds are judgement, not calibration.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "cost_models/cost_model.h"
#include "sim/critical_path.h"
#include "sim/report.h"
#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::reports {

inline constexpr double kMentionShare =
    0.10;                                  // communication share of the critical path worth naming
inline constexpr double kBusyLink = 0.50;  // a link busier than this may be what limits
inline constexpr double kExposedShare = 0.05;  // exposed time over a link kind that matters

struct ExposedComm {
  std::string parallelism;  // "tensor-parallel", "data-parallel", "pipeline", ...
  std::string operation;    // "all_reduce", ..., "send/recv"
  std::string link_kind;    // the limiting link kind ("nvlink", "infiniband"; "" when unknown)
  SimTime exposed;          // mean over ranks
};

struct BottleneckFigures {
  SimTime step_time;
  std::array<SimTime, sim::kPathClassCount> critical_path{};  // by sim::PathClass
  std::vector<ExposedComm> communication;                     // largest exposed first
  std::map<std::string, sim::LinkKindSummary> link_kinds;     // as in the Report
};

// `costs` and `links` (optional) name the limiting link kind of each communication.
BottleneckFigures bottleneck_figures(const ir::TaskGraph& g, const sim::Timeline& tl,
                                     const sim::Report& report,
                                     const cost::CostModel* costs = nullptr,
                                     const std::vector<sim::LinkInfo>* links = nullptr);

// One to four sentences, the bound first.
std::vector<std::string> explain_bottleneck(const BottleneckFigures& f);

// "nvlink" -> "NVLink", "infiniband" -> "InfiniBand", "pcie" -> "PCIe"; other names unchanged.
std::string link_kind_title(const std::string& kind);
bool is_network_link(const std::string& kind);  // between nodes: infiniband, ethernet

}  // namespace cs::reports
