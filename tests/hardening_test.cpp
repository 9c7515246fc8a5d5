// Issue 19 (hardening): inputs that crashed (SIGFPE on a product wrapped to 0), hung, exhausted
// memory or ran silently wrong now give one error each, pinned exactly here. The CLI-level cases
// (flags, exit codes) are in tests/cmake/hardening.cmake.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "cli/flags.h"
#include "common/checked.h"
#include "common/limits.h"
#include "common/text_file.h"
#include "scenarios/profile_io.h"
#include "scenarios/scenario.h"
#include "test_paths.h"
#include "validate/table_validation.h"

namespace cs {
namespace {

std::string src(const std::string& rel) { return cs::test_paths::source_dir() + "/" + rel; }

// The error of parsing tests/data/bad/NAME (through the relative path a user would type).
std::string error_of(const std::string& name) {
  const std::string path = "tests/data/bad/" + name;
  try {
    std::ifstream in(src(path), std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    scenario::parse_scenario(buf.str(), path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

template <class F>
std::string error_from(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Checked, ProductsThatOverflowNameTheQuantity) {
  // 2^61 x 8 = 2^64: wrapped to 0 in int64, then divided by.
  EXPECT_EQ(error_from([] { return checked_mul(int64_t{1} << 61, 8, "micro_batch x dp"); }),
            "micro_batch x dp: 2305843009213693952 x 8 overflows a 64-bit integer");
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_product({2, 3, 7}, "x"), 42);
  EXPECT_EQ(error_from([] { return checked_add(INT64_MAX, 1, "tasks"); }),
            "tasks: 9223372036854775807 + 1 overflows a 64-bit integer");
  EXPECT_EQ(error_from([] { return checked_int(int64_t{1} << 32, "layers"); }),
            "layers: 4294967296 does not fit in a 32-bit integer");
}

// Crashes: SIGFPE before.
TEST(Hardening, MicroBatchTimesDpOverflowIsAnError) {
  // micro_batch is bounded where read (2^61 > 2^24 sequences), before any product.
  EXPECT_EQ(error_of("h_micro_batch_overflow.yaml"),
            "tests/data/bad/h_micro_batch_overflow.yaml:12:16: training.micro_batch: "
            "2305843009213693952 is out of range: at most 16777216 sequences (about 1000 times the "
            "largest published batch (DeepSeek-V3: 15360 sequences of 4096 tokens), and what a "
            "scenario accepts)");
}
TEST(Hardening, VirtualStagesOverflowIsAnError) {
  // 8 x 536870912 = 2^32 wrapped an int to 0, then layers % 0.
  EXPECT_EQ(
      error_of("h_virtual_stages_overflow.yaml"),
      "tests/data/bad/h_virtual_stages_overflow.yaml:9:19: layout.virtual_stages: 536870912 "
      "is out of range: at most 100000 model chunks per stage (each chunk holds a layer or more "
      "of the model's)");
}
TEST(Hardening, ValidateChecksProductsItself) {
  // validate() is also reached from code that builds layouts (planner, tables): the products are
  // checked there too, not only the YAML bounds.
  strategy::Layout l;
  l.pp = 8;
  l.schedule = strategy::PipelineSchedule::interleaved;
  l.virtual_stages = 536870912;
  strategy::TrainingSpec t;
  t.global_batch = 64;
  t.micro_batch = 8;
  t.seq_len = 1024;
  const model::ModelSpec m = model::find_model_preset("gpt2-large");
  // 8 x 536870912 = 4294967296 chunks: no wrap to 0; 36 layers cannot fill them.
  EXPECT_EQ(error_from([&] { strategy::validate(l, t, m, 8); }),
            "gpt2-large's 36 layers cannot fill pp x virtual_stages = 4294967296 model chunks "
            "(each needs a layer); choose pp x "
            "virtual_stages of at most 36");
  strategy::Layout d;
  d.dp = 8;
  t.micro_batch = int64_t{1} << 61;
  EXPECT_EQ(error_from([&] { strategy::validate(d, t, m, 8); }),
            "micro_batch x dp: 2305843009213693952 x 8 overflows a 64-bit integer");
}

// Memory exhaustion before.
TEST(Hardening, TaskCountGuard) {
  // 6,400,000 / (1 x dp 2) = 3,200,000 micro-batches x 36 layers x 32 tasks = 3.7e9 tasks.
  EXPECT_EQ(
      error_of("h_global_batch_tasks.yaml"),
      "tests/data/bad/h_global_batch_tasks.yaml:7:3: layout: this layout would create 3.7e+09 "
      "tasks (3200000 micro-batches x 36 layers x ~32 "
      "tasks each); the limit is 5e+07: use a larger micro_batch or dp, or a smaller global_batch");
}
TEST(Hardening, ClusterSizeGuard) {
  EXPECT_EQ(error_of("h_nodes_million.yaml"),
            "tests/data/bad/h_nodes_million.yaml:6:10: cluster.nodes: 1000000 is out of range: at "
            "most 131072 nodes (each node holds a GPU or more, and a cluster has at most 131072 "
            "GPUs)");
  // 20,000 nodes pass the node bound; 160,000 GPUs do not.
  EXPECT_EQ(error_of("h_nodes_cluster_limit.yaml"),
            "tests/data/bad/h_nodes_cluster_limit.yaml:5:3: cluster: a cluster of 160000 GPUs is "
            "above the limit of 131072 GPUs (twice the largest announced training cluster)");
}

// Silently wrong before.
TEST(Hardening, IntegersAbove2To32AreRefused) {
  // 4294967308 = 2^32 + 12 ran with 12 layers.
  EXPECT_EQ(error_of("h_layers_above_2_32.yaml"),
            "tests/data/bad/h_layers_above_2_32.yaml:4:11: model.layers: 4294967308 is out of "
            "range: at most 100000 layers (" +
                std::string(limits::kModelDimensionWhy) + ")");
  EXPECT_EQ(
      error_from([] {
        scenario::parse_scenario(
            "name: x\nmodel: {preset: gpt2-large, layers: 99999999999999999999}\n", "f.yaml");
      }),
      "f.yaml:2:37: model.layers: 99999999999999999999 is out of range: at most 100000 layers (" +
          std::string(limits::kModelDimensionWhy) + ")");
}
TEST(Hardening, SizesNeedAUnit) {
  EXPECT_EQ(error_of("h_bucket_without_unit.yaml"),
            "tests/data/bad/h_bucket_without_unit.yaml:9:16: layout.bucket_size: '100' has no "
            "unit; write e.g. 100MiB or 100B (units: B, KiB, MiB, "
            "GiB, TiB, KB, MB, GB, TB)");
}
TEST(Hardening, DuplicateKeysAreRefused) {
  EXPECT_EQ(
      error_of("h_duplicate_key.yaml"),
      "tests/data/bad/h_duplicate_key.yaml:9:3: layout.dp: duplicate key (first given on line 7)");
}
TEST(Hardening, SecondDocumentIsRefused) {
  EXPECT_EQ(error_of("h_second_document.yaml"),
            "tests/data/bad/h_second_document.yaml:15: a second YAML document; a file holds one "
            "(remove the '---' and what follows, or merge it)");
  // A bare '---' opening the file is the first document's marker, not a second one.
  EXPECT_EQ(error_from([] { scenario::parse_scenario("---\nname: x\n---\n", "f.yaml"); }),
            "f.yaml:3: a second YAML document; a file holds one (remove the '---' and what "
            "follows, or merge it)");
}
TEST(Hardening, StrayCommaIsRefusedInsteadOfEndlessDocuments) {
  // yaml-cpp 0.7 reads a ',' outside [...] or {...} that follows a complete node as an empty
  // document without consuming it, so YAML::LoadAll added empty documents forever (yaml-cpp issue
  // #1040): the scenario fuzzer's 2.8 KB input ran over 60 s with its memory growing. The reader
  // now counts documents with a bounded loop and names the comma.
  const std::string comma =
      ": invalid YAML: a ',' outside [...] or {...}; commas separate items only inside a flow list "
      "or mapping";
  // "- 1" is line 1; the ',' opens line 2.
  EXPECT_EQ(error_from([] { scenario::parse_scenario("- 1\n,\n", "f.yaml"); }),
            "f.yaml:2:1" + comma);
  // Alone, it is the first document's only token: line 1, column 1.
  EXPECT_EQ(error_from([] { scenario::parse_scenario(",", "f.yaml"); }), "f.yaml:1:1" + comma);
  // After a flow list on one line: "[a]" is columns 1-3, the ',' column 4.
  EXPECT_EQ(error_from([] { scenario::parse_scenario("[a], b\n", "f.yaml"); }),
            "f.yaml:1:4" + comma);
  // The fuzzer's input: lines 3-20 are a block list of flow lists ("    - [256, ...]"), and line 21
  // starts ", 512, 256, 0.0852]" at column 1.
  const std::string input =
      "tests/data/fuzz_regressions/scenario/timeout-890bc261e043cbe6862bdd9859e53d5d04baee0d";
  EXPECT_EQ(error_from([&] {
              scenario::parse_scenario(read_text_file(src(input), "scenario file"), "fuzz.yaml");
            }),
            "fuzz.yaml:21:1" + comma);
  // A well-formed file with a flow list still reads (the counting loop leaves one document alone).
  EXPECT_EQ(error_from([] { scenario::parse_scenario("name: [a, b]\n", "f.yaml"); }),
            "f.yaml:1:7: name: expected a single value");
}
TEST(Hardening, DeepNestingIsRefusedByName) {
  // yaml-cpp refuses its 500th level of nesting (DepthGuard<500>) with the message "bad file"; the
  // reader says what happened. "a: [[...]]" with k lists nests k + 1 levels (the mapping, then
  // each list): k = 498 is 499 levels and parses (the key is then unknown), k = 499 is 500.
  const auto nested = [](int k) {
    return error_from([k] {
      scenario::parse_scenario("a: " + std::string(k, '[') + std::string(k, ']'), "f.yaml");
    });
  };
  EXPECT_EQ(nested(498).substr(0, 26), "f.yaml:1:1: a: unknown key");
  const std::string msg = nested(499);
  EXPECT_EQ(msg.substr(0, 9), "f.yaml:1:");  // the column is where yaml-cpp's scanner had read to
  EXPECT_EQ(
      msg.substr(msg.find(": invalid")),
      ": invalid YAML: nested 500 levels deep, where yaml-cpp stops (a scenario nests a few)");
}
TEST(Hardening, InvalidUtf8IsRefusedWhereRead) {
  // It reached the JSON writer, which threw: "internal error" and an empty report.
  EXPECT_EQ(error_of("h_invalid_utf8.yaml"),
            "tests/data/bad/h_invalid_utf8.yaml:1:7: name: invalid UTF-8 at byte 2 of the value");
}
TEST(Hardening, InputFilesAreBounded) {
  // A directory gave basic_filebuf::underflow; /dev/zero ran until std::bad_alloc.
  EXPECT_EQ(error_from([] { read_text_file(src("tests/data"), "scenario file"); }),
            src("tests/data") + ": is a directory, not a scenario file");
  EXPECT_EQ(error_from([] { read_text_file("/dev/zero", "scenario file", int64_t{1} << 20); }),
            "/dev/zero: scenario file is larger than 1 MiB; not read (the bound keeps a file given "
            "by mistake from exhausting memory)");
  EXPECT_EQ(error_from([] { scenario::load_scenario("/dev/zero"); }),
            "/dev/zero: scenario file is larger than 4 MiB; not read (the bound keeps a file given "
            "by mistake from exhausting memory)");
}
TEST(Hardening, ProfileValues) {
  EXPECT_EQ(error_from([] { scenario::load_profile(src("tests/data")); }),
            src("tests/data") + ": is a directory, not a profile");
  const std::string p = "tests/data/bad/h_profile_inf.yaml";
  EXPECT_EQ(error_from([&] { scenario::load_profile(src(p)); }),
            src(p) + ":12:20: peak_flops_bf16: expected a finite number, got '.inf'");
  // The validation block: its run counts are bounded (they become an int) and its stacks are the
  // simulator's own names.
  const std::string runs = "tests/data/bad/h_profile_runs.yaml",
                    stack = "tests/data/bad/h_profile_stack.yaml";
  EXPECT_EQ(error_from([&] { scenario::load_profile(src(runs)); }),
            src(runs) + ":182:9: runs: 1e+12 is out of range: at most 1e+06 runs");
  EXPECT_EQ(error_from([&] { scenario::load_profile(src(stack)); }),
            src(stack) + ":188:5: validation.stacks: unknown stack 'tensorflow'");
}
TEST(Hardening, TableInputs) {
  const std::string empty = src("tests/data/bad/h_empty_table.csv"),
                    comments = src("tests/data/bad/h_comment_table.csv");
  EXPECT_EQ(
      error_from([&] { validate::read_vtrain_table(empty); }),
      empty +
          ": no data rows (expected lines of 11 comma-separated columns; '#' starts a comment)");
  EXPECT_EQ(
      error_from([&] { validate::read_vtrain_table(comments); }),
      comments +
          ": no data rows (expected lines of 11 comma-separated columns; '#' starts a comment)");
  EXPECT_EQ(error_from([&] { validate::read_vtrain_table(src("tests/data")); }),
            src("tests/data") + ": is a directory, not a table");
}
// What a path is, said once for every reader (issue 34: /dev/zero given to --suite was "no such
// file or folder").
TEST(Hardening, PathKindsAreNamed) {
  EXPECT_EQ(unusual_path_kind(src("tests/data")), "");
  EXPECT_EQ(unusual_path_kind(src("scenarios/gpt2-large-2xh100-ddp.yaml")), "");
  EXPECT_EQ(unusual_path_kind("/dev/zero"), "a character device (such as /dev/zero)");
  EXPECT_EQ(unusual_path_kind(src("tests/data/no_such_file")), "no such file or folder");
  EXPECT_EQ(error_from([] { require_file_or_folder("--suite", "/dev/zero", "suite file"); }),
            "--suite '/dev/zero': a character device (such as /dev/zero), not a suite file or a "
            "folder of them");
  EXPECT_EQ(error_from([] { read_text_file("/dev/zero", "table", 1 << 20); }),
            "/dev/zero: table is larger than 1 MiB; not read (the bound keeps a file given by "
            "mistake from exhausting memory)");
  const std::string missing = src("tests/data/no_such_file");
  EXPECT_EQ(error_from([&] { read_text_file(missing, "table"); }),
            missing + ": cannot open table: no such file");
}
TEST(Hardening, FlagBounds) {
  // Each refusal names the flag as typed, the value, the bound and its reason (common/limits.h).
  EXPECT_EQ(error_from([] { cli::int_flag("--gpus", "99999992", 1); }),
            "--gpus 99999992: a cluster of 99999992 GPUs is above the limit of 131072 GPUs (twice "
            "the largest announced training cluster)");
  EXPECT_EQ(error_from([] { cli::int_flag("--nodes", "2147483647", 1); }),
            "--nodes 2147483647: a cluster of 2147483647 nodes is above the limit of 131072 nodes "
            "(each node holds a GPU or more, and a cluster has at most 131072 GPUs)");
  // Issue 34: "--seq 99999999999 is out of range: at most 16777216 tokens" gave no reason.
  EXPECT_EQ(error_from([] { cli::int_flag("--seq", "99999999999", 1); }),
            "--seq 99999999999 is out of range: at most 16777216 tokens (what a scenario accepts: "
            "the longest context a model may have)");
  EXPECT_EQ(error_from([] { cli::int_flag("--global-batch", "16777217", 1); }),
            "--global-batch 16777217 is out of range: at most 16777216 sequences (about 1000 "
            "times the largest published batch (DeepSeek-V3: 15360 sequences of 4096 tokens), "
            "and what a scenario accepts)");
  EXPECT_EQ(error_from([] { cli::int_flag("--max-tp", "131073", 1); }),
            "--max-tp 131073 is out of range: at most 131072 GPUs (a parallel size counts GPUs, "
            "and a cluster has at most 131072 (twice the largest announced training cluster))");
  // calibrate --ranks: refused when read, not after the calibration's header was printed.
  EXPECT_EQ(error_from([] { cli::int_flag("--ranks", "65", 1); }),
            "--ranks 65 is out of range: at most 64 ranks (every rank is a process on this "
            "machine, measured at once: past a server's cores they share cores and measure "
            "contention, not the kernels)");
  // 3601 s: one second past an hour; 2^64 ms is past 64 bits and still a range error.
  EXPECT_EQ(error_from([] { cli::int_flag("--timeout", "3601", 1); }),
            "--timeout 3601 is out of range: at most 3600 s (a collective still waiting after an "
            "hour has hung; PyTorch's process groups give up after 10 to 30 minutes by default)");
  EXPECT_EQ(error_from([] { cli::int_flag("--timeout-ms", "18446744073709551616", 1); }),
            std::string("--timeout-ms 18446744073709551616 is out of range: at most 3600000 ms (") +
                limits::kCollectiveTimeoutSeconds.why + ")");
  EXPECT_EQ(error_from([] { cli::size_flag("--buckets", "0"); }),
            "--buckets '0': a size needs a unit, e.g. 0MiB (units: B, KiB, MiB, GiB, TiB, KB, MB, "
            "GB, TB)");
  EXPECT_EQ(error_from([] { cli::size_flag("--buckets", "0MiB"); }),
            "--buckets '0MiB': a size must be positive");
  EXPECT_EQ(cli::size_flag("--buckets", "25MiB").count, 25 << 20);
  // 1 PiB + 1 KiB = 2^50 + 2^10 bytes.
  EXPECT_EQ(error_from([] { cli::size_flag("--buckets", "1048577GiB"); }),
            "--buckets '1048577GiB' is out of range: at most 1 PiB (above any GPU's memory, "
            "gradient bucket or message)");
  // Issue 34: the reason was wrong ("expected a positive integer") or the value not finite.
  EXPECT_EQ(error_from([] { cli::int_flag("--steps", "2147483648", 1); }),
            "--steps 2147483648 is out of range: at most 2147483647 (2^31 - 1: counts are "
            "32-bit integers)");
  EXPECT_EQ(error_from([] { cli::int_flag("--steps", "99999999999999999999", 1); }),
            "--steps 99999999999999999999 is out of range: at most 2147483647 (2^31 - 1: "
            "counts are 32-bit integers)");
  EXPECT_EQ(error_from([] { cli::int_flag("--steps", "0", 1); }),
            "--steps '0': expected a positive integer");
  EXPECT_EQ(error_from([] { cli::number_flag("--factor", "inf", 1.0, "it must grow"); }),
            "--factor 'inf': expected a finite number");
  EXPECT_EQ(error_from([] { cli::number_flag("--factor", "0.5", 1.0, "it must grow"); }),
            "--factor '0.5': expected a number above 1 (it must grow)");
}

}  // namespace
}  // namespace cs
