#include "sim/trace_text.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/output_file.h"

namespace cs::sim {
namespace {

// Room past kBlockBytes, so that an event begun below the mark ends in the same block.
constexpr size_t kBlockSlack = size_t{64} << 10;
constexpr size_t kLongestInteger = 20;  // "-9223372036854775808"
constexpr size_t kLongestDouble = 32;   // std::to_chars' shortest form is at most 24

constexpr auto kPowersOfTen = [] {  // 10^0 .. 10^18: every power an int64 holds
  std::array<uint64_t, 19> p{};
  p[0] = 1;
  for (size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * 10;
  return p;
}();

// Writes the escaped characters of `s` (no quotes) at `out`, which has room for 6 per character.
char* escape(std::string_view s, char* out) {
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      *out++ = '\\';
      *out++ = c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      constexpr char kHex[] = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      *out++ = '\\';
      *out++ = 'u';
      *out++ = '0';
      *out++ = '0';
      *out++ = kHex[u >> 4];
      *out++ = kHex[u & 15];
    } else {
      *out++ = c;
    }
  }
  return out;
}

// A gzip file (RFC 1952: ISA-L writes the header and the CRC trailer) compressed by ISA-L's igzip
// at level 1. On trace JSON it runs at about 2 GB/s on one core, six times zlib's level 1, and its
// file is smaller (1 GB of a trace: 71 MB, zlib's level 1 77 MB): a 3.8 GB trace is compressed in
// about the time it takes to format it.
class GzipEncoder {
 public:
  explicit GzipEncoder(int fd) : fd_(fd), stream_(std::make_unique<isal_zstream>()) {
    isal_deflate_init(stream_.get());
    stream_->level = 1;
    stream_->level_buf = level_buffer_.data();
    stream_->level_buf_size = static_cast<uint32_t>(level_buffer_.size());
    stream_->gzip_flag = IGZIP_GZIP;
  }
  // Compresses `n` bytes and writes what comes out; 0, or the errno of the failed write.
  int write(const char* bytes, size_t n) {
    stream_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(bytes));
    stream_->avail_in = static_cast<uint32_t>(n);
    while (stream_->avail_in > 0) {
      if (const int e = deflate_once(); e != 0) return e;
    }
    return 0;
  }
  // Ends the stream (the last block and the trailer); 0 or an errno.
  int finish() {
    stream_->end_of_stream = 1;
    while (stream_->internal_state.state != ZSTATE_END) {
      if (const int e = deflate_once(); e != 0) return e;
    }
    return 0;
  }

 private:
  int deflate_once() {
    stream_->next_out = out_.data();
    stream_->avail_out = static_cast<uint32_t>(out_.size());
    if (isal_deflate(stream_.get()) != COMP_OK) return EIO;  // only for bad parameters
    return write_all(fd_, reinterpret_cast<const char*>(out_.data()),
                     out_.size() - stream_->avail_out);
  }

  int fd_;
  std::unique_ptr<isal_zstream> stream_;  // 80 KB of state, on the heap
  std::vector<uint8_t> level_buffer_ = std::vector<uint8_t>(ISAL_DEF_LVL1_DEFAULT);
  // 256 KiB of compressed output per write: a 1 MiB block of trace JSON deflates to about 70 KiB,
  // so one write per block, and incompressible input takes a few.
  std::vector<uint8_t> out_ = std::vector<uint8_t>(size_t{256} << 10);
};

// Writes a file of many GB around the page cache (O_DIRECT) where the file system takes it, in
// aligned whole blocks from a staging buffer; the last partial block, and everything on a file
// system that refuses direct writes (tmpfs, a pipe, /dev/full), go through the cache as usual.
// Through the cache, the 3.8 GB trace of llama2-70b-64xh100 cost 10-12 s of system time on our
// 2-core VM (the kernel allocating and filling a fresh page for every 4 KiB), more than formatting
// it; written directly, the whole run took 2 s of system time, the device writing at its own pace
// (dd with fdatasync: 733 MB/s).
class UncachedWriter {
 public:
  explicit UncachedWriter(int fd) : fd_(fd) {
    const int flags = ::fcntl(fd_, F_GETFL);
    direct_ = flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
    if (direct_) {
      staged_.reset(static_cast<char*>(std::aligned_alloc(kAlign, kStageBytes)));
      if (!staged_) buffered();  // no staging: through the cache
    }
  }
  // 0, or the errno of the failed write.
  int write(const char* bytes, size_t n) {
    while (direct_ && n > 0) {
      const size_t take = std::min(n, kStageBytes - used_);
      std::memcpy(staged_.get() + used_, bytes, take);
      used_ += take;
      bytes += take;
      n -= take;
      if (used_ == kStageBytes) {
        if (const int e = write_staged(); e != 0) return e;
      }
    }
    return n > 0 ? write_all(fd_, bytes, n) : 0;
  }
  // Writes what is staged (less than a stage): through the cache, as its end is not aligned.
  int finish() {
    if (!direct_ || used_ == 0) return 0;
    const size_t n = used_;
    used_ = 0;
    if (const int e = buffered(); e != 0) return e;
    return write_all(fd_, staged_.get(), n);
  }

 private:
  static constexpr size_t kAlign = 4096;                  // a page: any block size up to it
  static constexpr size_t kStageBytes = size_t{4} << 20;  // whole pages per write
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  // Leaves direct writing: 0 or the errno of fcntl.
  int buffered() {
    direct_ = false;
    const int flags = ::fcntl(fd_, F_GETFL);
    return flags >= 0 && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0 ? 0 : errno;
  }
  // A whole stage, directly; where the file system refuses (EINVAL: no direct I/O there, or a short
  // write left the rest unaligned), the rest through the cache, as write_all writes.
  int write_staged() {
    const char* at = staged_.get();
    size_t left = used_;
    used_ = 0;
    while (left > 0) {
      const ssize_t written = ::write(fd_, at, left);
      if (written > 0) {
        at += written;
        left -= static_cast<size_t>(written);
      } else if (written < 0 && errno == EINVAL) {
        if (const int e = buffered(); e != 0) return e;
        return write_all(fd_, at, left);
      } else if (written == 0 || errno != EINTR) {
        return written < 0 ? errno : EIO;
      }
    }
    return 0;
  }

  int fd_;
  bool direct_ = false;
  std::unique_ptr<char, Free> staged_;
  size_t used_ = 0;
};

}  // namespace

// --- BackgroundWriter ------------------------------------------------------------------------

BackgroundWriter::BackgroundWriter(Consume consume)
    : consume_(std::move(consume)), thread_([this] { run(); }) {}

BackgroundWriter::~BackgroundWriter() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
}

void BackgroundWriter::take(TextBlock& block) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return full_.size() < kDepth || error_ != 0; });
  if (error_ != 0) throw WriteFailed{error_};
  full_.push_back(std::move(block));
  block = {};
  if (!empty_.empty()) {
    block = std::move(empty_.front());
    empty_.pop_front();
  }
  lock.unlock();
  changed_.notify_all();
}

void BackgroundWriter::finish() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (failure_) std::rethrow_exception(failure_);
}

void BackgroundWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !full_.empty() || closing_; });
    if (full_.empty()) return;  // closing, and everything is written
    TextBlock block = std::move(full_.front());
    full_.pop_front();
    lock.unlock();
    changed_.notify_all();  // a formatter waiting for queue room
    int error = 0;
    if (!failure_ && error_ == 0) {  // error_ is only written by this thread
      try {
        error = consume_(block.bytes.get(), block.size);
      } catch (...) {
        failure_ = std::current_exception();  // read by finish() after the join
      }
    }
    block.size = 0;
    lock.lock();
    if (error != 0) {
      error_ = error;
      changed_.notify_all();  // a formatter waiting for queue room stops
    }
    empty_.push_back(std::move(block));
  }
}

// --- BlockText -------------------------------------------------------------------------------

BlockText::BlockText(BlockSink sink) : sink_(std::move(sink)) { make_room(0); }

void BlockText::flush() {
  if (used() > 0) {
    block_.size = used();
    sink_(block_);
    block_.size = 0;
  }
  at_ = block_.bytes.get();
  end_ = at_ + block_.capacity;
  if (block_.capacity == 0) make_room(0);
}

void BlockText::make_room(size_t n) {
  if (used() > 0) flush();
  const size_t capacity = std::max(kBlockBytes + kBlockSlack, n);
  if (block_.capacity < capacity) {
    block_.bytes = std::make_unique<char[]>(capacity);
    block_.capacity = capacity;
  }
  at_ = block_.bytes.get();
  end_ = at_ + block_.capacity;
}

// --- JsonText --------------------------------------------------------------------------------

void JsonText::integer(int64_t v) {
  room(kLongestInteger);
  at_ = std::to_chars(at_, at_ + kLongestInteger, v).ptr;
}

void JsonText::number(double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) v = 0;
  room(kLongestDouble);
  at_ = std::to_chars(at_, at_ + kLongestDouble, v).ptr;
}

void JsonText::decimal(int64_t units, int decimals) {
  room(2 * kLongestInteger + 2);  // sign, whole part, point, up to 18 decimals
  if (units < 0) *at_++ = '-';
  // The magnitude as unsigned: -INT64_MIN does not fit an int64.
  const uint64_t magnitude = units < 0 ? 0 - static_cast<uint64_t>(units) : units;
  const uint64_t scale = kPowersOfTen[static_cast<size_t>(decimals)];
  at_ = std::to_chars(at_, at_ + kLongestInteger, magnitude / scale).ptr;
  uint64_t fraction = magnitude % scale;
  if (fraction == 0) return;
  int digits = decimals;
  while (fraction % 10 == 0) {  // trailing zeros dropped
    fraction /= 10;
    --digits;
  }
  *at_++ = '.';
  for (int i = digits; i-- > 0; fraction /= 10) at_[i] = static_cast<char>('0' + fraction % 10);
  at_ += digits;
}

void JsonText::rounded(double v, int decimals) {
  const double scale = static_cast<double>(kPowersOfTen[static_cast<size_t>(decimals)]);
  if (!(v == v) || std::abs(v) * scale > 9e18) return number(v);
  decimal(std::llround(v * scale), decimals);
}

void JsonText::string(std::string_view s) {
  room(6 * s.size() + 2);
  *at_++ = '"';
  at_ = escape(s, at_);
  *at_++ = '"';
}

std::string json_quoted(std::string_view s) {
  std::string out(6 * s.size() + 2, '\0');
  out[0] = '"';
  char* end = escape(s, out.data() + 1);
  *end++ = '"';
  out.resize(static_cast<size_t>(end - out.data()));
  return out;
}

void write_blocks_to_file(const std::string& path, bool gzip,
                          const std::function<void(const BlockSink&)>& produce) {
  OutputFile file(path);
  const int fd = file.descriptor();
  std::unique_ptr<GzipEncoder> zipper = gzip ? std::make_unique<GzipEncoder>(fd) : nullptr;
  // Uncompressed traces are the multi-GB ones: around the page cache where it can be.
  std::unique_ptr<UncachedWriter> plain = gzip ? nullptr : std::make_unique<UncachedWriter>(fd);
  // Written (or compressed) on a thread of its own while the next block is formatted.
  int write_errno = 0;
  BackgroundWriter writer([&](const char* bytes, size_t n) {
    write_errno = zipper ? zipper->write(bytes, n) : plain->write(bytes, n);
    return write_errno;
  });
  try {
    produce([&](TextBlock& b) { writer.take(b); });
    writer.finish();
  } catch (const WriteFailed&) {
    writer.finish();  // write_errno is the writer thread's, read after its join
  } catch (...) {
    writer.finish();
    throw;
  }
  if (write_errno == 0) write_errno = zipper ? zipper->finish() : plain->finish();
  if (write_errno != 0) file.fail(write_errno);
  file.commit();
}

}  // namespace cs::sim
