#include "sim/perfetto_trace.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>
#include <vector>

#include "sim/trace_selection.h"
#include "sim/trace_text.h"

namespace cs::sim {
namespace {

// Field numbers of Perfetto's trace protos (protos/perfetto/trace/).
namespace field {
constexpr int kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr int kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
              kSequenceFlags = 13, kTrackDescriptor = 60;
// TrackDescriptor
constexpr int kUuid = 1, kName = 2, kProcess = 3, kParentUuid = 5, kCounter = 8;
// ProcessDescriptor
constexpr int kPid = 1, kProcessName = 6;
// TrackEvent
constexpr int kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10, kTrackUuid = 11,
              kDoubleCounterValue = 44, kFlowIds = 47, kTerminatingFlowIds = 48;
// InternedData
constexpr int kEventCategories = 1, kEventNames = 2, kDebugAnnotationNames = 3,
              kDebugAnnotationStringValues = 29;
// EventName, EventCategory, DebugAnnotationName, InternedString: iid 1, name (str) 2
constexpr int kIid = 1, kInternedName = 2;
// DebugAnnotation
constexpr int kAnnotationNameIid = 1, kIntValue = 4, kDoubleValue = 5, kStringValueIid = 17;
}  // namespace field

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };
enum EventType { kSliceBegin = 1, kSliceEnd = 2, kCounter = 4 };
enum SequenceFlags { kIncrementalStateCleared = 1, kNeedsIncrementalState = 2 };
constexpr uint64_t kSequence = 1;

// A protobuf message being built (bytes in wire format). Its storage is kept between messages.
class Message {
 public:
  void varint(int number, uint64_t v) {
    tag(number, kVarint);
    put_varint(v);
  }
  void fixed64(int number, uint64_t v) {
    tag(number, kFixed64);
    char* p = room(8);
    for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));  // little-endian
    size_ += 8;
  }
  void real(int number, double v) {
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    fixed64(number, u);
  }
  void bytes(int number, std::string_view s) {
    tag(number, kLengthDelimited);
    put_varint(s.size());
    if (s.empty()) return;  // an empty message's view has no storage (memcpy wants a pointer)
    std::memcpy(room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void message(int number, const Message& m) { bytes(number, m.view()); }
  void clear() { size_ = 0; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_, size_}; }

 private:
  char* room(size_t n) {
    if (size_ + n > capacity_) grow(n);
    return data_ + size_;
  }
  void grow(size_t n) {  // rare: storage is kept between messages
    bytes_.resize(std::max(2 * bytes_.size(), size_ + n + 256));
    data_ = bytes_.data();
    capacity_ = bytes_.size();
  }
  void tag(int number, WireType type) { put_varint((static_cast<uint64_t>(number) << 3) | type); }
  void put_varint(uint64_t v) {
    char* p = room(10);  // a 64-bit varint is at most 10 bytes
    const char* start = p;
    for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>(v | 0x80);
    *p++ = static_cast<char>(v);
    size_ += static_cast<size_t>(p - start);
  }
  std::vector<char> bytes_;
  char* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// Debug annotation names, interned once at the start.
enum Annotation : uint64_t {
  kPhase = 1,
  kLayer,
  kMicroBatch,
  kOp,
  kGflop,
  kMbytes,
  kCollective,
  kBytes,
  kWaitUs,
  kTo,
  kFrom
};
constexpr std::string_view kAnnotationNames[] = {"",      "phase",   "layer",  "micro_batch",
                                                 "op",    "gflop",   "mbytes", "collective",
                                                 "bytes", "wait_us", "to",     "from"};

uint64_t nanoseconds(SimTime t) { return static_cast<uint64_t>((t.ps + 500) / 1000); }

class PerfettoTraceWriter {
 public:
  PerfettoTraceWriter(BlockText& out, const ir::TaskGraph& g, const Timeline& tl,
                      const TraceOptions& o)
      : out_(out), g_(g), tl_(tl), o_(o), kept_(g, tl, o), name_sent_(g.name_count()) {
    const size_t streams = g.stream_names().size();
    tracks_per_rank_ = 1 + streams + ir::kMemoryCategoryCount;
  }

  void write() {
    write_tracks();
    write_tasks();
    write_memory();
    write_link_utilisation();
  }

 private:
  // Track uuids: a rank's process, then its streams, then its memory categories; the network's
  // process and its link kinds after the last rank.
  uint64_t process_uuid(ir::RankId r) const { return 1 + uint64_t{r} * tracks_per_rank_; }
  uint64_t stream_uuid(ir::RankId r, uint32_t s) const { return process_uuid(r) + 1 + s; }
  uint64_t memory_uuid(ir::RankId r, int c) const {
    return process_uuid(r) + 1 + g_.stream_names().size() + static_cast<uint64_t>(c);
  }
  uint64_t network_uuid() const { return process_uuid(g_.ranks()); }

  void write_tracks();
  void track(uint64_t uuid, uint64_t parent, std::string_view name, bool counter);
  void process(uint64_t uuid, int64_t pid, std::string_view name);
  void write_tasks();
  void slice_begin(ir::TaskId t, uint8_t flow_role);
  void annotate_int(Annotation a, int64_t v);
  void annotate_real(Annotation a, double v);
  void annotate_string(Annotation a, std::string_view v);
  void write_memory();
  void write_link_utilisation();
  void counter(uint64_t uuid, SimTime at, double value);
  // Closes the packet built in packet_ (with any new interned strings) and writes it out.
  void send_packet(bool uses_interned);
  uint64_t interned_string(std::string_view s);  // a debug annotation's string value

  BlockText& out_;
  const ir::TaskGraph& g_;
  const Timeline& tl_;
  const TraceOptions& o_;
  const TraceSelection kept_;
  uint64_t tracks_per_rank_ = 0;
  bool first_packet_ = true;
  std::vector<char> name_sent_;            // by NameId: interned on the sequence yet
  std::array<char, 256> kind_sent_{};      // by TaskKind: interned yet
  std::vector<std::string_view> strings_;  // interned string values; iid = index + 1
  // Being built: the packet, its track event, one annotation, interned entries new in it.
  Message packet_, event_, annotation_, interned_, entry_;
};

void PerfettoTraceWriter::send_packet(bool uses_interned) {
  packet_.varint(field::kSequenceId, kSequence);
  if (first_packet_) {
    packet_.varint(field::kSequenceFlags, kIncrementalStateCleared);
    first_packet_ = false;
  } else if (uses_interned) {
    packet_.varint(field::kSequenceFlags, kNeedsIncrementalState);
  }
  if (!interned_.empty()) {  // strings first used by this packet travel with it
    packet_.message(field::kInternedData, interned_);
    interned_.clear();
  }
  char head[11];  // Trace.packet's tag, then the packet's length as a varint
  size_t n = 0;
  head[n++] = static_cast<char>((field::kTracePacket << 3) | kLengthDelimited);
  for (uint64_t v = packet_.view().size();; v >>= 7) {
    head[n++] = static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
    if (v < 0x80) break;
  }
  out_.raw(std::string_view(head, n));
  out_.raw(packet_.view());
  out_.end_record();
  packet_.clear();
}

uint64_t PerfettoTraceWriter::interned_string(std::string_view s) {
  for (size_t i = 0; i < strings_.size(); ++i) {
    if (strings_[i] == s) return i + 1;
  }
  strings_.push_back(s);
  entry_.clear();
  entry_.varint(field::kIid, strings_.size());
  entry_.bytes(field::kInternedName, s);
  interned_.message(field::kDebugAnnotationStringValues, entry_);
  return strings_.size();
}

void PerfettoTraceWriter::process(uint64_t uuid, int64_t pid, std::string_view name) {
  Message process, track;
  process.varint(field::kPid, static_cast<uint64_t>(pid));
  process.bytes(field::kProcessName, name);
  track.varint(field::kUuid, uuid);
  track.message(field::kProcess, process);
  packet_.message(field::kTrackDescriptor, track);
  send_packet(false);
}

void PerfettoTraceWriter::track(uint64_t uuid, uint64_t parent, std::string_view name,
                                bool counter) {
  Message track;
  track.varint(field::kUuid, uuid);
  track.bytes(field::kName, name);
  track.varint(field::kParentUuid, parent);
  if (counter) track.message(field::kCounter, Message{});
  packet_.message(field::kTrackDescriptor, track);
  send_packet(false);
}

// The tracks, and the names every slice and annotation uses (categories, annotation names).
void PerfettoTraceWriter::write_tracks() {
  for (uint64_t a = kPhase; a <= kFrom; ++a) {
    entry_.clear();
    entry_.varint(field::kIid, a);
    entry_.bytes(field::kInternedName, kAnnotationNames[a]);
    interned_.message(field::kDebugAnnotationNames, entry_);
  }
  send_packet(true);  // the sequence's first packet: clears the state, then interns the names
  for (ir::RankId r = 0; r < g_.ranks(); ++r) {
    if (!kept_.rank_kept(r)) continue;
    process(process_uuid(r), kept_.pid(r),
            o_.process_prefix + " " + std::to_string(g_.cluster_rank(r)));
    for (uint32_t s = 0; s < g_.stream_names().size(); ++s)
      track(stream_uuid(r, s), process_uuid(r), g_.stream_names()[s], false);
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c) {
      track(memory_uuid(r, c), process_uuid(r),
            "memory GiB " + std::string(ir::to_string(static_cast<ir::MemoryCategory>(c))), true);
    }
  }
  const std::vector<std::string_view> kinds = kept_.link_kinds();
  if (kinds.empty()) return;
  process(network_uuid(), kept_.pid(g_.ranks()),
          "network (mean utilisation of the links of each kind that carried traffic)");
  for (size_t k = 0; k < kinds.size(); ++k)
    track(network_uuid() + 1 + k, network_uuid(), "link utilisation % " + std::string(kinds[k]),
          true);
}

void PerfettoTraceWriter::annotate_int(Annotation a, int64_t v) {
  annotation_.clear();
  annotation_.varint(field::kAnnotationNameIid, a);
  annotation_.varint(field::kIntValue, static_cast<uint64_t>(v));
  event_.message(field::kDebugAnnotations, annotation_);
}

void PerfettoTraceWriter::annotate_real(Annotation a, double v) {
  annotation_.clear();
  annotation_.varint(field::kAnnotationNameIid, a);
  annotation_.real(field::kDoubleValue, v);
  event_.message(field::kDebugAnnotations, annotation_);
}

void PerfettoTraceWriter::annotate_string(Annotation a, std::string_view v) {
  const uint64_t iid = interned_string(v);
  annotation_.clear();
  annotation_.varint(field::kAnnotationNameIid, a);
  annotation_.varint(field::kStringValueIid, iid);
  event_.message(field::kDebugAnnotations, annotation_);
}

// A task's slice begins: name, category, arguments and its flow arrow's end.
void PerfettoTraceWriter::slice_begin(ir::TaskId t, uint8_t flow_role) {
  const ir::Task& task = g_.task(t);
  const TaskTiming& tm = tl_.tasks[t];
  const auto kind = static_cast<uint8_t>(task.kind);
  if (!kind_sent_[kind]) {  // the category (task kind), interned on first use as names are
    kind_sent_[kind] = 1;
    entry_.clear();
    entry_.varint(field::kIid, uint64_t{kind} + 1);
    entry_.bytes(field::kInternedName, ir::to_string(task.kind));
    interned_.message(field::kEventCategories, entry_);
  }
  if (!name_sent_[task.name]) {
    name_sent_[task.name] = 1;
    entry_.clear();
    entry_.varint(field::kIid, uint64_t{task.name} + 1);
    entry_.bytes(field::kInternedName, g_.name(task.name));
    interned_.message(field::kEventNames, entry_);
  }
  event_.clear();
  event_.varint(field::kType, kSliceBegin);
  event_.varint(field::kTrackUuid, stream_uuid(task.rank, task.stream));
  event_.varint(field::kNameIid, uint64_t{task.name} + 1);
  event_.varint(field::kCategoryIids, uint64_t{kind} + 1);
  annotate_string(kPhase, ir::to_string(task.phase));
  if (task.layer >= 0) annotate_int(kLayer, task.layer);
  if (task.micro_batch >= 0) annotate_int(kMicroBatch, task.micro_batch);
  if (task.kind == ir::TaskKind::compute) {
    const auto& op = g_.compute(task);
    annotate_string(kOp, ir::to_string(op.op));
    annotate_real(kGflop, op.flops.value * 1e-9);
    annotate_real(kMbytes, static_cast<double>(op.bytes.count) * 1e-6);
  } else if (task.kind == ir::TaskKind::collective) {
    annotate_string(kCollective, ir::to_string(g_.collective(task).type));
    annotate_int(kBytes, g_.collective(task).bytes.count);
    annotate_real(kWaitUs, (tm.start - tm.ready).seconds() * 1e6);
  } else if (task.kind == ir::TaskKind::send || task.kind == ir::TaskKind::recv) {
    const auto& tr = g_.transfer(task);
    annotate_int(kBytes, tr.bytes.count);
    annotate_int(task.kind == ir::TaskKind::send ? kTo : kFrom,
                 task.kind == ir::TaskKind::send ? tr.dst : tr.src);
  }
  // Perfetto begins an arrow at a slice listing an id it has not seen, continues it at one
  // listing an id it has, and ends it at a terminating id.
  if (flow_role & kFlowOut)
    event_.fixed64(field::kFlowIds, TraceSelection::flow_id(task));
  else if (flow_role & kFlowIn)
    event_.fixed64(field::kTerminatingFlowIds, TraceSelection::flow_id(task));
  packet_.varint(field::kTimestamp, nanoseconds(tm.start));
  packet_.message(field::kTrackEvent, event_);
  send_packet(true);
}

// Each task as a slice: begin then end, in task order (a stream's tasks run in that order, so each
// track's slices follow one another; the reader sorts by time, ties in file order).
void PerfettoTraceWriter::write_tasks() {
  const std::vector<uint8_t> role = kept_.flow_roles();
  for (ir::TaskId t = 0; t < g_.size(); ++t) {
    if (!kept_.task_kept(t)) continue;
    slice_begin(t, role[t]);
    const ir::Task& task = g_.task(t);
    event_.clear();
    event_.varint(field::kType, kSliceEnd);
    event_.varint(field::kTrackUuid, stream_uuid(task.rank, task.stream));
    packet_.varint(field::kTimestamp, nanoseconds(tl_.tasks[t].end));
    packet_.message(field::kTrackEvent, event_);
    send_packet(false);
  }
}

void PerfettoTraceWriter::counter(uint64_t uuid, SimTime at, double value) {
  event_.clear();
  event_.varint(field::kType, kCounter);
  event_.varint(field::kTrackUuid, uuid);
  event_.real(field::kDoubleCounterValue, value);
  packet_.varint(field::kTimestamp, nanoseconds(at));
  packet_.message(field::kTrackEvent, event_);
  send_packet(false);
}

// Memory by category: every category at a rank's first sample (or the window's start), then the
// category that changed.
void PerfettoTraceWriter::write_memory() {
  std::vector<char> started(g_.ranks(), 0);
  auto all = [&](ir::RankId r, SimTime at, const CategoryGiB& gib) {
    for (int c = 0; c < ir::kMemoryCategoryCount; ++c)
      counter(memory_uuid(r, c), at, gib[static_cast<size_t>(c)]);
    started[r] = 1;
  };
  kept_.for_each_memory_state(all, [&](ir::RankId r, SimTime at, const CategoryGiB& gib, int c) {
    if (!started[r])
      all(r, at, gib);
    else
      counter(memory_uuid(r, c), at, gib[static_cast<size_t>(c)]);
  });
}

// Link utilisation by kind: every kind at the first change, then the kinds that changed.
void PerfettoTraceWriter::write_link_utilisation() {
  std::vector<double> last;
  kept_.for_each_link_level([&](SimTime at, const std::vector<double>& percent) {
    for (size_t k = 0; k < percent.size(); ++k) {
      if (!last.empty() && last[k] == percent[k]) continue;
      counter(network_uuid() + 1 + k, at, percent[k]);
    }
    last = percent;
  });
}

}  // namespace

void write_perfetto_trace(std::ostream& out, const ir::TaskGraph& g, const Timeline& tl,
                          const TraceOptions& options) {
  BlockText text(
      [&](TextBlock& b) { out.write(b.bytes.get(), static_cast<std::streamsize>(b.size)); });
  PerfettoTraceWriter(text, g, tl, options).write();
  text.flush();
}

bool is_perfetto_trace_path(const std::string& path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() > suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".pftrace") || ends_with(".perfetto-trace");
}

void write_trace_file(const std::string& path, const ir::TaskGraph& g, const Timeline& tl,
                      const TraceOptions& options) {
  if (!is_perfetto_trace_path(path)) return write_chrome_trace_file(path, g, tl, options);
  write_blocks_to_file(path, false, [&](const BlockSink& sink) {
    BlockText text(sink);
    PerfettoTraceWriter(text, g, tl, options).write();
    text.flush();
  });
}

}  // namespace cs::sim
