// A launch script's words as bash would expand them, read without running anything (the
// Megatron-LM importer reads its flags from them; interop/megatron_args.h).
//
// Read: comments, line continuations, '...' and "..." quotes, backslash escapes, variables ($X,
// ${X}, ${X:-default}, ${X-default}), NAME=value and NAME+=value (with export, declare, local,
// readonly, typeset), arrays NAME=( ... ) and NAME+=( ... ), "${ARR[@]}" (one word per element)
// and ${ARR[@]} (each element split at blanks, as Megatron-LM's examples rely on:
// DTYPE_ARGS+=("--fp8-format hybrid") then ${DTYPE_ARGS[@]}), redirections and here-documents
// (skipped). Not run: command substitution $(...) and `...`, arithmetic $((...)), positional
// parameters ($1) and the environment: each expands to its own source text, so that a modelled
// flag given one is reported as an unresolved shell variable; ${1:-default} takes the default (the
// script is read as run with no arguments and an empty environment). Conditions and loops are not
// evaluated: every branch is read in order (the last assignment wins), and a note says so.
//
// Bounds (each refused with file:line, the size met and the bound): the script at most
// kMaxScriptBytes, a line at most kMaxLineChars, a variable's value or one word at most
// kMaxValueChars after expansion (a script whose variables double each line stops there), all the
// command words together at most kMaxWordChars. The reader scans once, left to right, with an
// explicit stack for nested quotes and substitutions (no recursion).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cs::interop {

inline constexpr size_t kMaxScriptBytes = size_t{1} << 20;  // 1 MiB; launch scripts are a few KB
inline constexpr size_t kMaxLineChars = size_t{1} << 14;    // 16384 characters a line
inline constexpr size_t kMaxValueChars = size_t{1} << 16;   // 65536 per variable or word
inline constexpr size_t kMaxWordChars = size_t{1} << 20;    // all command words, 1 MiB
// Why, said after each bound's refusal.
inline constexpr const char* kLaunchScriptBoundsWhy =
    "launch scripts are a few KB; the bound keeps a file given by mistake, or a variable that "
    "doubles each line, from exhausting memory";

struct LaunchScript {
  std::vector<std::string> words;  // every command's words, in order, expanded
  std::vector<std::string> notes;  // what was read but not evaluated ("file:12: ...")
};

// `file` names the script in errors and notes. Throws UserError.
LaunchScript read_launch_script(const std::string& text, const std::string& file);

}  // namespace cs::interop
