// Writing an output file so that a failure is never silent and never leaves half a file under the
// target's name (a report cut at 3,874 bytes on a full disk used to exit 0). The bytes go to a
// temporary file beside the target; every write, the flush and the close are checked; only a
// complete file is renamed onto the target. Any failure is a UserError naming the target and the
// operating system's reason ("No space left on device"), and the temporary file is removed.
//
//   OutputFile f(path);
//   f.stream() << ...;   // or write to f.descriptor() / f.temporary_path() yourself
//   f.commit();          // without it (an exception on the way), the target is left untouched
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace cs {

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  // The temporary file's descriptor, for writers that write it themselves (write_all); commit()
  // closes it.
  int descriptor() const { return fd_; }
  const std::string& path() const { return path_; }

  // Flushes, checks every write, closes and renames onto the target.
  void commit();
  // Throws the UserError for a failed write with the given errno (for writers that write
  // through descriptor() themselves).
  [[noreturn]] void fail(int error_number) const;

 private:
  class Buffer;
  std::string path_, temporary_;
  int fd_ = -1;
  bool committed_ = false;
  bool in_place_ = false;  // a device or pipe, written directly
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// Writes all `n` bytes to `fd`, through short writes and interruptions; 0, or the errno of the
// write that failed.
int write_all(int fd, const char* bytes, size_t n);

// The whole file in one call: `body` writes the text, then the file is committed.
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& body);

}  // namespace cs
