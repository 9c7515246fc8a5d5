#include "sim/trace_text.h"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <string>

#include "common/output_file.h"

namespace cs::sim {
namespace {

constexpr int kGzipLevel = 1;  // zlib's fastest: ~10x on trace JSON

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
  changed_.wait(lock, [&] { return full_.size() < kDepth; });
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
    if (!failure_) {
      try {
        consume_(block.bytes.get(), block.size);
      } catch (...) {
        failure_ = std::current_exception();  // read by finish() after the join
      }
    }
    block.size = 0;
    lock.lock();
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
  gzFile zipped = nullptr;
  if (gzip) {  // zlib writes the temporary file through its descriptor, which gzclose closes
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
    produce([&](TextBlock& b) { writer.take(b); });
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
