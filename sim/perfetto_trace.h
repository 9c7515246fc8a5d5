// The step as a Perfetto protobuf trace (`--trace FILE.pftrace`): the same content as the Chrome
// JSON trace (sim/chrome_trace.h) in about a third of the bytes, for traces too large for JSON (a
// 64-GPU step with every rank is 15 million slices: 3.8 GB of JSON, 1.4 GB of protobuf, which is
// also Perfetto's own format and the cheaper one for its reader to load).
//
// Encoding (protos/perfetto/trace/ in google/perfetto; the subset used is restated in
// tests/perfetto_trace_subset.proto, with Perfetto's field numbers):
//   - one packet sequence (trusted_packet_sequence_id 1); its first packet clears the incremental
//     state, later packets that use interned strings say they need it;
//   - a TrackDescriptor per rank (a process: pid = rank + pid offset, named as in the JSON), per
//     stream of a rank (a named child track) and per memory category of a rank (a counter track
//     "memory GiB <category>"); a "network" process with a counter track per link kind
//     ("link utilisation % <kind>");
//   - a task is a TYPE_SLICE_BEGIN and a TYPE_SLICE_END TrackEvent on its stream's track, at the
//     start and end rounded to the nanosecond (Perfetto's resolution), with its name and category
//     (the task kind) interned, and its arguments as debug annotations with the JSON's names;
//   - flow arrows as flow_ids (begin or pass through) and terminating_flow_ids (end), with the
//     same arrows as the JSON (sim/trace_selection.h);
//   - counters as TYPE_COUNTER events carrying a double, only for the series that changed.
// Written block by block on a thread of its own, like the JSON.
#pragma once

#include <ostream>
#include <string>

#include "sim/chrome_trace.h"

namespace cs::sim {

void write_perfetto_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                          const TraceOptions& options);

// Whether `path` names a Perfetto protobuf trace (.pftrace or .perfetto-trace).
bool is_perfetto_trace_path(const std::string& path);

// To a file: a Perfetto protobuf trace for .pftrace / .perfetto-trace, else Chrome JSON (gzip-
// compressed for .gz). Throws UserError when the file cannot be written.
void write_trace_file(const std::string& path, const ir::TaskGraph& g, const Timeline& tl,
                      const TraceOptions& options);

}  // namespace cs::sim
