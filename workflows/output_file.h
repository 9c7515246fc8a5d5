// Every file a workflow writes is opened here, so that the message for an unwritable path is one.
#pragma once

#include <fstream>
#include <string>

#include "common/error.h"

namespace cs::workflows {

// `path` opened for writing, or a UserError "cannot write 'path'".
inline std::ofstream open_output(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw UserError("cannot write '" + path + "'");
  return f;
}

}  // namespace cs::workflows
