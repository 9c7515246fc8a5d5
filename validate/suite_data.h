// The published tables of the validation suite as rows of named columns, read whole: a CSV file
// (one row a line, `#` lines are comments, the suite names the columns), a list or a mapping in a
// YAML file (seed 002's transcription), and nccl-tests' text output (size, count, type, redop,
// root, then time / algbw / busbw / #wrong out of place and in place).
// Every reader throws UserError naming the file and line of what it cannot read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cs::validate {

struct DataRow {
  int line = 0;                                // in the data file (1-based)
  std::map<std::string, std::string> columns;  // name -> value as written
};

// Each line split on commas into `columns` (their count must match).
std::vector<DataRow> read_csv_rows(const std::string& path,
                                   const std::vector<std::string>& columns);

// The rows under `key` of a YAML file (a dotted key, `sets.NAME.rows`, walks nested mappings): a
// list of mappings, or a mapping of mappings (the entry's own key then becomes the column `name`).
// Nested mappings flatten to dotted names (`collectives.calls`). A key some rows leave out is an
// empty value there, as a CSV table's empty cell.
std::vector<DataRow> read_yaml_rows(const std::string& path, const std::string& key);

// One size of nccl-tests output (times in microseconds, bus bandwidths in GB/s).
struct NcclTestsRow {
  int line = 0;
  int64_t bytes = 0;
  double out_of_place_us = 0, out_of_place_busbw = 0, in_place_us = 0, in_place_busbw = 0;
};
std::vector<NcclTestsRow> read_nccl_tests(const std::string& path);

}  // namespace cs::validate
