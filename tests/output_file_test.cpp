// OutputFile: a failed write is an error naming the file and the reason, and never leaves a
// truncated file under the target's name.
#include "common/output_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("cs_output_file_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, CommitReplacesTheTargetAndLeavesNoTemporaryFile) {
  const fs::path d = fresh_dir("commit");
  const std::string target = (d / "report.json").string();
  std::ofstream(target) << "old";
  write_output_file(target, [](std::ostream& o) { o << "new text\n"; });
  EXPECT_EQ(read(target), "new text\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

TEST(OutputFile, AnErrorBeforeCommitLeavesTheOldFileAndNoTemporaryFile) {
  const fs::path d = fresh_dir("abandon");
  const std::string target = (d / "report.json").string();
  std::ofstream(target) << "old";
  EXPECT_THROW(write_output_file(target,
                                 [](std::ostream& o) {
                                   o << "half";
                                   throw UserError("the writer failed");
                                 }),
               UserError);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

TEST(OutputFile, AFullDeviceIsAnErrorNamingTheFileAndTheReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  try {
    // 1 MiB: more than the 64 KiB buffer, so the failure comes from a write, not only the flush.
    write_output_file("/dev/full", [](std::ostream& o) { o << std::string(1 << 20, 'x'); });
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "cannot write '/dev/full': No space left on device");
  }
}

// A file-size limit (ulimit -f) stands in for a full disk on a regular file: write() fails with
// EFBIG once the file would pass it, and the half-written temporary file must not survive.
TEST(OutputFile, AFileSizeLimitLeavesNoPartialFile) {
  const fs::path d = fresh_dir("limit");
  const std::string target = (d / "trace.json").string();
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_output_file(target, [](std::ostream& o) { o << std::string(100000, 'x'); });
  } catch (const UserError& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(message, "cannot write '" + target + "': File too large (the file was not written)");
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 0);
  fs::remove_all(d);
}

TEST(OutputFile, AMissingFolderIsAnErrorNamingTheFile) {
  try {
    write_output_file("/nonexistent-folder-cs/x.json", [](std::ostream& o) { o << "x"; });
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "cannot write '/nonexistent-folder-cs/x.json': No such file or directory (the "
                 "file was not written)");
  }
}

}  // namespace
}  // namespace cs
