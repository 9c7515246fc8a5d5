// Reading a whole input file (scenario, profile, table) with a size bound: a directory, a file
// that cannot be opened or one larger than `limit` bytes (/dev/zero, a log given by mistake) is
// a UserError naming the path, instead of std::bad_alloc or basic_filebuf::underflow. And the
// one check of what a path is, so that no reader calls /dev/zero "no such file".
#pragma once

#include <cstdint>
#include <filesystem>  // (for the readers that include this header for it)
#include <fstream>
#include <string>

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
std::string unusual_path_kind(const std::string& path);

// `path` given to `flag` (validate --suite, --recipes) as one file of `what` or a folder of them;
// anything else is a UserError saying what it is: "--suite '/dev/zero': a character device (such
// as /dev/zero), not a suite file or a folder of them" (it was "no such file or folder").
void require_file_or_folder(const std::string& flag, const std::string& path,
                            const std::string& what);

// A folder or a missing path given where a file of `what` is read is a UserError saying which. A
// device or a pipe is read as a stream, up to the reader's bound (/dev/zero; `<(zcat log.gz)` is
// a pipe).
void require_readable_file(const std::string& path, const std::string& what);

// How long a named pipe may wait for its writer's first bytes before it is refused.
inline constexpr int kPipeWriterWaitSeconds = 10;

// `path` opened for reading, a file descriptor the caller closes, or a UserError naming the path
// and the system's reason. A named pipe nobody writes to is refused after kPipeWriterWaitSeconds
// (it waited forever, as `cat` does).
int open_for_reading(const std::string& path, const std::string& what);

// The whole of `path`, at most `limit` bytes, or a UserError naming the path and why.
std::string read_text_file(const std::string& path, const std::string& what,
                           int64_t limit = kMaxInputFileBytes);

}  // namespace cs
