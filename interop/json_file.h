// Internal to interop/: JSON text -> nlohmann::json, with errors that name the file, line and
// column ("f.json: invalid JSON at line 1, column 2: syntax error ...").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"

namespace cs::interop {

inline nlohmann::json parse_json(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const std::string marker = "parse error at ";
    const auto at = what.find(marker);
    throw UserError(file + ": invalid JSON at " +
                    (at == std::string::npos ? what : what.substr(at + marker.size())));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range 406: a number beyond a double
                                                  // (found by fuzz/hf_config_fuzzer)
    throw UserError(file + ": invalid JSON: " + e.what());
  }
}

}  // namespace cs::interop
