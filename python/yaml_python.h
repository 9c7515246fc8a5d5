// Values between Python and the YAML tree of a scenario. YAML scalars are text; Python gets them
// typed the way YAML 1.2's core schema types plain scalars (true/false, null, integers, floats),
// and a quoted scalar stays a string. Python values go back as the text a scenario file would
// hold: the scenario reader then types them as it types a file.
#pragma once

#include <pybind11/pybind11.h>
#include <yaml-cpp/yaml.h>

namespace cs::python {

// A mapping or sequence becomes a dict or list (recursively), a scalar a bool, int, float, None
// or str.
pybind11::object to_python(const YAML::Node& node);
// None, bool, int, float, str, a mapping (string keys) or a sequence (list or tuple), nested.
// Throws TypeError for anything else.
YAML::Node to_yaml(pybind11::handle value);

}  // namespace cs::python
