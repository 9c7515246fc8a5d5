// Every kind of JSON clustersim writes (report: simulate/execute --json; plan --json; sweep --json;
// measured: execute --timeline) carries "schema_version" and "kind" and validates against its
// checked-in JSON Schema, docs/schemas/<kind>.schema.json. The validator below knows the subset
// of JSON Schema those files use (type, const, enum, minimum, required, properties,
// additionalProperties, items, minItems, maxItems) and refuses any other keyword, so a schema
// cannot silently say more than is checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

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
void check(const json& schema, const json& v, const std::string& path, std::vector<std::string>& errors) {
  static const std::set<std::string> known{"$schema", "$id", "title", "description", "type", "const", "enum", "minimum", "required",
                                           "properties", "additionalProperties", "items", "minItems", "maxItems"};
  for (const auto& [key, value] : schema.items()) {
    if (!known.count(key)) throw std::invalid_argument("schema keyword '" + key + "' at " + path + " is not checked by this validator");
  }
  if (schema.contains("type")) {
    bool ok = false;
    const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    for (const auto& t : types) ok = ok || has_type(v, t.get<std::string>());
    if (!ok) errors.push_back(path + ": expected " + schema["type"].dump() + ", got " + v.dump().substr(0, 60));
    if (!ok) return;
  }
  if (schema.contains("const") && v != schema["const"]) errors.push_back(path + ": expected " + schema["const"].dump() + ", got " + v.dump());
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end()) {
    errors.push_back(path + ": " + v.dump() + " is not one of " + schema["enum"].dump());
  }
  if (schema.contains("minimum") && v.is_number() && v.get<double>() < schema["minimum"].get<double>()) {
    errors.push_back(path + ": " + v.dump() + " is below " + schema["minimum"].dump());
  }
  if (v.is_object()) {
    for (const auto& key : schema.value("required", json::array())) {
      if (!v.contains(key.get<std::string>())) errors.push_back(path + ": missing \"" + key.get<std::string>() + "\"");
    }
    for (const auto& [key, value] : v.items()) {
      if (schema.contains("properties") && schema["properties"].contains(key)) check(schema["properties"][key], value, path + "." + key, errors);
      else if (schema.contains("additionalProperties")) {
        const json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) errors.push_back(path + ": unexpected key \"" + key + "\"");
        else if (extra.is_object()) check(extra, value, path + "." + key, errors);
      }
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>()) errors.push_back(path + ": fewer than " + schema["minItems"].dump() + " items");
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) errors.push_back(path + ": more than " + schema["maxItems"].dump() + " items");
    if (schema.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
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
  check(load(fs::path(CLUSTERSIM_SOURCE_DIR) / "docs/schemas" / (kind + ".schema.json")), doc, "$", errors);
  return errors;
}

class JsonOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs_schema_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs clustersim from the source tree (scenario paths are relative to it); its output goes to a log.
  json run(const std::string& args, const std::string& file, int status = 0) {
    const std::string cmd = "cd " + std::string(CLUSTERSIM_SOURCE_DIR) + " && " + CLUSTERSIM_BINARY + " " + args + " > " + (dir_ / "log.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == status) << cmd;
    return load(dir_ / file);
  }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(JsonOutputs, SimulateReportMatchesItsSchema) {
  const json j = run("simulate scenarios/gpt2-large-2xh100-ddp.yaml --json " + out("report.json"), "report.json");
  EXPECT_EQ(j["schema_version"], "1");
  EXPECT_EQ(j["kind"], "report");
  EXPECT_EQ(j["ranks"].size(), 2u);  // one entry per GPU of the 2-GPU scenario
  EXPECT_TRUE(j.contains("speedup"));  // the single-GPU twin ran (2 GPUs: baseline on)
  const auto errors = violations("report", j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(JsonOutputs, PlanMatchesItsSchema) {
  const json j = run("plan --model gpt2-large --cluster dgx_h100 --gpus 8 --global-batch 32 --seq 1024 --micro-batches 1,4 --recompute none,full "
                     "--buckets 25MiB --threads 2 --json " + out("plan.json"),
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
  const json j = run("sweep scenarios/gpt2-large-8xh100-ddp.yaml --gpus 1,2,3 --json " + out("sweep.json"), "sweep.json", 1);
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
  const json timeline = run("execute scenarios/cpu-mlp-2rank-ddp.yaml --warmup 0 --steps 1 --timeline " + out("run.json") + " --json " + out("exec.json"),
                            "run.json");
  EXPECT_EQ(timeline["kind"], "measured");
  EXPECT_EQ(timeline["step_times_s"].size(), 1u);  // --steps 1
  const auto errors = violations("measured", timeline);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto report_errors = violations("report", load(dir_ / "exec.json"));
  EXPECT_TRUE(report_errors.empty()) << report_errors.front();
}

// The validator finds what it should: a wrong version, a missing key, a wrong type deep inside.
TEST(JsonSchemaValidator, ReportsViolations) {
  json doc = {{"schema_version", "2"}, {"kind", "sweep"}, {"scenario", "s"}, {"axis", "gpus"},
              {"rows", json::array({{{"value", "8"}, {"gpus", "eight"}, {"error", ""}}, {{"value", "16"}, {"error", ""}}})}};
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

}  // namespace
}  // namespace cs
