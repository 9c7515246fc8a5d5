// A scenario as Python holds it: its YAML document, edited in place through attribute access, and
// read by the scenario reader (scenarios/scenario.h) each time it is simulated or validated. The
// reader stays the one owner of what a valid scenario is: a value set from Python is refused with
// the message the same value in a file gets.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

#include "scenarios/scenario.h"

namespace cs::python {

class ScenarioDocument {
 public:
  // Each reads the scenario once (the reader's errors, with file lines, are thrown as they are).
  static std::shared_ptr<ScenarioDocument> from_file(const std::string& path);
  // `source` names the text in messages; relative paths in it (hf_config, profile, hardware
  // files) are taken from its folder, as for a file of that name.
  static std::shared_ptr<ScenarioDocument> from_text(const std::string& text,
                                                     const std::string& source);
  static std::shared_ptr<ScenarioDocument> from_tree(const YAML::Node& root,
                                                     const std::string& source);

  const std::string& source() const { return source_; }
  YAML::Node root() const { return root_; }
  void mark_edited() { edited_ = true; }
  // The document as YAML: the original text until an edit, then the edited tree.
  std::string yaml() const;
  // The typed scenario. After an edit the reader sees emitted text whose lines are not the
  // source's, so "source:line:column: key: message" is shortened to "source: key: message".
  scenario::Scenario read() const;
  std::shared_ptr<ScenarioDocument> copy() const;

 private:
  ScenarioDocument(std::string source, std::string text, YAML::Node root)
      : source_(std::move(source)), text_(std::move(text)), root_(std::move(root)) {}

  std::string source_, text_;
  YAML::Node root_;
  bool edited_ = false;
};

// "f.yaml:12:7: layout.tp: ..." -> "f.yaml: layout.tp: ..." when the message starts with
// `source` and a line and column; any other message is returned as it is.
std::string without_position(const std::string& message, const std::string& source);

}  // namespace cs::python
