// Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per rank, one
// thread per stream, complete ("X") events in microseconds, memory as a counter ("C") track
// stacked by category, flow arrows from each send to its receive and through each collective's
// participants (flow events v2: bind_id, flow_in, flow_out on the slices; the order and which
// arrows are drawn: sim/trace_selection.h), and, given the cost model, link utilisation counters
// by link kind. `--trace FILE.pftrace` writes the same content as Perfetto protobuf instead
// (sim/perfetto_trace.h).
//
// Streaming: events are formatted into 1 MiB blocks and written (or gzip-compressed) on a thread
// of their own as they are produced (sim/trace_text.h), so the writer's memory does not grow with
// the output (it holds O(graph) indexes: a collective's members, a transfer's ends, two counter
// deltas per communication). A path ending in ".gz" is written gzip-compressed (ISA-L's igzip at
// level 1, about as fast as the formatting; JSON traces shrink about fourteenfold).
// Filters: ranks by cluster rank ("0-7,16"); a time window in ms ("START:END"): an event is kept
// when its interval overlaps the window, counters restart at the window's start with the state
// then. A flow is drawn only when both its ends are kept.
// Link utilisation is the cost model's plan loads spread evenly over each communication's
// duration (exact in analytic fidelity; the flow model's per-phase timing is not kept), as the
// mean over the links of that kind that carried traffic in the step.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cost_models/cost_model.h"
#include "sim/report.h"
#include "taskgraph/task_graph.h"
#include "timeline/timeline.h"

namespace cs::sim {

struct TraceOptions {
  std::string process_prefix = "rank";
  int pid_offset = 0;  // lets two timelines share one file (predicted and measured side by side)
  std::vector<std::pair<ir::RankId, ir::RankId>>
      ranks;  // cluster-rank ranges kept (inclusive); empty: all
  std::optional<std::pair<SimTime, SimTime>> window;  // kept time window; none: the whole step
  bool flows = true;
  const cost::CostModel* costs = nullptr;  // with `links`: link utilisation counters
  const std::vector<LinkInfo>* links = nullptr;
};

// "0-7,16" -> {{0,7},{16,16}}; throws UserError naming the flag on anything else.
std::vector<std::pair<ir::RankId, ir::RankId>> parse_rank_ranges(const std::string& text);
// "START:END" in milliseconds (decimals allowed, END > START >= 0); throws UserError otherwise.
std::pair<SimTime, SimTime> parse_time_window(const std::string& text);

void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const TraceOptions& options);
void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const std::string& process_prefix = "rank", int pid_offset = 0);
// To a file, gzip-compressed when `path` ends in ".gz"; throws UserError when it cannot be written.
void write_chrome_trace_file(const std::string& path, const ir::TaskGraph& g, const Timeline& tl,
                             const TraceOptions& options);

}  // namespace cs::sim
