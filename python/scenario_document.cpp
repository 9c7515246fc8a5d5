#include "python/scenario_document.h"

#include <cctype>

namespace cs::python {

namespace {

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// ":<digits>" at `pos`: the position just past it, or npos.
size_t skip_number(const std::string& s, size_t pos) {
  if (pos >= s.size() || s[pos] != ':') return std::string::npos;
  size_t end = pos + 1;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  return end > pos + 1 ? end : std::string::npos;
}

}  // namespace

std::string without_position(const std::string& message, const std::string& source) {
  if (message.compare(0, source.size(), source) != 0) return message;
  const size_t after_line = skip_number(message, source.size());
  if (after_line == std::string::npos) return message;
  const size_t after_column = skip_number(message, after_line);
  return source + message.substr(after_column == std::string::npos ? after_line : after_column);
}

// Read once, through the scenario reader's bounded read (4 MiB; /dev/zero is refused, not read
// until memory runs out), then checked as that text: the same errors as `clustersim simulate`.
std::shared_ptr<ScenarioDocument> ScenarioDocument::from_file(const std::string& path) {
  return from_text(scenario::read_scenario_text(path), path);
}

std::shared_ptr<ScenarioDocument> ScenarioDocument::from_text(const std::string& text,
                                                              const std::string& source) {
  scenario::parse_scenario(text, source);  // valid YAML, one document, a valid scenario
  return std::shared_ptr<ScenarioDocument>(new ScenarioDocument(source, text, YAML::Load(text)));
}

std::shared_ptr<ScenarioDocument> ScenarioDocument::from_tree(const YAML::Node& root,
                                                              const std::string& source) {
  auto doc = std::shared_ptr<ScenarioDocument>(new ScenarioDocument(source, "", root));
  doc->edited_ = true;  // there is no text whose lines a message could point at
  doc->read();
  return doc;
}

std::string ScenarioDocument::yaml() const { return edited_ ? emit(root_) : text_; }

scenario::Scenario ScenarioDocument::read() const {
  if (!edited_) return scenario::parse_scenario(text_, source_);
  try {
    return scenario::parse_scenario(emit(root_), source_);
  } catch (const scenario::ScenarioError& e) {
    throw scenario::ScenarioError(without_position(e.what(), source_));
  }
}

std::shared_ptr<ScenarioDocument> ScenarioDocument::copy() const {
  auto doc =
      std::shared_ptr<ScenarioDocument>(new ScenarioDocument(source_, text_, YAML::Clone(root_)));
  doc->edited_ = edited_;
  return doc;
}

}  // namespace cs::python
