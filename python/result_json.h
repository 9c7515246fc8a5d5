// What the Python module returns, as JSON-shaped values: the simulate report with exactly the keys
// and values of `clustersim simulate --json` (docs/schemas/report.schema.json), a plan's evaluated
// layouts with the keys of `clustersim plan --json`'s rows, and a validation suite's sources.
//
// The report is the command line's own JSON (driver/simulation_report.h, write_report_json), read
// back; tests/python/test_report.py compares the two on every shipped scenario.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "driver/simulation.h"
#include "planner/planner.h"
#include "validate/suite.h"

namespace cs::python {

nlohmann::json report_json(const driver::SimulationResult& r);
// Every simulated layout of a plan, in evaluation order (PlanResult::ranked and ::pareto index it).
nlohmann::json plan_rows_json(const planner::PlanResult& r);
// One suite source, field for field as validate::SourceResult names them (figures in percent),
// but `pass` is `passed` (a Python keyword).
nlohmann::json suite_source_json(const validate::SourceResult& r);

// JSON as Python values (NaN and infinities as None, as nlohmann::json writes them: null).
pybind11::object to_python(const nlohmann::json& j);

}  // namespace cs::python
