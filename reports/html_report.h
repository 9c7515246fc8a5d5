// One self-contained HTML file for a simulated step: key figures, the bottleneck in words, and
// three inline SVG charts (no network, no external script or font):
//   - step time per rank split into compute / exposed communication / idle (stacked bars),
//   - a timeline overview (compute by phase, communication below it) of up to kTimelineRows ranks,
//   - memory over time on the peak rank, stacked by category, with the device capacity line.
// Charts are drawn at a fixed pixel width: intervals closer than a pixel merge and memory is
// sampled at its highest point within each pixel column, so the file stays under a few hundred
// KB whatever the graph size. The only script shows a hovered element's figures; it sets
// data-ready on <body> once it has run (the headless-browser test checks this).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/report.h"
#include "sim/timeline.h"
#include "taskgraph/task_graph.h"

namespace cs::reports {

inline constexpr size_t kTimelineRows = 16;   // ranks drawn in the timeline overview
inline constexpr size_t kSplitRows = 64;      // ranks drawn in the per-rank split

struct HtmlReportInput {
  std::string title;                                     // the scenario's name
  std::vector<std::pair<std::string, std::string>> facts;  // ("layout", "TP 8 x PP 4 ..."), shown in order
  const ir::TaskGraph* graph = nullptr;
  const sim::Timeline* timeline = nullptr;
  const sim::Report* report = nullptr;
  std::vector<std::string> bottleneck;                   // explain_bottleneck()'s sentences
};

void write_html_report(std::ostream& out, const HtmlReportInput& in);

}  // namespace cs::reports
