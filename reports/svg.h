// Small pieces every SVG chart here uses (the HTML report's and the sweep's): text escaped for
// XML, numbers in the shortest form, and "nice" axis steps.
#pragma once

#include <string>

namespace cs::reports {

// `s` with < > & " escaped for XML text and attribute values.
std::string xml_escape(const std::string& s);
// printf's %g: 0.5, 12, 1e+06.
std::string shortest(double v);
// The smallest step of 1, 2 or 5 times a power of ten that covers `v` (> 0) in at most `count`
// steps: v = 730, count 5 -> 200.
double nice_step(double v, int count);

}  // namespace cs::reports
