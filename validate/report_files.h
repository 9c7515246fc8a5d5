// The result files of `validate --suite` (JSON and a self-contained HTML page) and `validate
// --table` (JSON); docs/schemas/validate.schema.json describes the JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "validate/suite.h"
#include "validate/table_validation.h"

namespace cs::validate {

// `validate --suite --json`: every source with its figures, bounds and verdict, every row, and
// the step-time error by profile and by (profile, stack).
void write_suite_json(std::ostream& out, const std::string& suite, bool use_profiles,
                      const std::vector<SourceResult>& results);

// `validate --suite --html`: the summary, a chart of every row's error per source and the error by
// profile and stack; `generator` names the program that ran the suite (its version line).
void write_suite_html(std::ostream& out, const std::string& suite, bool use_profiles,
                      const std::string& generator, const std::vector<SourceResult>& results);

// `validate --table --json`: the fitted factors, the error on each half and by parallelism, and
// every row (measured, predicted with the fitted factors, the half it was in, or why it did not
// run).
struct TableErrors {
  ErrorSummary held, fitting, default_model;
};
void write_table_json(std::ostream& out, const std::string& table, unsigned seed,
                      const std::vector<TableRow>& rows, const TableFit& tf,
                      const std::vector<size_t>& train, const std::vector<size_t>& test,
                      const TableErrors& e, size_t failed);

}  // namespace cs::validate
