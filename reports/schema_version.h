// The version every JSON file clustersim writes carries.
#pragma once

namespace cs::reports {

// The "schema_version" of every JSON file clustersim writes, beside its "kind" (report, plan,
// sweep, measured, validate); each kind's JSON Schema is docs/schemas/<kind>.schema.json. Raise it
// when a key is removed or changes meaning (adding keys keeps it).
inline constexpr const char* kSchemaVersion = "1";

}  // namespace cs::reports
