// Reading a whole input file (scenario, profile, table) with a size bound: a directory, a file
// that cannot be opened or one larger than `limit` bytes (/dev/zero, a log given by mistake) is
// a UserError naming the path, instead of std::bad_alloc or basic_filebuf::underflow.
#pragma once

#include <cstdint>
#include <filesystem>
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

inline std::string read_text_file(const std::string& path, const std::string& what,
                                  int64_t limit = kMaxInputFileBytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, not a " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open " + what);
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
