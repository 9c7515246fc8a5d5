#include "sim/chrome_trace.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include "common/error.h"
#include "common/limits.h"
#include "common/output_file.h"

namespace cs::sim {
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;  // buffer handed to the sink at 1 MiB
constexpr int kGzipLevel = 1;                    // zlib's fastest: ~10x on trace JSON
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// Formats JSON text into a bounded buffer and hands it to `sink` when full.
class TraceOut {
 public:
  explicit TraceOut(std::function<void(const char*, size_t)> sink) : sink_(std::move(sink)) {
    buf_.reserve(kFlushBytes + 4096);
  }
  ~TraceOut() = default;
  void raw(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kFlushBytes) flush();
  }
  void integer(int64_t v) {
    char tmp[24];
    const auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, res.ptr);
  }
  void number(double v) {  // shortest round-trip form; never exponent-free garbage for NaN
    if (!(v == v) || v > 1e300 || v < -1e300) v = 0;
    char tmp[32];
    const auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, res.ptr);
  }
  // `units` / 10^decimals exactly, trailing zeros dropped: a time in picoseconds as microseconds
  // (decimals 6), bytes as MB. Shorter and faster than a double's shortest form, and without its
  // binary noise (43.04433 us, not 43.044329999999995).
  // decimals <= 18 (10^18 fits an int64).
  void decimal(int64_t units, int decimals) {
    if (units < 0) buf_.push_back('-');
    // The magnitude as unsigned: -INT64_MIN does not fit an int64.
    const uint64_t magnitude = units < 0 ? 0 - static_cast<uint64_t>(units) : units;
    uint64_t scale = 1;
    for (int i = 0; i < decimals; ++i) scale *= 10;
    char tmp[24];
    const auto res = std::to_chars(tmp, tmp + sizeof tmp, magnitude / scale);
    buf_.append(tmp, res.ptr);
    uint64_t frac = magnitude % scale;
    if (frac == 0) return;
    char digits[20];
    for (int i = decimals; i-- > 0; frac /= 10) digits[i] = static_cast<char>('0' + frac % 10);
    int n = decimals;
    while (digits[n - 1] == '0') --n;
    buf_.push_back('.');
    buf_.append(digits, static_cast<size_t>(n));
  }
  void micros(SimTime t) { decimal(t.ps, 6); }
  // A figure kept to `decimals` places (a derived double: GFLOP, GiB).
  void rounded(double v, int decimals) {
    double scale = 1;
    for (int i = 0; i < decimals; ++i) scale *= 10;
    if (!(v == v) || std::abs(v) * scale > 9e18) return number(v);
    decimal(std::llround(v * scale), decimals);
  }
  void string(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      if (c == '"' || c == '\\') {
        buf_.push_back('\\');
        buf_.push_back(c);
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char tmp[8];
        std::snprintf(tmp, sizeof tmp, "\\u%04x", static_cast<unsigned>(c));
        buf_.append(tmp);
      } else {
        buf_.push_back(c);
      }
    }
    buf_.push_back('"');
  }
  // Starts an event object, with the comma between events.
  void begin_event() {
    if (!first_) buf_.append(",\n");
    first_ = false;
    buf_.push_back('{');
  }
  void end_event() {
    buf_.push_back('}');
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    if (!buf_.empty()) sink_(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  std::function<void(const char*, size_t)> sink_;
  std::string buf_;
  bool first_ = true;
};

bool rank_kept(const TraceOptions& o, ir::RankId cluster_rank) {
  if (o.ranks.empty()) return true;
  for (const auto& [lo, hi] : o.ranks) {
    if (cluster_rank >= lo && cluster_rank <= hi) return true;
  }
  return false;
}

bool time_kept(const TraceOptions& o, SimTime start, SimTime end) {
  return !o.window || (end >= o.window->first && start <= o.window->second);
}

void write_events(TraceOut& out, const ir::TaskGraph& g, const Timeline& tl,
                  const TraceOptions& o) {
  std::vector<char> keep_rank(g.ranks());
  for (ir::RankId r = 0; r < g.ranks(); ++r) keep_rank[r] = rank_kept(o, g.cluster_rank(r));
  auto task_kept = [&](ir::TaskId t) {
    const ir::Task& task = g.task(t);
    return keep_rank[task.rank] && task.kind != ir::TaskKind::memory &&
           time_kept(o, tl.tasks[t].start, tl.tasks[t].end);
  };
  out.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  // Names of processes (ranks) and threads (streams).
  for (ir::RankId r = 0; r < g.ranks(); ++r) {
    if (!keep_rank[r]) continue;
    const int pid = static_cast<int>(r) + o.pid_offset;
    out.begin_event();
    out.raw("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out.integer(pid);
    out.raw(",\"tid\":0,\"args\":{\"name\":");
    out.string(o.process_prefix + " " + std::to_string(g.cluster_rank(r)));
    out.raw("}");
    out.end_event();
    out.begin_event();
    out.raw("\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
    out.integer(pid);
    out.raw(",\"tid\":0,\"args\":{\"sort_index\":");
    out.integer(pid);
    out.raw("}");
    out.end_event();
    for (size_t s = 0; s < g.stream_names().size(); ++s) {
      out.begin_event();
      out.raw("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
      out.integer(pid);
      out.raw(",\"tid\":");
      out.integer(static_cast<int64_t>(s));
      out.raw(",\"args\":{\"name\":");
      out.string(g.stream_names()[s]);
      out.raw("}");
      out.end_event();
    }
  }
  // One complete event per task.
  for (ir::TaskId t = 0; t < g.size(); ++t) {
    if (!task_kept(t)) continue;
    const ir::Task& task = g.task(t);
    const TaskTiming& tm = tl.tasks[t];
    out.begin_event();
    out.raw("\"ph\":\"X\",\"name\":");
    out.string(g.task_name(t));
    out.raw(",\"cat\":\"");
    out.raw(ir::to_string(task.kind));
    out.raw("\",\"pid\":");
    out.integer(static_cast<int64_t>(task.rank) + o.pid_offset);
    out.raw(",\"tid\":");
    out.integer(task.stream);
    out.raw(",\"ts\":");
    out.micros(tm.start);
    out.raw(",\"dur\":");
    out.micros(tm.end - tm.start);
    out.raw(",\"args\":{\"phase\":\"");
    out.raw(ir::to_string(task.phase));
    out.raw("\"");
    if (task.layer >= 0) {
      out.raw(",\"layer\":");
      out.integer(task.layer);
    }
    if (task.micro_batch >= 0) {
      out.raw(",\"micro_batch\":");
      out.integer(task.micro_batch);
    }
    if (task.kind == ir::TaskKind::compute) {
      const auto& op = g.compute(task);
      out.raw(",\"op\":\"");
      out.raw(ir::to_string(op.op));
      out.raw("\",\"gflop\":");
      out.rounded(op.flops.value * 1e-9, 6);  // to the kFLOP
      out.raw(",\"mbytes\":");
      out.decimal(op.bytes.count, 6);
    } else if (task.kind == ir::TaskKind::collective) {
      out.raw(",\"collective\":\"");
      out.raw(ir::to_string(g.collective(task).type));
      out.raw("\",\"bytes\":");
      out.integer(g.collective(task).bytes.count);
      out.raw(",\"wait_us\":");
      out.micros(tm.start - tm.ready);
    } else if (task.kind == ir::TaskKind::send || task.kind == ir::TaskKind::recv) {
      const auto& tr = g.transfer(task);
      out.raw(",\"bytes\":");
      out.integer(tr.bytes.count);
      out.raw(task.kind == ir::TaskKind::send ? ",\"to\":" : ",\"from\":");
      out.integer(task.kind == ir::TaskKind::send ? tr.dst : tr.src);
    }
    out.raw("}");
    out.end_event();
  }

  // Flows: a transfer's send to its receive; a collective's kept participants in rank order.
  if (o.flows) {
    auto flow = [&](char ph, const char* cat, uint64_t id, ir::TaskId t) {
      out.begin_event();
      out.raw("\"ph\":\"");
      out.raw(std::string_view(&ph, 1));
      out.raw("\",\"name\":\"");
      out.raw(cat);
      out.raw("\",\"cat\":\"");
      out.raw(cat);
      out.raw("\",\"id\":");
      out.integer(static_cast<int64_t>(id));
      out.raw(",\"pid\":");
      out.integer(static_cast<int64_t>(g.task(t).rank) + o.pid_offset);
      out.raw(",\"tid\":");
      out.integer(g.task(t).stream);
      out.raw(",\"ts\":");
      out.micros(tl.tasks[t].start);
      if (ph != 's') out.raw(",\"bp\":\"e\"");
      out.end_event();
    };
    std::vector<ir::TaskId> send_of(g.transfer_count(), UINT32_MAX),
        recv_of(g.transfer_count(), UINT32_MAX);
    std::vector<uint32_t> offsets(g.collective_count() + 1, 0);
    for (ir::TaskId t = 0; t < g.size(); ++t) {
      const ir::Task& task = g.task(t);
      if (task.kind == ir::TaskKind::send) send_of[task.payload] = t;
      if (task.kind == ir::TaskKind::recv) recv_of[task.payload] = t;
      if (task.kind == ir::TaskKind::collective && task_kept(t)) ++offsets[task.payload + 1];
    }
    for (ir::TransferId x = 0; x < g.transfer_count(); ++x) {
      if (send_of[x] == UINT32_MAX || recv_of[x] == UINT32_MAX || !task_kept(send_of[x]) ||
          !task_kept(recv_of[x]))
        continue;
      flow('s', "transfer", 2 * uint64_t{x}, send_of[x]);
      flow('f', "transfer", 2 * uint64_t{x}, recv_of[x]);
    }
    for (size_t c = 0; c < g.collective_count(); ++c) offsets[c + 1] += offsets[c];
    std::vector<ir::TaskId> members(offsets.back());
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (ir::TaskId t = 0; t < g.size();
         ++t) {  // task order, so members of a rank keep their order
      const ir::Task& task = g.task(t);
      if (task.kind == ir::TaskKind::collective && task_kept(t)) members[fill[task.payload]++] = t;
    }
    for (size_t c = 0; c < g.collective_count(); ++c) {
      auto* b = members.data() + offsets[c];
      auto* e = members.data() + offsets[c + 1];
      if (e - b < 2) continue;
      std::sort(b, e, [&](ir::TaskId x, ir::TaskId y) { return g.task(x).rank < g.task(y).rank; });
      for (auto* p = b; p != e; ++p)
        flow(p == b ? 's' : p + 1 == e ? 'f' : 't', "collective", 2 * uint64_t{c} + 1, *p);
    }
  }

  // Memory over time: one counter per rank whose series are the categories (Perfetto stacks them).
  std::vector<std::array<double, ir::kMemoryCategoryCount>> gib(g.ranks());
  for (auto& row : gib) row.fill(0.0);
  auto memory_event = [&](ir::RankId r, SimTime at) {
    out.begin_event();
    out.raw("\"ph\":\"C\",\"name\":\"memory GiB\",\"pid\":");
    out.integer(static_cast<int64_t>(r) + o.pid_offset);
    out.raw(",\"ts\":");
    out.micros(at);
    out.raw(",\"args\":{");
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      if (c > 0) out.raw(",");
      out.raw("\"");
      out.raw(ir::to_string(static_cast<ir::MemoryCategory>(c)));
      out.raw("\":");
      out.rounded(gib[r][static_cast<size_t>(c)], 9);  // to the byte
    }
    out.raw("}");
    out.end_event();
  };
  if (o.window) {  // the state at the window's start, then the changes inside it
    for (const MemorySample& m : tl.memory_samples) {
      if (m.time < o.window->first)
        gib[m.rank][static_cast<size_t>(m.category)] =
            static_cast<double>(m.category_bytes) / kBytesPerGiB;
    }
    for (ir::RankId r = 0; r < g.ranks(); ++r) {
      if (keep_rank[r]) memory_event(r, o.window->first);
    }
  }
  for (const MemorySample& m : tl.memory_samples) {
    if (!keep_rank[m.rank] || (o.window && (m.time < o.window->first || m.time > o.window->second)))
      continue;
    gib[m.rank][static_cast<size_t>(m.category)] =
        static_cast<double>(m.category_bytes) / kBytesPerGiB;
    memory_event(m.rank, m.time);
  }

  // Link utilisation by kind: each collective / transfer's plan loads spread over its duration.
  if (o.costs && o.links && o.costs->link_count() > 0) {
    std::map<std::string_view, size_t> kind_index;
    std::vector<int> kind_of(o.links->size(), -1);
    std::vector<std::string_view> kinds;
    for (size_t l = 0; l < o.links->size(); ++l) {
      if (l >= tl.links.bytes.size() || tl.links.bytes[l] <= 0) continue;
      const auto [it, added] = kind_index.emplace((*o.links)[l].kind, kinds.size());
      if (added) kinds.push_back((*o.links)[l].kind);
    }
    // Kinds in name order, so the output does not depend on link numbering.
    std::sort(kinds.begin(), kinds.end());
    for (size_t k = 0; k < kinds.size(); ++k) kind_index[kinds[k]] = k;
    std::vector<double> carrying(kinds.size(), 0.0);
    for (size_t l = 0; l < o.links->size(); ++l) {
      if (l >= tl.links.bytes.size() || tl.links.bytes[l] <= 0) continue;
      kind_of[l] = static_cast<int>(kind_index[(*o.links)[l].kind]);
      carrying[static_cast<size_t>(kind_of[l])] += 1;
    }
    struct Delta {
      SimTime at;
      uint32_t kind;
      double utilisation;
    };
    std::vector<Delta> deltas;
    std::vector<SimTime> start_of(g.collective_count(), SimTime{INT64_MAX}),
        end_of(g.collective_count(), SimTime{});
    std::vector<ir::TaskId> first_task(g.collective_count(), UINT32_MAX);
    std::vector<double> busy(kinds.size());
    auto add = [&](const cost::CommCost& cost, double bytes, SimTime start, SimTime end) {
      if (!cost.plan || end <= start) return;
      std::fill(busy.begin(), busy.end(), 0.0);
      for (const cost::LinkPhase& ph : cost.plan->phases) {
        const double units = bytes * ph.units_per_byte;
        for (const cost::LinkLoad& l : ph.loads) {
          if (l.link >= kind_of.size() || kind_of[l.link] < 0) continue;
          const double capacity = o.costs->link_capacity(l.link);
          if (capacity > 0)
            busy[static_cast<size_t>(kind_of[l.link])] += units * l.weight / capacity;
        }
      }
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (busy[k] <= 0) continue;
        const double u = busy[k] / (end - start).seconds() / carrying[k];
        deltas.push_back({start, static_cast<uint32_t>(k), u});
        deltas.push_back({end, static_cast<uint32_t>(k), -u});
      }
    };
    for (ir::TaskId t = 0; t < g.size(); ++t) {
      const ir::Task& task = g.task(t);
      if (task.kind == ir::TaskKind::collective) {
        start_of[task.payload] = std::min(start_of[task.payload], tl.tasks[t].start);
        end_of[task.payload] = std::max(end_of[task.payload], tl.tasks[t].end);
        if (first_task[task.payload] == UINT32_MAX) first_task[task.payload] = t;
      } else if (task.kind == ir::TaskKind::send) {
        const auto& tr = g.transfer(task);
        add(o.costs->transfer(tr), static_cast<double>(tr.bytes.count), tl.tasks[t].start,
            tl.tasks[t].end);
      }
    }
    for (size_t c = 0; c < g.collective_count(); ++c) {
      if (first_task[c] == UINT32_MAX) continue;
      const auto& call = g.collective_call(static_cast<ir::CollectiveId>(c));
      add(o.costs->collective(call, g.group_ranks(call.group)),
          static_cast<double>(call.bytes.count), start_of[c], end_of[c]);
    }
    std::stable_sort(deltas.begin(), deltas.end(),
                     [](const Delta& a, const Delta& b) { return a.at < b.at; });
    const int pid = static_cast<int>(g.ranks()) + o.pid_offset;
    if (!kinds.empty()) {
      out.begin_event();
      out.raw("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
      out.integer(pid);
      out.raw(
          ",\"tid\":0,\"args\":{\"name\":\"network (mean utilisation of the links of each kind "
          "that carried traffic)\"}");
      out.end_event();
    }
    std::vector<double> level(kinds.size(), 0.0);
    auto counter = [&](SimTime at) {
      out.begin_event();
      out.raw("\"ph\":\"C\",\"name\":\"link utilisation %\",\"pid\":");
      out.integer(pid);
      out.raw(",\"ts\":");
      out.micros(at);
      out.raw(",\"args\":{");
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (k > 0) out.raw(",");
        out.string(kinds[k]);
        out.raw(":");
        const double pct = std::max(0.0, 100.0 * level[k]);
        out.number(std::round(pct * 1e4) / 1e4);  // rounding hides the sums' last-bit noise
      }
      out.raw("}");
      out.end_event();
    };
    bool started = !o.window;
    for (size_t i = 0; i < deltas.size();) {
      const SimTime at = deltas[i].at;
      if (!started && at >= o.window->first) {
        counter(o.window->first);
        started = true;
      }
      for (; i < deltas.size() && deltas[i].at == at; ++i)
        level[deltas[i].kind] += deltas[i].utilisation;
      if (o.window && (at < o.window->first || at > o.window->second)) continue;
      counter(at);
    }
  }
  out.raw("\n]}\n");
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
  TraceOut w([&](const char* p, size_t n) { out.write(p, static_cast<std::streamsize>(n)); });
  write_events(w, g, tl, options);
  w.flush();
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
  if (!gz) {
    write_chrome_trace(file.stream(), g, tl, options);
    file.commit();
    return;
  }
  // zlib writes the temporary file through its descriptor, which gzclose closes.
  const std::string mode = "wb" + std::to_string(kGzipLevel);
  gzFile f = gzdopen(file.descriptor(), mode.c_str());
  if (!f) file.fail(errno ? errno : ENOMEM);
  file.release_descriptor();
  gzbuffer(f, 1 << 18);
  int write_errno = 0;
  try {
    TraceOut w([&](const char* p, size_t n) {
      if (write_errno == 0 && gzwrite(f, p, static_cast<unsigned>(n)) != static_cast<int>(n))
        write_errno = errno ? errno : EIO;
    });
    write_events(w, g, tl, options);
    w.flush();
  } catch (...) {
    gzclose(f);
    throw;
  }
  errno = 0;
  if (gzclose(f) != Z_OK && write_errno == 0) write_errno = errno ? errno : EIO;
  if (write_errno != 0) file.fail(write_errno);
  file.commit();
}

}  // namespace cs::sim
