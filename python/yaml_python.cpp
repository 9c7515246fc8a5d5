#include "python/yaml_python.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>

namespace py = pybind11;

namespace cs::python {

namespace {

bool one_of(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s == w) return true;
  }
  return false;
}

// A whole-string number, or nothing (from_chars reads no sign '+', no spaces, no suffix).
template <class T>
bool parse_whole(const std::string& s, T& value) {
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  return ec == std::errc() && ptr == end;
}

py::object plain_scalar(const std::string& s) {
  if (one_of(s, {"true", "True", "TRUE"})) return py::bool_(true);
  if (one_of(s, {"false", "False", "FALSE"})) return py::bool_(false);
  if (one_of(s, {"null", "Null", "NULL", "~", ""})) return py::none();
  int64_t i = 0;
  if (parse_whole(s, i)) return py::int_(i);
  // Digits first: from_chars would also read "inf" and "nan", which YAML spells .inf and .nan.
  double d = 0;
  const bool numeric_start = !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) ||
                                            s[0] == '-' || s[0] == '+' || s[0] == '.');
  if (numeric_start && parse_whole(s, d)) return py::float_(d);
  return py::str(s);
}

}  // namespace

py::object to_python(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      py::dict d;
      for (const auto& kv : node) d[py::str(kv.first.Scalar())] = to_python(kv.second);
      return d;
    }
    case YAML::NodeType::Sequence: {
      py::list l;
      for (const auto& item : node) l.append(to_python(item));
      return l;
    }
    case YAML::NodeType::Scalar:
      // Tag "!" marks a quoted scalar: the file wrote it as a string.
      return node.Tag() == "!" ? py::str(node.Scalar()) : plain_scalar(node.Scalar());
    default:
      return py::none();
  }
}

YAML::Node to_yaml(py::handle value) {
  if (value.is_none()) return YAML::Node(YAML::NodeType::Null);
  if (py::isinstance<py::bool_>(value)) return YAML::Node(value.cast<bool>() ? "true" : "false");
  // int, and integers that are not int (numpy's) but say how to be one (__index__).
  if (py::isinstance<py::int_>(value) || py::hasattr(value, "__index__"))
    return YAML::Node(
        py::str(py::int_(py::reinterpret_borrow<py::object>(value))).cast<std::string>());
  // repr: the shortest text that reads back as the same double.
  if (py::isinstance<py::float_>(value)) return YAML::Node(py::repr(value).cast<std::string>());
  if (py::isinstance<py::str>(value)) return YAML::Node(value.cast<std::string>());
  if (py::isinstance<py::dict>(value) || py::hasattr(value, "keys")) {
    YAML::Node map(YAML::NodeType::Map);
    for (py::handle key : value) map[py::str(key).cast<std::string>()] = to_yaml(value[key]);
    return map;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (py::handle item : value) seq.push_back(to_yaml(item));
    return seq;
  }
  throw py::type_error("a scenario value is None, bool, int, float, str, a dict or a list, not " +
                       py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
}

}  // namespace cs::python
