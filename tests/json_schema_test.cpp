// Every kind of JSON clustersim writes (report: simulate/execute --json; plan --json; sweep --json;
// measured: execute --timeline; validate: validate --suite/--table --json) carries "schema_version"
// and "kind" and validates against its checked-in JSON Schema, docs/schemas/<kind>.schema.json. The
// validator below knows the subset of JSON Schema those files use (type, const, enum, minimum,
// required, properties, additionalProperties, items, minItems, maxItems) and refuses any other
// keyword, so a schema cannot silently say more than is checked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "test_paths.h"

namespace cs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  throw std::invalid_argument("unknown type '" + type + "' in a schema");
}

// Appends "PATH: what is wrong" for every violation of `schema` by `v`.
void check(const json& schema, const json& v, const std::string& path,
           std::vector<std::string>& errors) {
  static const std::set<std::string> known{
      "$schema", "$id",      "title",      "description",          "type",  "const",    "enum",
      "minimum", "required", "properties", "additionalProperties", "items", "minItems", "maxItems"};
  for (const auto& [key, value] : schema.items()) {
    if (!known.count(key))
      throw std::invalid_argument("schema keyword '" + key + "' at " + path +
                                  " is not checked by this validator");
  }
  if (schema.contains("type")) {
    bool ok = false;
    const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    for (const auto& t : types) ok = ok || has_type(v, t.get<std::string>());
    if (!ok)
      errors.push_back(path + ": expected " + schema["type"].dump() + ", got " +
                       v.dump().substr(0, 60));
    if (!ok) return;
  }
  if (schema.contains("const") && v != schema["const"])
    errors.push_back(path + ": expected " + schema["const"].dump() + ", got " + v.dump());
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end()) {
    errors.push_back(path + ": " + v.dump() + " is not one of " + schema["enum"].dump());
  }
  if (schema.contains("minimum") && v.is_number() &&
      v.get<double>() < schema["minimum"].get<double>()) {
    errors.push_back(path + ": " + v.dump() + " is below " + schema["minimum"].dump());
  }
  if (v.is_object()) {
    for (const auto& key : schema.value("required", json::array())) {
      if (!v.contains(key.get<std::string>()))
        errors.push_back(path + ": missing \"" + key.get<std::string>() + "\"");
    }
    for (const auto& [key, value] : v.items()) {
      if (schema.contains("properties") && schema["properties"].contains(key))
        check(schema["properties"][key], value, path + "." + key, errors);
      else if (schema.contains("additionalProperties")) {
        const json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>())
          errors.push_back(path + ": unexpected key \"" + key + "\"");
        else if (extra.is_object())
          check(extra, value, path + "." + key, errors);
      }
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>())
      errors.push_back(path + ": fewer than " + schema["minItems"].dump() + " items");
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>())
      errors.push_back(path + ": more than " + schema["maxItems"].dump() + " items");
    if (schema.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i)
        check(schema["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
    }
  }
}

json load(const fs::path& p) {
  std::ifstream f(p);
  EXPECT_TRUE(f.good()) << p;
  return json::parse(f);
}

std::vector<std::string> violations(const std::string& kind, const json& doc) {
  std::vector<std::string> errors;
  check(load(fs::path(cs::test_paths::source_dir()) / "docs/schemas" / (kind + ".schema.json")),
        doc, "$", errors);
  return errors;
}

class JsonOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs_schema_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs clustersim from the source tree (scenario paths are relative to it); its output goes to a
  // log.
  json run(const std::string& args, const std::string& file, int status = 0) {
    const std::string cmd = "cd " + cs::test_paths::source_dir() + " && " +
                            cs::test_paths::clustersim_binary() + " " + args + " > " +
                            (dir_ / "log.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == status) << cmd;
    return load(dir_ / file);
  }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(JsonOutputs, SimulateReportMatchesItsSchema) {
  const json j = run("simulate scenarios/gpt2-large-2xh100-ddp.yaml --json " + out("report.json"),
                     "report.json");
  EXPECT_EQ(j["schema_version"], "1");
  EXPECT_EQ(j["kind"], "report");
  EXPECT_EQ(j["ranks"].size(), 2u);    // one entry per GPU of the 2-GPU scenario
  EXPECT_TRUE(j.contains("speedup"));  // the single-GPU twin ran (2 GPUs: baseline on)
  const auto errors = violations("report", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(JsonOutputs, PlanMatchesItsSchema) {
  const json j =
      run("plan --model gpt2-large --cluster dgx_h100 --gpus 8 --global-batch 32 --seq 1024 "
          "--micro-batches 1,4 --recompute none,full "
          "--buckets 25MiB --threads 2 --json " +
              out("plan.json"),
          "plan.json");
  EXPECT_EQ(j["kind"], "plan");
  EXPECT_EQ(j["simulated"].get<size_t>(), j["evaluations"].size());
  ASSERT_FALSE(j["ranked"].empty());
  EXPECT_LE(j["pareto"].size(), j["ranked"].size());  // frontier points are layouts that fit
  const auto errors = violations("plan", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(JsonOutputs, SweepMatchesItsSchema) {
  // 3 GPUs do not divide the global batch: that row says why, and sweep exits 1.
  const json j =
      run("sweep scenarios/gpt2-large-8xh100-ddp.yaml --gpus 1,2,3 --json " + out("sweep.json"),
          "sweep.json", 1);
  EXPECT_EQ(j["kind"], "sweep");
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_FALSE(j["rows"][2]["error"].get<std::string>().empty());
  EXPECT_FALSE(j["rows"][2].contains("step_time_s"));
  EXPECT_DOUBLE_EQ(j["rows"][0]["speedup"].get<double>(), 1.0);  // over the first point
  EXPECT_EQ(j["axis"], "gpus");
  const auto errors = violations("sweep", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(JsonOutputs, ExecuteTimelineAndReportMatchTheirSchemas) {
  const json timeline =
      run("execute scenarios/cpu-mlp-2rank-ddp.yaml --warmup 0 --steps 1 --timeline " +
              out("run.json") + " --json " + out("exec.json"),
          "run.json");
  EXPECT_EQ(timeline["kind"], "measured");
  EXPECT_EQ(timeline["step_times_s"].size(), 1u);  // --steps 1
  const auto errors = violations("measured", timeline);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto report_errors = violations("report", load(dir_ / "exec.json"));
  EXPECT_TRUE(report_errors.empty()) << report_errors.front();
}

// One fast suite source (seed 002, one H100, batch 1 to 64): every row is there, the figures agree
// with the rows they summarise, and the out-of-memory row carries a verdict instead of a figure.
TEST_F(JsonOutputs, ValidateSuiteMatchesItsSchema) {
  const json j =
      run("validate --suite validate/suites/seed002_gpt2_large_1xh100_batch.yaml --json " +
              out("validate.json"),
          "validate.json");
  EXPECT_EQ(j["schema_version"], "1");
  EXPECT_EQ(j["kind"], "validate");
  EXPECT_EQ(j["mode"], "suite");
  EXPECT_TRUE(j["pass"].get<bool>());  // exit status 0 above
  ASSERT_EQ(j["sources"].size(), 1u);
  const json& s = j["sources"][0];
  EXPECT_EQ(s["source"], "seed002_gpt2_large_1xh100_batch");
  EXPECT_EQ(s["figure"], "tokens/s");
  ASSERT_EQ(s["rows"].size(), 6u);  // batch 1, 4, 8, 16, 32, 64
  EXPECT_EQ(s["rows_total"], 6);
  EXPECT_EQ(s["rows_run"], 5);  // batch 64 ran out of memory: a verdict, not a figure
  double sum = 0, worst = 0;
  size_t run = 0;
  for (const json& r : s["rows"]) {
    if (!r["run"].get<bool>()) {
      EXPECT_EQ(r["label"], "batch 64");
      EXPECT_TRUE(r["measured"].is_null());
      EXPECT_TRUE(r["predicted"].is_null());
      EXPECT_EQ(r["out_of_memory_verdict"], "right");
      continue;
    }
    ++run;
    const double measured = r["measured"].get<double>(), predicted = r["predicted"].get<double>();
    EXPECT_NEAR(r["error_percent"].get<double>(), 100 * (predicted / measured - 1), 1e-6)
        << r["label"];
    EXPECT_EQ(r["stack"], "pytorch_eager");
    EXPECT_FALSE(r["profile"].get<std::string>().empty());
    // A throughput's step-time error: predicted step / measured step - 1 = measured / predicted
    // - 1.
    EXPECT_NEAR(r["step_error_percent"].get<double>(), 100 * (measured / predicted - 1), 1e-6)
        << r["label"];
    sum += std::abs(r["error_percent"].get<double>());
    worst = std::max(worst, std::abs(r["error_percent"].get<double>()));
  }
  EXPECT_EQ(run, 5u);
  EXPECT_NEAR(s["mape"].get<double>(), sum / 5, 1e-6);
  EXPECT_NEAR(s["worst"].get<double>(), worst, 1e-6);
  // The suite file bounds the MAPE only (18%): the worst-row bound is null, not 0.
  EXPECT_TRUE(s["bounds"]["worst_percent"].is_null());
  EXPECT_EQ(s["bounds"]["mape_percent"], 18);
  EXPECT_LE(s["mape"].get<double>(), 18);
  // The source is a calibration one (it measures the eager host cost): its error is in sample,
  // so the out-of-sample errors by profile and by stack leave it out.
  EXPECT_EQ(s["role"], "calibration");
  EXPECT_TRUE(j["profile_stack_errors"].empty());
  EXPECT_TRUE(j["profile_errors"].empty());
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// A suite with a memory_column (GPT-2 Small on one H100, two rows and an out-of-memory one): each
// row that ran carries its measured and predicted peak, the source its memory figures and bound;
// the out-of-memory row has no memory object.
TEST_F(JsonOutputs, ValidateSuiteMemoryMatchesItsSchema) {
  std::ofstream(out("rows.csv")) << "1,10.0,4000,0\n2,20.0,6000,0\n512,,,1\n";
  std::ofstream(out("memory.yaml"))
      << "source: memory\ncitation: test\nrole: validation\nmeasured: test\ndata: "
      << out("rows.csv") << "\nkind: training\nformat: csv\n"
      << "columns: [batch, step_ms, peak_mib, oom]\nfigure: step_time\nunit: ms\nmeasured_column: "
         "step_ms\noom_column: oom\n"
      << "memory_column: peak_mib\nlabel: \"batch ${batch}\"\n"
      << "scenario:\n  model: {preset: gpt2-small}\n  cluster: {preset: single_h100}\n  stack: "
         "pytorch_eager\n  layout: {dp: 1}\n"
      << "  training: {global_batch: \"${batch}\", micro_batch: \"${batch}\", seq_len: 1024, "
         "precision: amp_bf16}\n"
      << "bounds: {memory_mape_percent: 100000}\n";
  const json j = run("validate --suite " + out("memory.yaml") + " --json " + out("memory.json"),
                     "memory.json");
  const json& s = j["sources"][0];
  EXPECT_EQ(s["memory"]["column"], "peak_mib");
  EXPECT_EQ(s["memory"]["rows"], 2);
  EXPECT_EQ(s["bounds"]["memory_mape_percent"], 100000);
  EXPECT_TRUE(s["bounds"]["mape_percent"].is_null());
  double sum = 0;
  for (int i = 0; i < 2; ++i) {
    const json& m = s["rows"][i]["memory"];
    const double measured = m["measured_mib"].get<double>(),
                 predicted = m["predicted_mib"].get<double>();
    EXPECT_EQ(measured, i == 0 ? 4000 : 6000);
    EXPECT_NEAR(m["error_percent"].get<double>(), 100 * (predicted / measured - 1), 1e-6);
    sum += std::abs(m["error_percent"].get<double>());
  }
  EXPECT_NEAR(s["memory"]["mape"].get<double>(), sum / 2, 1e-6);
  EXPECT_TRUE(s["rows"][2]["memory"].is_null());
  EXPECT_EQ(s["rows"][2]["out_of_memory_verdict"], "right");
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// validate --table on the first 40 rows of vTrain's table (the whole one takes ~50 s): every row
// is listed with its half, and the halves and errors agree with the rows.
TEST_F(JsonOutputs, ValidateTableMatchesItsSchema) {
  std::ifstream whole(cs::test_paths::source_dir() + "/validate/data/vtrain_a100_single_node.csv");
  std::ofstream part(out("table.csv"));
  std::string line;
  for (int i = 0; i < 41 && std::getline(whole, line); ++i)
    part << line << "\n";  // the header and 40 rows
  part.close();
  const json j =
      run("validate --table " + out("table.csv") + " --json " + out("table.json"), "table.json");
  EXPECT_EQ(j["kind"], "validate");
  EXPECT_EQ(j["mode"], "table");
  ASSERT_EQ(j["rows"].size(), 40u);
  EXPECT_EQ(j["not_simulated"], 0);
  EXPECT_EQ(j["fit_rows"].get<int>() + j["test_rows"].get<int>(), 40);
  EXPECT_EQ(j["held_out"]["rows"], j["test_rows"]);
  EXPECT_EQ(j["factors"].size(), 8u);
  size_t held = 0;
  for (const json& r : j["rows"]) {
    held += r["held_out"].get<bool>() ? 1 : 0;
    EXPECT_NEAR(r["error_percent"].get<double>(),
                100 * (r["predicted_s"].get<double>() / r["measured_s"].get<double>() - 1), 1e-6);
  }
  EXPECT_EQ(held, j["test_rows"].get<size_t>());
  EXPECT_DOUBLE_EQ(j["rows"][0]["measured_s"].get<double>(),
                   0.372160408);  // the table's first row, 372.160408 ms
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// The validator finds what it should: a wrong version, a missing key, a wrong type deep inside.
TEST(JsonSchemaValidator, ReportsViolations) {
  json doc = {{"schema_version", "2"},
              {"kind", "sweep"},
              {"scenario", "s"},
              {"axis", "gpus"},
              {"rows", json::array({{{"value", "8"}, {"gpus", "eight"}, {"error", ""}},
                                    {{"value", "16"}, {"error", ""}}})}};
  const auto errors = violations("sweep", doc);
  ASSERT_EQ(errors.size(), 3u);
  // Keys are visited in nlohmann's (sorted) order: rows before schema_version.
  EXPECT_EQ(errors[0], "$.rows[0].gpus: expected \"integer\", got \"eight\"");
  EXPECT_EQ(errors[1], "$.rows[1]: missing \"gpus\"");
  EXPECT_EQ(errors[2], "$.schema_version: expected \"1\", got \"2\"");
  doc["schema_version"] = "1";
  doc["rows"] = json::array();
  EXPECT_TRUE(violations("sweep", doc).empty());
}

// validate --kineto --json: our own H100 trace of Llama-3-8B layers under FSDP2 against the
// scenario it was taken of; every class's error is its predicted / measured - 1, and the classes
// measured are those the trace's kernels sort into (no NCCL kernel at world size 1).
TEST_F(JsonOutputs, ValidateKinetoMatchesItsSchema) {
  const json j =
      run("validate --kineto "
          "validate/measurements/torch_h100_202611/kineto_llama3_8b_4layers_fsdp2_b1.json.gz "
          "tests/data/kineto/llama3_8b_4layers_fsdp2_1xh100.yaml --json " +
              out("kineto.json"),
          "kineto.json");
  EXPECT_EQ(j["mode"], "kineto");
  EXPECT_EQ(j["device"], 0);
  std::set<std::string> classes;
  for (const json& c : j["by_class"]) {
    classes.insert(c["name"].get<std::string>());
    const double p = c["predicted_ms"].get<double>(), m = c["measured_ms"].get<double>();
    if (m > 0) {
      EXPECT_NEAR(c["error_percent"].get<double>(), 100 * (p / m - 1), 1e-6) << c["name"];
    }
  }
  EXPECT_EQ(classes, (std::set<std::string>{"attention", "gemm", "memory_bound"}));
  EXPECT_TRUE(j["by_collective"].empty());
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// validate --kineto TRACE --json without a scenario: the hand-written two-step trace's devices
// (tests/kineto_test.cpp derives device 0's split: step 410 us, 75 us of NCCL of which 35 exposed).
TEST_F(JsonOutputs, ValidateKinetoAnalysisMatchesItsSchema) {
  const json j = run("validate --kineto tests/data/kineto/two_steps_ddp.json --json " +
                         out("kineto_analysis.json"),
                     "kineto_analysis.json");
  EXPECT_EQ(j["mode"], "kineto_analysis");
  EXPECT_EQ(j["world_size"], 2);
  ASSERT_EQ(j["breakdowns"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["breakdowns"][0]["step_ms"].get<double>(), 0.410);
  EXPECT_DOUBLE_EQ(j["breakdowns"][0]["communication_ms"].get<double>(), 0.075);
  EXPECT_DOUBLE_EQ(j["breakdowns"][0]["exposed_communication_ms"].get<double>(), 0.035);
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// validate --nccl-tests --json: one row per size of the log (8 sizes, 64 KiB to 1 GiB by factors of
// 4), its MAPE the mean of their absolute errors, and the overall MAPE the same for one log.
TEST_F(JsonOutputs, ValidateNcclTestsMatchesItsSchema) {
  const json j =
      run("validate --nccl-tests tests/data/nccl_tests/all_reduce_8xh100_noisy.log --json " +
              out("nccl.json"),
          "nccl.json");
  EXPECT_EQ(j["mode"], "nccl_tests");
  ASSERT_EQ(j["logs"].size(), 1u);
  const json& log = j["logs"][0];
  EXPECT_EQ(log["collective"], "all_reduce");
  EXPECT_EQ(log["ranks"], 8);
  ASSERT_EQ(log["sizes"].size(), 8u);
  double sum = 0;
  for (const json& r : log["sizes"]) {
    EXPECT_NEAR(r["error_percent"].get<double>(),
                100 * (r["predicted_us"].get<double>() / r["measured_us"].get<double>() - 1), 1e-6);
    sum += std::abs(r["error_percent"].get<double>());
  }
  EXPECT_NEAR(log["mape"].get<double>(), sum / 8, 1e-9);
  EXPECT_NEAR(j["mape"].get<double>(), sum / 8, 1e-9);
  EXPECT_TRUE(j["max_error"].is_null());
  const auto errors = violations("validate", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

}  // namespace
}  // namespace cs
