#include "validate/suite_data.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/text_file.h"

namespace cs::validate {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

void flatten(const YAML::Node& n, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& kv : n) {
    const std::string name = prefix + kv.first.as<std::string>();
    if (kv.second.IsMap())
      flatten(kv.second, name + ".", out);
    else if (kv.second.IsScalar())
      out[name] = kv.second.Scalar();
  }
}

// A key some rows of a YAML table leave out (VP where a run did not interleave) is an empty cell
// there, as in a CSV table, so `${vp}` and a select on it read every row.
void fill_left_out_keys(std::vector<DataRow>& rows) {
  std::set<std::string> names;
  for (const DataRow& r : rows)
    for (const auto& kv : r.columns) names.insert(kv.first);
  for (DataRow& r : rows)
    for (const std::string& name : names) r.columns.try_emplace(name);
}

}  // namespace

std::vector<DataRow> read_csv_rows(const std::string& path,
                                   const std::vector<std::string>& columns) {
  std::istringstream in(read_text_file(path, "data file"));  // bounded: common/text_file.h
  std::vector<DataRow> rows;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(trim(x));
    if (!line.empty() && line.back() == ',') f.emplace_back();
    if (f.size() != columns.size()) {
      throw UserError(path + ":" + std::to_string(no) + ": expected " +
                      std::to_string(columns.size()) + " comma-separated columns, got " +
                      std::to_string(f.size()));
    }
    DataRow r;
    r.line = no;
    for (size_t i = 0; i < f.size(); ++i) r.columns[columns[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<DataRow> read_yaml_rows(const std::string& path, const std::string& key) {
  YAML::Node root;
  try {
    root = YAML::Load(read_text_file(path, "data file", kMaxYamlFileBytes));  // bounded
  } catch (const YAML::Exception& e) {
    throw UserError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  // A dotted key walks nested mappings (`sets.megatron_bridge_perf_summary_26_08.rows`): one
  // data file can hold several tables, each a suite of its own.
  // (reset, not =: assigning a YAML::Node overwrites the node it refers to.)
  YAML::Node list = root;
  std::stringstream parts(key);
  for (std::string part; std::getline(parts, part, '.');) {
    const YAML::Node at = list;
    const YAML::Node next = at.IsMap() ? at[part] : YAML::Node();
    list.reset(next ? next : YAML::Node());  // a key that is not there reads as null
  }
  if (!list || !(list.IsSequence() || list.IsMap()))
    throw UserError(path + ": no list or mapping of rows under '" + key + "'");
  std::vector<DataRow> rows;
  auto add = [&](const YAML::Node& n, const std::string& name) {
    if (!n.IsMap())
      throw UserError(path + ":" + std::to_string(n.Mark().line + 1) + ": " + key +
                      ": expected each row to be a mapping");
    DataRow r;
    r.line = n.Mark().line + 1;
    if (!name.empty()) r.columns["name"] = name;
    flatten(n, "", r.columns);
    rows.push_back(std::move(r));
  };
  if (list.IsSequence()) {
    for (const YAML::Node& n : list) add(n, "");
  } else {
    for (const auto& kv : list) add(kv.second, kv.first.as<std::string>());
  }
  fill_left_out_keys(rows);
  return rows;
}

std::vector<NcclTestsRow> read_nccl_tests(const std::string& path) {
  std::istringstream in(read_text_file(path, "nccl-tests output"));  // bounded: text_file.h
  std::vector<NcclTestsRow> rows;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::istringstream ss(line);
    NcclTestsRow r;
    r.line = no;
    std::string count, type, op, root, algbw, wrong, algbw2;
    ss >> r.bytes >> count >> type >> op >> root >> r.out_of_place_us >> algbw >>
        r.out_of_place_busbw >> wrong >> r.in_place_us >> algbw2 >> r.in_place_busbw;
    if (ss.fail() || r.bytes <= 0 || !(r.out_of_place_us > 0) || !(r.in_place_us > 0)) {
      throw UserError(path + ":" + std::to_string(no) +
                      ": expected nccl-tests columns (size, count, type, redop, root, time, algbw, "
                      "busbw, #wrong, time, algbw, busbw), got '" +
                      trim(line) + "'");
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace cs::validate
