// Reading a whole input file (scenario, profile, table) with a size bound: a directory, a file
// that cannot be opened or one larger than `limit` bytes (/dev/zero, a log given by mistake) is
// a UserError naming the path, instead of std::bad_alloc or basic_filebuf::underflow. And the
// one check of what a path is, so that no reader calls /dev/zero "no such file".
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "common/error.h"

namespace cs {

// 64 MiB: the largest shipped input is under 100 KiB.
inline constexpr int64_t kMaxInputFileBytes = int64_t{64} << 20;
// YAML inputs (scenarios, hardware files, profiles, suites and their data, recipes): 4 MiB, 37x the
// largest shipped one (profiles/h100_sxm.yaml, 111 KiB). yaml-cpp holds about 90 bytes per byte of
// a file of short list items: 60 MiB of them took 5.8 GB and 55 s before the scenario reader could
// say the key was unknown; 150 MiB given to `validate --suite` ended in std::bad_alloc.
inline constexpr int64_t kMaxYamlFileBytes = int64_t{4} << 20;

// What `path` names when it is neither a regular file nor a folder, as a refusal says it: "no
// such file or folder", "a character device (such as /dev/zero)", "a named pipe (FIFO)", "a
// socket", "a block device", or the system's reason it cannot be looked at ("Permission
// denied"); "" for a regular file or a folder. Symbolic links are followed.
inline std::string unusual_path_kind(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return "no such file or folder";
  if (ec) return ec.message();
  switch (st.type()) {
    case fs::file_type::regular:
    case fs::file_type::directory:
      return "";
    case fs::file_type::character:
      return "a character device (such as /dev/zero)";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a named pipe (FIFO)";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file or folder";
  }
}

// `path` given to `flag` (validate --suite, --recipes) as one file of `what` or a folder of them;
// anything else is a UserError saying what it is: "--suite '/dev/zero': a character device (such
// as /dev/zero), not a suite file or a folder of them" (it was "no such file or folder").
inline void require_file_or_folder(const std::string& flag, const std::string& path,
                                   const std::string& what) {
  const std::string kind = unusual_path_kind(path);
  if (kind.empty()) return;
  if (kind == "no such file or folder") throw UserError(flag + " '" + path + "': " + kind);
  throw UserError(flag + " '" + path + "': " + kind + ", not a " + what + " or a folder of them");
}

// A folder or a missing path given where a file of `what` is read is a UserError saying which. A
// device or a pipe is read as a stream, up to the reader's bound (/dev/zero): `<(zcat log.gz)` is
// a pipe, and a named pipe waits for its writer as `cat` does.
inline void require_readable_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, not a " + what);
  if (unusual_path_kind(path) == "no such file or folder")
    throw UserError(path + ": cannot open " + what + ": no such file");
}

inline std::string read_text_file(const std::string& path, const std::string& what,
                                  int64_t limit = kMaxInputFileBytes) {
  require_readable_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open " + what + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  try {
    while (in) {
      in.read(buf, sizeof buf);
      const std::streamsize got = in.gcount();
      if (got <= 0) break;
      if (static_cast<int64_t>(text.size()) + got > limit) {
        throw UserError(path + ": " + what + " is larger than " + std::to_string(limit >> 20) +
                        " MiB; not read (the bound keeps a file given by mistake from exhausting "
                        "memory)");
      }
      text.append(buf, static_cast<size_t>(got));
    }
  } catch (const std::ios_base::failure&) {
    throw UserError(path + ": cannot read " + what);
  }
  if (in.bad()) throw UserError(path + ": cannot read " + what);
  return text;
}

}  // namespace cs
