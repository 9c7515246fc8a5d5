// Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per rank, one
// thread per stream, complete ("X") events in microseconds, and memory as a counter ("C") track.
#pragma once

#include <ostream>
#include <string>

#include "sim/timeline.h"
#include "taskgraph/task_graph.h"

namespace cs::sim {

// `pid_offset` lets two timelines share one file (predicted and measured side by side).
void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const std::string& process_prefix = "rank", int pid_offset = 0);

}  // namespace cs::sim
