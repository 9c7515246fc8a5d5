#include "sim/chrome_trace.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/limits.h"
#include "common/output_file.h"
#include "sim/trace_text.h"

namespace cs::sim {
namespace {

constexpr int kGzipLevel = 1;  // zlib's fastest: ~10x on trace JSON
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// A task's part in a flow arrow (Perfetto's flow events v2: bind_id on the slice itself).
enum FlowRole : uint8_t { kNoFlow = 0, kFlowIn = 1, kFlowOut = 2 };

// What one trace shows, and the indexes every part of the writer reads.
class TraceWriter {
 public:
  TraceWriter(JsonText& out, const ir::TaskGraph& g, const Timeline& tl, const TraceOptions& o)
      : out_(out), g_(g), tl_(tl), o_(o), keep_rank_(g.ranks()) {
    for (ir::RankId r = 0; r < g.ranks(); ++r) keep_rank_[r] = rank_kept(g.cluster_rank(r));
  }

  void write() {
    out_.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    write_names();
    write_tasks();
    write_memory();
    if (o_.costs && o_.links && o_.costs->link_count() > 0) write_link_utilisation();
    out_.raw("\n]}\n");
  }

 private:
  bool rank_kept(ir::RankId cluster_rank) const {
    if (o_.ranks.empty()) return true;
    for (const auto& [lo, hi] : o_.ranks) {
      if (cluster_rank >= lo && cluster_rank <= hi) return true;
    }
    return false;
  }
  bool time_kept(SimTime start, SimTime end) const {
    return !o_.window || (end >= o_.window->first && start <= o_.window->second);
  }
  bool task_kept(ir::TaskId t) const {
    const ir::Task& task = g_.task(t);
    return keep_rank_[task.rank] && task.kind != ir::TaskKind::memory &&
           time_kept(tl_.tasks[t].start, tl_.tasks[t].end);
  }
  int64_t pid(ir::RankId r) const { return static_cast<int64_t>(r) + o_.pid_offset; }

  void write_names();
  void write_tasks();
  std::vector<uint8_t> flow_roles() const;
  void write_memory();
  void write_link_utilisation();

  JsonText& out_;
  const ir::TaskGraph& g_;
  const Timeline& tl_;
  const TraceOptions& o_;
  std::vector<char> keep_rank_;
};

// Names of processes (ranks) and threads (streams).
void TraceWriter::write_names() {
  auto metadata = [&](std::string_view what, int64_t pid, int64_t tid) {
    out_.begin_event();
    out_.raw("\"ph\":\"M\",\"name\":\"");
    out_.raw(what);
    out_.raw("\",\"pid\":");
    out_.integer(pid);
    out_.raw(",\"tid\":");
    out_.integer(tid);
    out_.raw(",\"args\":{");
  };
  for (ir::RankId r = 0; r < g_.ranks(); ++r) {
    if (!keep_rank_[r]) continue;
    metadata("process_name", pid(r), 0);
    out_.raw("\"name\":");
    out_.string(o_.process_prefix + " " + std::to_string(g_.cluster_rank(r)));
    out_.raw("}");
    out_.end_event();
    metadata("process_sort_index", pid(r), 0);
    out_.raw("\"sort_index\":");
    out_.integer(pid(r));
    out_.raw("}");
    out_.end_event();
    for (size_t s = 0; s < g_.stream_names().size(); ++s) {
      metadata("thread_name", pid(r), static_cast<int64_t>(s));
      out_.raw("\"name\":");
      out_.string(g_.stream_names()[s]);
      out_.raw("}");
      out_.end_event();
    }
  }
}

// Flow arrows: a transfer's send to its receive; a collective's kept participants in the order
// they start (then task order), which is the order a viewer reads them in, so that the chain's
// first slice begins the flow. An arrow is drawn only when both its ends are kept.
std::vector<uint8_t> TraceWriter::flow_roles() const {
  std::vector<uint8_t> role(g_.size(), kNoFlow);
  if (!o_.flows) return role;
  std::vector<ir::TaskId> send_of(g_.transfer_count(), UINT32_MAX),
      recv_of(g_.transfer_count(), UINT32_MAX);
  std::vector<uint32_t> offsets(g_.collective_count() + 1, 0);
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::send) send_of[task.payload] = t;
    if (task.kind == ir::TaskKind::recv) recv_of[task.payload] = t;
    if (task.kind == ir::TaskKind::collective && task_kept(t)) ++offsets[task.payload + 1];
  }
  for (ir::TransferId x = 0; x < g_.transfer_count(); ++x) {
    if (send_of[x] == UINT32_MAX || recv_of[x] == UINT32_MAX || !task_kept(send_of[x]) ||
        !task_kept(recv_of[x]))
      continue;
    role[send_of[x]] = kFlowOut;
    role[recv_of[x]] = kFlowIn;
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) offsets[c + 1] += offsets[c];
  std::vector<ir::TaskId> members(offsets.back());
  std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
  for (ir::TaskId t = 0; t < g_.size(); ++t) {  // task order within each collective
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::collective && task_kept(t)) members[fill[task.payload]++] = t;
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) {
    auto* b = members.data() + offsets[c];
    auto* e = members.data() + offsets[c + 1];
    if (e - b < 2) continue;
    std::stable_sort(
        b, e, [&](ir::TaskId x, ir::TaskId y) { return tl_.tasks[x].start < tl_.tasks[y].start; });
    for (auto* p = b; p != e; ++p) role[*p] = (p != b ? kFlowIn : 0) | (p + 1 != e ? kFlowOut : 0);
  }
  return role;
}

// One complete event per task, carrying its flow arrow's end.
void TraceWriter::write_tasks() {
  const std::vector<uint8_t> role = flow_roles();
  // Names are few (an op's name repeats on every micro-batch and rank): quote each once.
  std::vector<std::string> quoted(g_.name_count());
  for (ir::NameId n = 0; n < g_.name_count(); ++n) quoted[n] = json_quoted(g_.name(n));
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    if (!task_kept(t)) continue;
    const ir::Task& task = g_.task(t);
    const TaskTiming& tm = tl_.tasks[t];
    out_.begin_event();
    out_.raw("\"ph\":\"X\",\"name\":");
    out_.raw(quoted[task.name]);
    out_.raw(",\"cat\":\"");
    out_.raw(ir::to_string(task.kind));
    out_.raw("\",\"pid\":");
    out_.integer(pid(task.rank));
    out_.raw(",\"tid\":");
    out_.integer(task.stream);
    out_.raw(",\"ts\":");
    out_.micros(tm.start);
    out_.raw(",\"dur\":");
    out_.micros(tm.end - tm.start);
    if (role[t] != kNoFlow) {
      // Transfer x's arrow is 2x, collective c's 2c + 1: one id space for both.
      const bool collective = task.kind == ir::TaskKind::collective;
      out_.raw(",\"bind_id\":");
      out_.integer(2 * int64_t{task.payload} + (collective ? 1 : 0));
      if (role[t] & kFlowIn) out_.raw(",\"flow_in\":true");
      if (role[t] & kFlowOut) out_.raw(",\"flow_out\":true");
    }
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
    out_.end_event();
  }
}

// Memory over time: one counter per rank whose series are the categories (Perfetto stacks them).
void TraceWriter::write_memory() {
  std::vector<std::array<double, ir::kMemoryCategoryCount>> gib(g_.ranks());
  for (auto& row : gib) row.fill(0.0);
  auto memory_event = [&](ir::RankId r, SimTime at) {
    out_.begin_event();
    out_.raw("\"ph\":\"C\",\"name\":\"memory GiB\",\"pid\":");
    out_.integer(pid(r));
    out_.raw(",\"ts\":");
    out_.micros(at);
    out_.raw(",\"args\":{");
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      if (c > 0) out_.raw(",");
      out_.raw("\"");
      out_.raw(ir::to_string(static_cast<ir::MemoryCategory>(c)));
      out_.raw("\":");
      out_.rounded(gib[r][static_cast<size_t>(c)], 9);  // to the byte
    }
    out_.raw("}");
    out_.end_event();
  };
  if (o_.window) {  // the state at the window's start, then the changes inside it
    for (const MemorySample& m : tl_.memory_samples) {
      if (m.time < o_.window->first)
        gib[m.rank][static_cast<size_t>(m.category)] =
            static_cast<double>(m.category_bytes) / kBytesPerGiB;
    }
    for (ir::RankId r = 0; r < g_.ranks(); ++r) {
      if (keep_rank_[r]) memory_event(r, o_.window->first);
    }
  }
  for (const MemorySample& m : tl_.memory_samples) {
    if (!keep_rank_[m.rank] ||
        (o_.window && (m.time < o_.window->first || m.time > o_.window->second)))
      continue;
    gib[m.rank][static_cast<size_t>(m.category)] =
        static_cast<double>(m.category_bytes) / kBytesPerGiB;
    memory_event(m.rank, m.time);
  }
}

// Link utilisation by kind: each collective / transfer's plan loads spread over its duration.
void TraceWriter::write_link_utilisation() {
  const std::vector<LinkInfo>& links = *o_.links;
  std::map<std::string_view, size_t> kind_index;
  std::vector<int> kind_of(links.size(), -1);
  std::vector<std::string_view> kinds;
  for (size_t l = 0; l < links.size(); ++l) {
    if (l >= tl_.links.bytes.size() || tl_.links.bytes[l] <= 0) continue;
    const auto [it, added] = kind_index.emplace(links[l].kind, kinds.size());
    if (added) kinds.push_back(links[l].kind);
  }
  // Kinds in name order, so the output does not depend on link numbering.
  std::sort(kinds.begin(), kinds.end());
  for (size_t k = 0; k < kinds.size(); ++k) kind_index[kinds[k]] = k;
  std::vector<double> carrying(kinds.size(), 0.0);
  for (size_t l = 0; l < links.size(); ++l) {
    if (l >= tl_.links.bytes.size() || tl_.links.bytes[l] <= 0) continue;
    kind_of[l] = static_cast<int>(kind_index[links[l].kind]);
    carrying[static_cast<size_t>(kind_of[l])] += 1;
  }
  struct Delta {
    SimTime at;
    uint32_t kind;
    double utilisation;
  };
  std::vector<Delta> deltas;
  std::vector<SimTime> start_of(g_.collective_count(), SimTime{INT64_MAX}),
      end_of(g_.collective_count(), SimTime{});
  std::vector<ir::TaskId> first_task(g_.collective_count(), UINT32_MAX);
  std::vector<double> busy(kinds.size());
  auto add = [&](const cost::CommCost& cost, double bytes, SimTime start, SimTime end) {
    if (!cost.plan || end <= start) return;
    std::fill(busy.begin(), busy.end(), 0.0);
    for (const cost::LinkPhase& ph : cost.plan->phases) {
      const double units = bytes * ph.units_per_byte;
      for (const cost::LinkLoad& l : ph.loads) {
        if (l.link >= kind_of.size() || kind_of[l.link] < 0) continue;
        const double capacity = o_.costs->link_capacity(l.link);
        if (capacity > 0) busy[static_cast<size_t>(kind_of[l.link])] += units * l.weight / capacity;
      }
    }
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (busy[k] <= 0) continue;
      const double u = busy[k] / (end - start).seconds() / carrying[k];
      deltas.push_back({start, static_cast<uint32_t>(k), u});
      deltas.push_back({end, static_cast<uint32_t>(k), -u});
    }
  };
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    const ir::Task& task = g_.task(t);
    if (task.kind == ir::TaskKind::collective) {
      start_of[task.payload] = std::min(start_of[task.payload], tl_.tasks[t].start);
      end_of[task.payload] = std::max(end_of[task.payload], tl_.tasks[t].end);
      if (first_task[task.payload] == UINT32_MAX) first_task[task.payload] = t;
    } else if (task.kind == ir::TaskKind::send) {
      const auto& tr = g_.transfer(task);
      add(o_.costs->transfer(tr), static_cast<double>(tr.bytes.count), tl_.tasks[t].start,
          tl_.tasks[t].end);
    }
  }
  for (size_t c = 0; c < g_.collective_count(); ++c) {
    if (first_task[c] == UINT32_MAX) continue;
    const auto& call = g_.collective_call(static_cast<ir::CollectiveId>(c));
    add(o_.costs->collective(call, g_.group_ranks(call.group)),
        static_cast<double>(call.bytes.count), start_of[c], end_of[c]);
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const Delta& a, const Delta& b) { return a.at < b.at; });
  const int64_t network_pid = pid(g_.ranks());
  if (!kinds.empty()) {
    out_.begin_event();
    out_.raw("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out_.integer(network_pid);
    out_.raw(
        ",\"tid\":0,\"args\":{\"name\":\"network (mean utilisation of the links of each kind "
        "that carried traffic)\"}");
    out_.end_event();
  }
  std::vector<double> level(kinds.size(), 0.0);
  auto counter = [&](SimTime at) {
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
      const double pct = std::max(0.0, 100.0 * level[k]);
      out_.number(std::round(pct * 1e4) / 1e4);  // rounding hides the sums' last-bit noise
    }
    out_.raw("}");
    out_.end_event();
  };
  bool started = !o_.window;
  for (size_t i = 0; i < deltas.size();) {
    const SimTime at = deltas[i].at;
    if (!started && at >= o_.window->first) {
      counter(o_.window->first);
      started = true;
    }
    for (; i < deltas.size() && deltas[i].at == at; ++i)
      level[deltas[i].kind] += deltas[i].utilisation;
    if (o_.window && (at < o_.window->first || at > o_.window->second)) continue;
    counter(at);
  }
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
  TraceWriter(text, g, tl, options).write();
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
  OutputFile file(path);
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  gzFile zipped = nullptr;
  if (gz) {  // zlib writes the temporary file through its descriptor, which gzclose closes
    const std::string mode = "wb" + std::to_string(kGzipLevel);
    zipped = gzdopen(file.descriptor(), mode.c_str());
    if (!zipped) file.fail(errno ? errno : ENOMEM);
    file.release_descriptor();
    gzbuffer(zipped, 1 << 18);
  }
  // Written (or compressed) on a thread of its own while the next block is formatted.
  int write_errno = 0;
  const int fd = file.descriptor();
  BackgroundWriter writer([&](const char* bytes, size_t n) {
    if (write_errno != 0) return;
    if (!zipped) {
      write_errno = write_all(fd, bytes, n);
    } else if (gzwrite(zipped, bytes, static_cast<unsigned>(n)) != static_cast<int>(n)) {
      write_errno = errno ? errno : EIO;
    }
  });
  try {
    JsonText text([&](TextBlock& b) { writer.take(b); });
    TraceWriter(text, g, tl, options).write();
    text.flush();
    writer.finish();
  } catch (...) {
    writer.finish();
    if (zipped) gzclose(zipped);
    throw;
  }
  if (zipped) {
    errno = 0;
    if (gzclose(zipped) != Z_OK && write_errno == 0) write_errno = errno ? errno : EIO;
  }
  if (write_errno != 0) file.fail(write_errno);
  file.commit();
}

}  // namespace cs::sim
