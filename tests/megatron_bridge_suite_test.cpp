// What the Megatron-Bridge 26.08 suite (validate/suites/megatron_bridge_26_08_gb300_gb200.yaml)
// needs from the suite reader: rows read from one table of a data file that holds several (a dotted
// key), a select keyed by several columns at once (each row's own recipe settings), and a
// transcription whose two figures per row agree, so that comparing tokens/s per GPU is comparing
// the step time. The archive suite (validate/suites/beyond_bound/) also needs a key that some rows
// leave out (VP where a run did not interleave) to read as an empty cell.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "test_paths.h"
#include "validate/suite.h"
#include "validate/suite_data.h"

namespace cs {
namespace {

const std::string kSource = cs::test_paths::source_dir();

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("clustersim_mb_suite_test_" + name);
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(SuiteYamlRows, ADottedKeyReadsOneTableOfSeveral) {
  const std::string path = temp_dir("nested") + "/tables.yaml";
  std::ofstream(path) << "sets:\n"
                         "  old:\n"
                         "    rows:\n"
                         "      - {batch: 1, ms: 10}\n"
                         "  new:\n"
                         "    rows:\n"
                         "      - {batch: 2, ms: 20}\n"
                         "      - {batch: 4, ms: 40}\n";
  const auto rows = validate::read_yaml_rows(path, "sets.new.rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].columns.at("batch"), "2");
  EXPECT_EQ(rows[1].columns.at("ms"), "40");
  EXPECT_EQ(rows[0].line, 7);  // the file's own line, for messages
  // Reading one table leaves the others as they are (a YAML::Node assignment would overwrite).
  EXPECT_EQ(validate::read_yaml_rows(path, "sets.old.rows").size(), 1u);
  try {
    validate::read_yaml_rows(path, "sets.newer.rows");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no list or mapping of rows under 'sets.newer.rows'"),
              std::string::npos)
        << e.what();
  }
}

TEST(SuiteYamlRows, AKeyARowLeavesOutReadsAsAnEmptyCell) {
  const std::string path = temp_dir("sparse") + "/table.yaml";
  std::ofstream(path) << "rows:\n"
                         "  - {batch: 1, vp: 4, ms: 10}\n"
                         "  - {batch: 2, ms: 20}\n";
  const auto rows = validate::read_yaml_rows(path, "rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].columns.at("vp"), "4");
  EXPECT_EQ(rows[1].columns.at("vp"), "");     // as a CSV table's empty cell
  EXPECT_EQ(rows[1].columns.count("ep"), 0u);  // a key no row has is still no column
}

// A select keyed by `${batch} ${mode}`: batch 1 in mode a runs with its own keys; batch 2 in mode b
// is not expressible, and the reason names the combination; a combination with no entry is the
// suite's mistake.
TEST(SuiteYamlRows, ASelectKeyedBySeveralColumnsGivesEachRowItsOwnKeys) {
  const std::string dir = temp_dir("select");
  std::ofstream(dir + "/rows.csv") << "1,a,10.0\n2,b,20.0\n";
  const std::string path = dir + "/suite.yaml";
  std::ofstream(path) << "source: s\ncitation: c\nrole: validation\nmeasured: m\ndata: " << dir
                      << "/rows.csv\nkind: training\nformat: csv\ncolumns: [batch, mode, ms]\n"
                      << "figure: step_time\nunit: ms\nmeasured_column: ms\n"
                      << "scenario:\n  model: {preset: gpt2-small}\n  cluster: {preset: "
                         "single_h100}\n  layout: {dp: 1}\n"
                      << "  training: {global_batch: \"${batch}\", seq_len: 1024}\n"
                      << "select:\n  - column: \"${batch} ${mode}\"\n    values:\n"
                      << "      1 a: {training: {micro_batch: 1, precision: amp_bf16}}\n"
                      << "      2 b: \"not modelled (test)\"\n";
  validate::SuiteOptions o;
  o.use_profiles = false;
  const auto r = validate::run_suite_file(path, o);
  ASSERT_EQ(r.rows_total, 2u);
  EXPECT_TRUE(r.rows[0].run);
  EXPECT_EQ(r.rows[0].precision, "amp_bf16");  // the row's own keys were merged
  EXPECT_EQ(r.rows[1].not_expressible, "2 b: not modelled (test)");
  std::ofstream(dir + "/rows.csv") << "1,a,10.0\n4,c,40.0\n";
  try {
    validate::run_suite_file(path, o);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("select: no entry for ${batch} ${mode} '4 c'"),
              std::string::npos)
        << e.what();
  }
}

// The 26.08 table's two figures per row agree: step_s_derived = gbs x seq / (tokens/s per GPU x
// GPUs), rounded to the millisecond (the data file's convention). Row 1 by hand: 4096 x 4096 /
// (6288 x 256) = 16,777,216 / 1,609,728 = 10.4224 s, written 10.422.
TEST(SuiteYamlRows, MegatronBridge2608FiguresAgree) {
  const auto rows =
      validate::read_yaml_rows(kSource + "/validate/data/megatron_bridge_perf_2025_2026.yaml",
                               "sets.megatron_bridge_perf_summary_26_08.rows");
  ASSERT_EQ(rows.size(), 18u);
  EXPECT_EQ(rows[0].columns.at("step_s_derived"), "10.422");
  for (const auto& row : rows) {
    const auto number = [&](const char* c) { return std::stod(row.columns.at(c)); };
    const double step =
        number("gbs") * number("seq") / (number("tokens_per_s_per_gpu") * number("gpus"));
    EXPECT_NEAR(step, number("step_s_derived"), 0.0005 + 1e-9) << "line " << row.line;
  }
}

}  // namespace
}  // namespace cs
