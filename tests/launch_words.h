// Megatron launch arguments as the words a shell passes (interop::megatron_arguments gives a flag
// and its value as one string, "--cp-comm-type a2a"): what import's reader takes back.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace cs::test {

inline std::vector<std::string> launch_words(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (const std::string& a : args) {
    for (size_t start = 0; start < a.size();) {
      const size_t end = std::min(a.find(' ', start), a.size());
      words.push_back(a.substr(start, end - start));
      start = end + 1;
    }
  }
  return words;
}

}  // namespace cs::test
