// The text side of trace writing: a JSON formatter that fills fixed blocks (no per-append
// capacity checks, numbers printed in place), and a writer thread that takes full blocks, so
// that formatting the next block overlaps writing or compressing the last one.
//
// A 64-GPU trace is 15 million events; std::string appends and a double's shortest form were most
// of the writer's time, and the write system calls as much again on the same core.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/units.h"

namespace cs::sim {

// A block of formatted text.
struct TextBlock {
  std::unique_ptr<char[]> bytes;
  size_t size = 0;
  size_t capacity = 0;
};

// Receives a full block and leaves `block` empty (the same storage or another of the same size).
using BlockSink = std::function<void(TextBlock& block)>;

// Thrown by BackgroundWriter::take once a block could not be written: formatting the rest of a
// multi-GB trace for a full disk would be minutes of wasted work.
struct WriteFailed {
  int error_number;  // the failed write's errno
};

// Writes `consume` for each block passed to it on a thread of its own. At most kDepth blocks are
// queued (the formatter waits beyond that), so memory does not grow with the output. `consume`
// returns 0, or the errno of a failed write: no block is consumed after that, and the next take()
// throws WriteFailed. An exception from `consume` is kept and rethrown by finish().
class BackgroundWriter {
 public:
  using Consume = std::function<int(const char* bytes, size_t size)>;
  explicit BackgroundWriter(Consume consume);
  ~BackgroundWriter();  // waits for the queued blocks
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Queues `block` and hands back an empty one; throws WriteFailed once a write has failed.
  void take(TextBlock& block);
  // Waits until every queued block is consumed and stops the thread.
  void finish();

 private:
  static constexpr size_t kDepth = 3;
  void run();

  Consume consume_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<TextBlock> full_, empty_;
  bool closing_ = false;
  int error_ = 0;  // a failed write's errno
  std::exception_ptr failure_;
  std::thread thread_;
};

// Bytes into blocks of about kBlockBytes, handed to the sink when full.
class BlockText {
 public:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  explicit BlockText(BlockSink sink);

  template <size_t N>
  void raw(const char (&literal)[N]) {  // a literal: its length is known at compile time
    room(N - 1);
    std::memcpy(at_, literal, N - 1);
    at_ += N - 1;
  }
  void raw(std::string_view s) {
    if (s.empty()) return;  // memcpy wants a pointer, and an empty view may have none
    room(s.size());
    std::memcpy(at_, s.data(), s.size());
    at_ += s.size();
  }
  // Ends a record (an event, a packet): the block goes to the sink once past kBlockBytes, so a
  // record is never split between two hand-overs.
  void end_record() {
    if (used() >= kBlockBytes) flush();
  }
  void flush();

 protected:
  void room(size_t n) {
    if (static_cast<size_t>(end_ - at_) < n) make_room(n);
  }
  char* at_ = nullptr;  // the next byte; room() makes space first

 private:
  size_t used() const { return static_cast<size_t>(at_ - block_.bytes.get()); }
  void make_room(size_t n);

  BlockSink sink_;
  TextBlock block_;
  char* end_ = nullptr;
};

// JSON text.
class JsonText : public BlockText {
 public:
  using BlockText::BlockText;
  void integer(int64_t v);
  // Shortest round-trip form; NaN and values past +/-1e300 print as 0 (JSON has no NaN).
  void number(double v);
  // `units` / 10^decimals exactly, trailing zeros dropped: a time in picoseconds as microseconds
  // (decimals 6), bytes as MB. Shorter and faster than a double's shortest form, and without its
  // binary noise (43.04433 us, not 43.044329999999995). decimals <= 18.
  void decimal(int64_t units, int decimals);
  void micros(SimTime t) { decimal(t.ps, 6); }
  // A derived double kept to `decimals` places (GFLOP, GiB).
  void rounded(double v, int decimals);
  // A quoted, escaped JSON string.
  void string(std::string_view s);
  // Starts an event object, with the separator after the previous one.
  void begin_event() {
    if (!first_) raw(",\n");
    first_ = false;
    raw("{");
  }
  void end_event() {
    raw("}");
    end_record();
  }

 private:
  bool first_ = true;
};

// Writes what `produce` formats (through the sink it is given) to `path`, gzip-compressed when
// `gzip` (ISA-L's igzip, level 1), on a BackgroundWriter; all or nothing (common/output_file.h):
// throws UserError naming the file and the reason when it cannot be written.
void write_blocks_to_file(const std::string& path, bool gzip,
                          const std::function<void(const BlockSink&)>& produce);

// JSON's quoted form of `s` ("a\"b" for a"b), for text printed many times.
std::string json_quoted(std::string_view s);

}  // namespace cs::sim
