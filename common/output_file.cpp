#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <streambuf>
#include <vector>

#include "common/error.h"

namespace cs {

// A stream buffer over a file descriptor that remembers the first failed write's errno (an
// std::ofstream reports only that something failed, not why).
class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(1 << 16) {
    setp(data_.data(), data_.data() + data_.size());
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (drain() != 0) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain(); }

 private:
  int drain() {
    if (error_ == 0) error_ = write_all(fd_, pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(data_.data(), data_.data() + data_.size());
    return error_ == 0 ? 0 : -1;
  }
  int fd_;
  int error_ = 0;
  std::vector<char> data_;
};

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  const fs::path target(path_);
  std::error_code ec;
  if (fs::is_directory(target, ec))
    throw UserError("cannot write '" + path_ + "': it is a directory");
  // A device, pipe or socket (/dev/stdout, /dev/full, a FIFO) is written in place: there is no
  // file to replace, and renaming onto it would replace the device node.
  const fs::file_status st = fs::status(target, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    in_place_ = true;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) fail(errno);
    buffer_ = std::make_unique<Buffer>(fd_);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
    return;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string pattern = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) fail(errno);
  temporary_ = pattern;
  // mkstemp creates the file 0600; an output file gets the usual permissions (0666 less umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

std::ostream& OutputFile::stream() { return *stream_; }

void OutputFile::fail(int error_number) const {
  // A regular file's target is untouched (the bytes went to a temporary file, now removed); a
  // device or pipe may have taken part of them.
  throw UserError("cannot write '" + path_ + "': " + std::strerror(error_number) +
                  (in_place_ ? "" : " (the file was not written)"));
}

void OutputFile::commit() {
  stream_->flush();
  if (buffer_->error() != 0) fail(buffer_->error());
  if (!*stream_) fail(EIO);
  if (fd_ >= 0) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(errno);
  }
  if (!temporary_.empty() && ::rename(temporary_.c_str(), path_.c_str()) != 0) fail(errno);
  committed_ = true;
}

int write_all(int fd, const char* bytes, size_t n) {
  while (n > 0) {
    const ssize_t written = ::write(fd, bytes, n);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return written < 0 ? errno : EIO;
    bytes += written;
    n -= static_cast<size_t>(written);
  }
  return 0;
}

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& body) {
  OutputFile f(path);
  body(f.stream());
  f.commit();
}

}  // namespace cs
