#include "strategies/pipeline_layout.h"

#include <cctype>

#include "common/error.h"

namespace cs::strategy {
namespace {

// The unrolled layout is at most this long: 4,096 decoder layers (models::limits::max_layers), an
// MTP module per 256 and a '|' per chunk stay far below it, and a "(t*1000000|)*1000000" bomb
// is refused before it is built.
constexpr size_t kMaxUnrolledChars = size_t{1} << 20;

// What is wrong with the layout as a whole (where clustersim places a layer).
[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw UserError("pipeline layout \"" + std::string(text) + "\": " + why +
                  " (Megatron-Core's --pipeline-model-parallel-layout: E, t, m and L layers, '|' "
                  "between model chunks, X*n and (...)*n repeats)");
}
// What is wrong at one character of the text (its syntax).
[[noreturn]] void refuse(std::string_view text, size_t at, const std::string& why) {
  refuse(text, why + " at character " + std::to_string(at + 1));
}

// Reads the count after a '*' at text[at]; `at` moves past its digits.
size_t repeat_count(std::string_view text, size_t& at) {
  const size_t star = at;
  if (at >= text.size() || text[at] != '*') refuse(text, star, "expected '*' and a count");
  ++at;
  size_t n = 0, digits = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    n = n * 10 + static_cast<size_t>(text[at] - '0');
    if (++digits > 7) refuse(text, star, "a repeat count above 9,999,999");
    ++at;
  }
  if (digits == 0) refuse(text, star, "'*' must be followed by a count");
  return n;
}

void append(std::string& out, std::string_view piece, size_t times, std::string_view text,
            size_t at) {
  if (piece.size() * times > kMaxUnrolledChars - out.size())
    refuse(text, at,
           "unrolls to more than " + std::to_string(kMaxUnrolledChars) + " layer letters");
  for (size_t i = 0; i < times; ++i) out += piece;
}

// Unrolls letters with their repeats (no parentheses) from `body`, appending to `out`.
void unroll_letters(std::string_view text, size_t from, size_t to, std::string& out) {
  for (size_t at = from; at < to;) {
    const char c = text[at];
    if (c == ',') {
      ++at;
      continue;
    }
    if (c != 'E' && c != 't' && c != 'm' && c != 'L' && c != '|')
      refuse(text, at, std::string("'") + c + "' is not a layer letter");
    const size_t letter = at++;
    size_t times = 1;
    if (at < to && text[at] == '*') {
      if (c == '|') refuse(text, at, "'|' cannot be repeated with '*'; use (...|)*n");
      times = repeat_count(text.substr(0, to), at);
    }
    append(out, text.substr(letter, 1), times, text, letter);
  }
}

// The layout with every repeat unrolled: "Et*2|(t|)*2L" becomes "Ett|t|t|L".
std::string unroll(std::string_view text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (text[at] == ')') refuse(text, at, "')' without '('");
    if (text[at] != '(') {
      size_t end = at;
      while (end < text.size() && text[end] != '(' && text[end] != ')') ++end;
      unroll_letters(text, at, end, out);
      at = end;
      continue;
    }
    const size_t open = at, close = text.find(')', open);
    if (close == std::string_view::npos) refuse(text, open, "'(' without ')'");
    if (text.substr(open + 1, close - open - 1).find('(') != std::string_view::npos)
      refuse(text, open, "nested parentheses");
    std::string group;
    unroll_letters(text, open + 1, close, group);
    if (group.empty()) refuse(text, open, "an empty group");
    at = close + 1;
    append(out, group, repeat_count(text, at), text, open);
  }
  return out;
}

}  // namespace

PipelineLayerLayout parse_pipeline_layout(std::string_view text) {
  const std::string flat = unroll(text);
  PipelineLayerLayout layout{{0}, 0};
  const size_t last_bar = flat.rfind('|');
  for (size_t i = 0; i < flat.size(); ++i) {
    const char c = flat[i];
    const bool last_chunk = last_bar == std::string::npos || i > last_bar;
    if (c == '|') {
      layout.decoder_layers.push_back(0);
    } else if (c == 'E') {
      if (i != 0)
        refuse(text, "the embedding (E) must be the first layer of the first model chunk");
    } else if (c == 'L') {
      if (i + 1 != flat.size())
        refuse(text, "the loss (L) must be the last layer of the last model chunk, once");
    } else if (c == 'm') {
      if (!last_chunk) refuse(text, "MTP layers (m) must sit on the last model chunk");
      ++layout.mtp_layers;
    } else if (layout.mtp_layers > 0) {
      refuse(text, "decoder layers (t) must come before the MTP layers (m)");
    } else {
      ++layout.decoder_layers.back();
    }
  }
  if (flat.empty() || flat.front() != 'E')
    refuse(text, "the first model chunk must start with the embedding (E)");
  if (flat.back() != 'L') refuse(text, "the last model chunk must end with the loss (L)");
  return layout;
}

std::string format_pipeline_layout(const std::vector<int>& decoder_layers, int mtp_layers) {
  auto letters = [](char c, int n) -> std::string {
    if (n <= 0) return "";
    return n == 1 ? std::string(1, c) : std::string(1, c) + "*" + std::to_string(n);
  };
  std::string out = "E";
  const size_t chunks = decoder_layers.size();
  for (size_t g = 0; g < chunks;) {
    size_t run = 1;
    // Fold equal middle chunks (not the first, which holds E, nor the last, which holds L).
    if (g > 0) {
      while (g + run + 1 < chunks && decoder_layers[g + run] == decoder_layers[g]) ++run;
    }
    const std::string chunk = letters('t', decoder_layers[g]);
    if (run > 1) {
      out += "(" + chunk + "|)*" + std::to_string(run);
    } else {
      out += chunk;
      if (g + 1 < chunks) out += "|";
    }
    g += run;
  }
  return out + letters('m', mtp_layers) + "L";
}

}  // namespace cs::strategy
