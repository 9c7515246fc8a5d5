#include "sim/chrome_trace.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/limits.h"
#include "sim/trace_selection.h"
#include "sim/trace_text.h"

namespace cs::sim {
namespace {

// The trace as trace-event JSON.
class JsonTraceWriter {
 public:
  JsonTraceWriter(JsonText& out, const ir::TaskGraph& g, const Timeline& tl, const TraceOptions& o)
      : out_(out), g_(g), tl_(tl), o_(o), kept_(g, tl, o) {}

  void write() {
    out_.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    write_names();
    write_tasks();
    write_memory();
    write_link_utilisation();
    out_.raw("\n]}\n");
  }

 private:
  void metadata(std::string_view what, int64_t pid, int64_t tid);
  void write_names();
  void write_tasks();
  void write_task_args(const ir::Task& task, const TaskTiming& tm);
  void write_memory();
  void write_link_utilisation();

  JsonText& out_;
  const ir::TaskGraph& g_;
  const Timeline& tl_;
  const TraceOptions& o_;
  const TraceSelection kept_;
};

// Starts a metadata event; the caller writes its args and ends it.
void JsonTraceWriter::metadata(std::string_view what, int64_t pid, int64_t tid) {
  out_.begin_event();
  out_.raw("\"ph\":\"M\",\"name\":\"");
  out_.raw(what);
  out_.raw("\",\"pid\":");
  out_.integer(pid);
  out_.raw(",\"tid\":");
  out_.integer(tid);
  out_.raw(",\"args\":{");
}

// Names of processes (ranks) and threads (streams).
void JsonTraceWriter::write_names() {
  for (ir::RankId r = 0; r < g_.ranks(); ++r) {
    if (!kept_.rank_kept(r)) continue;
    metadata("process_name", kept_.pid(r), 0);
    out_.raw("\"name\":");
    out_.string(o_.process_prefix + " " + std::to_string(g_.cluster_rank(r)));
    out_.raw("}");
    out_.end_event();
    metadata("process_sort_index", kept_.pid(r), 0);
    out_.raw("\"sort_index\":");
    out_.integer(kept_.pid(r));
    out_.raw("}");
    out_.end_event();
    for (size_t s = 0; s < g_.stream_names().size(); ++s) {
      metadata("thread_name", kept_.pid(r), static_cast<int64_t>(s));
      out_.raw("\"name\":");
      out_.string(g_.stream_names()[s]);
      out_.raw("}");
      out_.end_event();
    }
  }
}

// One complete event per task, carrying its flow arrow's end (Perfetto's flow events v2:
// bind_id with flow_in / flow_out on the slice itself).
void JsonTraceWriter::write_tasks() {
  const std::vector<uint8_t> role = kept_.flow_roles();
  // Names are few (an op's name repeats on every micro-batch and rank): quote each once.
  std::vector<std::string> quoted(g_.name_count());
  for (ir::NameId n = 0; n < g_.name_count(); ++n) quoted[n] = json_quoted(g_.name(n));
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    if (!kept_.task_kept(t)) continue;
    const ir::Task& task = g_.task(t);
    const TaskTiming& tm = tl_.tasks[t];
    out_.begin_event();
    out_.raw("\"ph\":\"X\",\"name\":");
    out_.raw(quoted[task.name]);
    out_.raw(",\"cat\":\"");
    out_.raw(ir::to_string(task.kind));
    out_.raw("\",\"pid\":");
    out_.integer(kept_.pid(task.rank));
    out_.raw(",\"tid\":");
    out_.integer(task.stream);
    out_.raw(",\"ts\":");
    out_.micros(tm.start);
    out_.raw(",\"dur\":");
    out_.micros(tm.end - tm.start);
    if (role[t] != kNoFlow) {
      out_.raw(",\"bind_id\":");
      out_.integer(static_cast<int64_t>(TraceSelection::flow_id(task)));
      if (role[t] & kFlowIn) out_.raw(",\"flow_in\":true");
      if (role[t] & kFlowOut) out_.raw(",\"flow_out\":true");
    }
    write_task_args(task, tm);
    out_.end_event();
  }
}

void JsonTraceWriter::write_task_args(const ir::Task& task, const TaskTiming& tm) {
  out_.raw(",\"args\":{\"phase\":\"");
  out_.raw(ir::to_string(task.phase));
  out_.raw("\"");
  if (task.layer >= 0) {
    out_.raw(",\"layer\":");
    out_.integer(task.layer);
  }
  if (task.micro_batch >= 0) {
    out_.raw(",\"micro_batch\":");
    out_.integer(task.micro_batch);
  }
  if (task.kind == ir::TaskKind::compute) {
    const auto& op = g_.compute(task);
    out_.raw(",\"op\":\"");
    out_.raw(ir::to_string(op.op));
    out_.raw("\",\"gflop\":");
    out_.rounded(op.flops.value * 1e-9, 6);  // to the kFLOP
    out_.raw(",\"mbytes\":");
    out_.decimal(op.bytes.count, 6);
  } else if (task.kind == ir::TaskKind::collective) {
    out_.raw(",\"collective\":\"");
    out_.raw(ir::to_string(g_.collective(task).type));
    out_.raw("\",\"bytes\":");
    out_.integer(g_.collective(task).bytes.count);
    out_.raw(",\"wait_us\":");
    out_.micros(tm.start - tm.ready);
  } else if (task.kind == ir::TaskKind::send || task.kind == ir::TaskKind::recv) {
    const auto& tr = g_.transfer(task);
    out_.raw(",\"bytes\":");
    out_.integer(tr.bytes.count);
    out_.raw(task.kind == ir::TaskKind::send ? ",\"to\":" : ",\"from\":");
    out_.integer(task.kind == ir::TaskKind::send ? tr.dst : tr.src);
  }
  out_.raw("}");
}

// Memory over time: one counter per rank whose series are the categories (Perfetto stacks them).
void JsonTraceWriter::write_memory() {
  auto memory_event = [&](ir::RankId r, SimTime at, const CategoryGiB& gib) {
    out_.begin_event();
    out_.raw("\"ph\":\"C\",\"name\":\"memory GiB\",\"pid\":");
    out_.integer(kept_.pid(r));
    out_.raw(",\"ts\":");
    out_.micros(at);
    out_.raw(",\"args\":{");
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      if (c > 0) out_.raw(",");
      out_.raw("\"");
      out_.raw(ir::to_string(static_cast<ir::MemoryCategory>(c)));
      out_.raw("\":");
      out_.rounded(gib[static_cast<size_t>(c)], 9);  // to the byte
    }
    out_.raw("}");
    out_.end_event();
  };
  kept_.for_each_memory_state(memory_event, [&](ir::RankId r, SimTime at, const CategoryGiB& gib,
                                                int) { memory_event(r, at, gib); });
}

// Link utilisation by kind, as one counter on a process after the ranks.
void JsonTraceWriter::write_link_utilisation() {
  const std::vector<std::string_view> kinds = kept_.link_kinds();
  if (kinds.empty()) return;
  const int64_t network_pid = kept_.pid(g_.ranks());
  metadata("process_name", network_pid, 0);
  out_.raw(
      "\"name\":\"network (mean utilisation of the links of each kind that carried traffic)\"}");
  out_.end_event();
  kept_.for_each_link_level([&](SimTime at, const std::vector<double>& percent) {
    out_.begin_event();
    out_.raw("\"ph\":\"C\",\"name\":\"link utilisation %\",\"pid\":");
    out_.integer(network_pid);
    out_.raw(",\"ts\":");
    out_.micros(at);
    out_.raw(",\"args\":{");
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (k > 0) out_.raw(",");
      out_.string(kinds[k]);
      out_.raw(":");
      out_.number(percent[k]);
    }
    out_.raw("}");
    out_.end_event();
  });
}

}  // namespace

std::vector<std::pair<ir::RankId, ir::RankId>> parse_rank_ranges(const std::string& text) {
  std::vector<std::pair<ir::RankId, ir::RankId>> out;
  auto bad = [&](const std::string& why) {
    return UserError("--trace-ranks '" + text + "': " + why +
                     " (expected ranks and ranges such as 0-7,16)");
  };
  if (text.empty()) throw bad("empty");
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    const std::string first = item.substr(0, dash);
    const std::string last = dash == std::string::npos ? first : item.substr(dash + 1);
    // Digits are a rank, however large: past the largest cluster is a range error, not a form one.
    const auto digits = [](const std::string& t) {
      return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(first) || !digits(last)) throw bad("'" + item + "' is not a rank or a range");
    const auto lo = parse_integer(first);
    const auto hi = parse_integer(last);
    if (!lo || !hi || *hi >= limits::kMaxGpus) {
      throw bad("'" + item + "' is out of range: ranks are 0 to " +
                std::to_string(limits::kMaxGpus - 1) + " (a cluster has at most " +
                std::to_string(limits::kMaxGpus) + " GPUs: " + limits::kMaxGpusWhy + ")");
    }
    if (*hi < *lo) throw bad("'" + item + "' ends before it starts");
    out.emplace_back(static_cast<ir::RankId>(*lo), static_cast<ir::RankId>(*hi));
    pos = comma + 1;
  }
  return out;
}

std::pair<SimTime, SimTime> parse_time_window(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return UserError("--trace-window '" + text + "': " + why +
                     " (expected START:END in milliseconds, e.g. 0:250)");
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw bad("no ':'");
  auto number = [&](const std::string& s) {
    double v = 0;
    const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    // from_chars reports a number past a double's range as out of range, not as malformed.
    const bool read = !s.empty() && res.ptr == s.data() + s.size() &&
                      (res.ec == std::errc() || res.ec == std::errc::result_out_of_range);
    if (!read) throw bad("'" + s + "' is not a time in ms");
    if (res.ec != std::errc() || !(v >= 0) || v > 1e12) {
      throw bad("'" + s +
                "' is out of range: from 0 to 1e12 ms (a time into the step; the simulator's "
                "clock ends at 106 days, 9.2e9 ms)");
    }
    return v;
  };
  const double start = number(text.substr(0, colon));
  const double end = number(text.substr(colon + 1));
  if (!(end > start)) throw bad("END must be after START");
  return {SimTime::from_seconds(start * 1e-3), SimTime::from_seconds(end * 1e-3)};
}

void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const TraceOptions& options) {
  JsonText text(
      [&](TextBlock& b) { out.write(b.bytes.get(), static_cast<std::streamsize>(b.size)); });
  JsonTraceWriter(text, g, tl, options).write();
  text.flush();
}

void write_chrome_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                        const std::string& process_prefix, int pid_offset) {
  TraceOptions o;
  o.process_prefix = process_prefix;
  o.pid_offset = pid_offset;
  write_chrome_trace(out, g, tl, o);
}

void write_chrome_trace_file(const std::string& path, const ir::TaskGraph& g, const Timeline& tl,
                             const TraceOptions& options) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  write_blocks_to_file(path, gz, [&](const BlockSink& sink) {
    JsonText text(sink);
    JsonTraceWriter(text, g, tl, options).write();
    text.flush();
  });
}

}  // namespace cs::sim
