// The C++ half of the Python module `clustersim` (python/clustersim/__init__.py is the other):
// scenarios as editable YAML documents (scenario_document.h), the simulator's runs (runs.h), and
// the project's errors as Python exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "common/error.h"
#include "python/result_json.h"
#include "python/runs.h"
#include "python/scenario_document.h"
#include "python/yaml_python.h"

namespace py = pybind11;

namespace cs::python {

namespace {

// A mapping inside a scenario's YAML document (the whole document at path ""). Reading a key that
// holds a mapping gives another Section over the same tree, so `s.layout.tp = 4` edits the
// document; any other value is returned as a Python value (a list is a copy: assign it back whole).
class Section {
 public:
  Section(std::shared_ptr<ScenarioDocument> doc, YAML::Node node, std::string path)
      : doc_(std::move(doc)), node_(std::move(node)), path_(std::move(path)) {}

  bool has(const std::string& key) const { return child(key).IsDefined(); }

  py::object get(const std::string& key) const {
    const YAML::Node c = child(key);
    if (c.IsMap()) return py::cast(Section(doc_, c, path_of(key)));
    return cs::python::to_python(c);
  }

  void set(const std::string& key, py::handle value) {
    node_[key] = py::isinstance<Section>(value) ? YAML::Clone(value.cast<const Section&>().node_)
                                                : to_yaml(value);
    doc_->mark_edited();
  }

  void remove(const std::string& key) {
    if (!has(key)) throw py::key_error(path_of(key));
    node_.remove(key);
    doc_->mark_edited();
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& kv : node_) out.push_back(kv.first.Scalar());
    return out;
  }

  py::object to_python() const { return cs::python::to_python(node_); }
  const std::string& path() const { return path_; }
  const std::shared_ptr<ScenarioDocument>& document() const { return doc_; }

 private:
  YAML::Node child(const std::string& key) const {
    const YAML::Node& node = node_;  // const: a missing key is not added
    return node.IsMap() ? node[key] : YAML::Node();
  }
  std::string path_of(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  std::shared_ptr<ScenarioDocument> doc_;
  YAML::Node node_;
  std::string path_;
};

// A whole scenario: the document's root, with where it came from, its YAML, and a check.
class Scenario : public Section {
 public:
  explicit Scenario(const std::shared_ptr<ScenarioDocument>& doc) : Section(doc, doc->root(), "") {}
  const ScenarioDocument& doc() const { return *document(); }
};

py::object get_attribute(const Section& s, const std::string& name) {
  // Python asks for dunder and private names (copy, pickle, IPython): they are never YAML keys.
  if (name.empty() || name[0] == '_' || !s.has(name))
    throw py::attribute_error("scenario has no key '" +
                              (s.path().empty() ? name : s.path() + "." + name) + "'");
  return s.get(name);
}

py::object get_item(const Section& s, const std::string& key) {
  if (!s.has(key)) throw py::key_error(key);
  return s.get(key);
}

void bind_scenario(py::module_& m) {
  py::class_<Section>(m, "Section",
                      "a mapping of a scenario's YAML: read and set keys as attributes or items")
      .def("__getattr__", &get_attribute)
      .def("__setattr__", &Section::set)
      .def("__delattr__", &Section::remove)
      .def("__getitem__", &get_item)
      .def("__setitem__", &Section::set)
      .def("__delitem__", &Section::remove)
      .def("__contains__", &Section::has)
      .def("__iter__", [](const Section& s) { return py::iter(py::cast(s.keys())); })
      .def("__len__", [](const Section& s) { return s.keys().size(); })
      .def("__dir__", &Section::keys)
      .def("keys", &Section::keys)
      .def(
          "get",
          [](const Section& s, const std::string& key, py::object fallback) {
            return s.has(key) ? s.get(key) : fallback;
          },
          py::arg("key"), py::arg("default") = py::none())
      .def("to_dict", &Section::to_python, "the mapping as plain dicts and lists (a copy)")
      .def("__repr__", [](const Section& s) {
        return "Section(" + py::repr(s.to_python()).cast<std::string>() + ")";
      });
  py::class_<Scenario, Section>(m, "Scenario",
                                "a scenario: its YAML document, checked by the scenario reader "
                                "when loaded and each time it is simulated or validated")
      .def_property_readonly(
          "source", [](const Scenario& s) { return s.doc().source(); },
          "the file (or '<dict>', '<text>') the scenario came from")
      .def(
          "to_yaml", [](const Scenario& s) { return s.doc().yaml(); },
          "the scenario as YAML text (a file `clustersim simulate` reads the same way)")
      .def(
          "validate", [](const Scenario& s) { s.doc().read(); },
          "raise ScenarioError as the scenario reader would for this document")
      .def(
          "copy", [](const Scenario& s) { return Scenario(s.doc().copy()); },
          "an independent copy (edits to one leave the other alone)")
      .def("__repr__",
           [](const Scenario& s) { return "<clustersim.Scenario from " + s.doc().source() + ">"; });
  m.def("_load_file",
        [](const std::string& path) { return Scenario(ScenarioDocument::from_file(path)); });
  m.def("_load_text", [](const std::string& text, const std::string& source) {
    return Scenario(ScenarioDocument::from_text(text, source));
  });
  m.def("_load_tree", [](py::handle tree, const std::string& source) {
    return Scenario(ScenarioDocument::from_tree(to_yaml(tree), source));
  });
}

// One simulated step, kept whole so that the memory timeline is converted only when asked for.
struct Simulation {
  std::shared_ptr<const driver::SimulationResult> result;
};

void bind_runs(py::module_& m) {
  py::class_<Simulation>(m, "_Simulation")
      .def("report",
           [](const Simulation& s) { return cs::python::to_python(report_json(*s.result)); })
      .def("memory_timeline", [](const Simulation& s) { return memory_timeline(*s.result); });
  m.def(
      "_simulate",
      [](const Scenario& s, const std::string& fidelity, const std::string& profile,
         bool no_profile, bool baseline, const std::string& ranks) {
        return Simulation{simulate(s.doc(), {fidelity, profile, ranks, no_profile, baseline})};
      },
      py::arg("scenario"), py::arg("fidelity"), py::arg("profile"), py::arg("no_profile"),
      py::arg("baseline"), py::arg("ranks"));
  m.def("_plan", [](const Scenario* s, const py::dict& options) {
    return plan(s ? &s->doc() : nullptr, options);
  });
  m.def("_validate_suite", &validate_suite);
  m.def("_import_hf", &import_hf);
  m.def("_import_megatron", &import_megatron);
}

void init_module(py::module_& m) {
  m.doc() = "clustersim's simulator, planner, validation suite and importers (C++ part)";
  // Error: every refusal the project explains (cs::UserError); ScenarioError: the scenario
  // reader's. Both are ValueErrors. Translators run newest first: the narrower one goes last.
  static py::exception<UserError> error(m, "Error", PyExc_ValueError);
  static py::exception<scenario::ScenarioError> scenario_error(m, "ScenarioError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const scenario::ScenarioError& e) {
      scenario_error(e.what());
    } catch (const UserError& e) {
      error(e.what());
    }
  });
  bind_scenario(m);
  bind_runs(m);
}

}  // namespace

}  // namespace cs::python

PYBIND11_MODULE(_clustersim, m) { cs::python::init_module(m); }
