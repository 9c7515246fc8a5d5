// One libFuzzer target per reader. A target hands the reader the fuzzer's bytes; a UserError (the
// reader refusing the input with a message) is the expected outcome, and anything else escaping
// (std::bad_alloc, yaml-cpp's "bad conversion", std::out_of_range, ...) is a finding: the target
// aborts so that libFuzzer keeps the input. Under the sanitizers, crashes and UB are findings too.
//
// The same source builds two ways: with -fsanitize=fuzzer (CLUSTERSIM_FUZZ, clang) as a fuzzer,
// and with fuzz/replay_main.cpp as a plain program that replays tests/data/fuzz_regressions/
// under ctest.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <typeinfo>

#include "common/error.h"

namespace cs::fuzz {

// Runs `f`; a UserError is fine, any other exception aborts naming it.
template <class F>
int run_reader(F f) {
  try {
    f();
  } catch (const UserError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: a %s escaped the reader: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}

// The readers that take a path: the bytes in a per-process file under /tmp.
inline std::string write_temp(const uint8_t* data, size_t size, const char* ext) {
  const std::string path = "/tmp/clustersim-fuzz-" + std::to_string(getpid()) + ext;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace cs::fuzz
