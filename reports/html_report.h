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
#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::reports {

inline constexpr size_t kTimelineRows = 16;  // ranks drawn in the timeline overview
inline constexpr size_t kSplitRows = 64;     // ranks drawn in the per-rank split

struct HtmlReportInput {
  std::string title;  // the scenario's name
  std::vector<std::pair<std::string, std::string>>
      facts;  // ("layout", "TP 8 x PP 4 ..."), shown in order
  const ir::TaskGraph* graph = nullptr;
  const sim::Timeline* timeline = nullptr;
  const sim::Report* report = nullptr;
  std::vector<std::string> bottleneck;  // explain_bottleneck()'s sentences
  // The whole training run at this step time (training_run::report_rows): days, cost, energy,
  // goodput under failures; empty: no section.
  std::vector<std::pair<std::string, std::string>> training_run;
};

void write_html_report(std::ostream& out, const HtmlReportInput& in);

// A table of text cells (the caller formats the figures).
struct HtmlTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// `plan --html`: every simulated layout as a point of step time against peak memory per GPU, the
// Pareto frontier (no other layout is both faster and leaner) joined and labelled, the device's
// capacity as a line, and the ranked table. Axes turn logarithmic where the points span a decade.
struct PlanPoint {
  std::string layout;
  double step_ms = 0;
  double memory_gib = 0;
  bool fits = false;
  bool frontier = false;
  size_t rank = 0;  // 1 = the winner; 0 = not ranked (does not fit)
};
struct PlanHtmlInput {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<PlanPoint> points;
  double capacity_gib = 0;
  HtmlTable ranked;
};
void write_plan_html(std::ostream& out, const PlanHtmlInput& in);

// `sweep --html`: the sweep's own SVG chart (planner/sweep.h: speedup on log-log axes over GPUs
// or nodes, the step-time split) inline, and the table.
struct SweepHtmlInput {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;
  std::string svg;
  HtmlTable table;
};
void write_sweep_html(std::ostream& out, const SweepHtmlInput& in);

// `compare --html`: the two scenarios' figures side by side and the keys that differ.
struct CompareHtmlInput {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;
  HtmlTable figures, changes;
};
void write_compare_html(std::ostream& out, const CompareHtmlInput& in);

// `validate --suite --html`: the summary table per source, an overview of every row's signed
// error (one lane and one colour per source), then per source a chart of measured against
// predicted per row (one line per row, so labels never overlap; a logarithmic value axis where
// the values span a decade) with the row table below it, and the error by profile and stack.
struct ValidateRow {
  int index = 0;  // in the source's table
  std::string label;
  bool run = false;
  double measured = 0, predicted = 0, error_percent = 0;  // predicted and error: run rows only
  std::string profile, stack;
  std::string note;  // a row not run: why (not expressible, or the out-of-memory verdict)
};
struct ValidateSource {
  std::string name, figure, unit;
  std::vector<ValidateRow> rows;
  double bound_worst = 0;  // 0: none; a row beyond it is marked
};
struct ValidateHtmlInput {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;
  HtmlTable summary;  // one line per source, in the order of `sources`
  std::vector<ValidateSource> sources;
  HtmlTable by_profile, by_profile_stack;
};
void write_validate_html(std::ostream& out, const ValidateHtmlInput& in);

}  // namespace cs::reports
