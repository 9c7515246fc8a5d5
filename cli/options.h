// The command line's shared pieces on top of CLI11: how an option hands its text to flags.h's
// helpers (so range checks and their messages stay one code path), and the value lists taken
// from the enums' own to_string, so help, parsing and error messages cannot drift from the code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "cost_models/nccl_tables.h"
#include "scenarios/scenario.h"
#include "training_run/inputs.h"

namespace cs::cli {

// What a subcommand's callback writes to and the exit status it leaves.
struct Context {
  std::ostream& out;
  std::ostream& err;
  int status = 0;
};

// Each command adds its subcommand to the top-level app (cli/app.cpp calls these).
void add_simulate_command(CLI::App& app, Context& ctx);
void add_list_command(CLI::App& app, Context& ctx);
void add_plan_command(CLI::App& app, Context& ctx);
void add_sweep_command(CLI::App& app, Context& ctx);
void add_bench_collective_command(CLI::App& app, Context& ctx);
void add_execute_commands(CLI::App& app, Context& ctx);  // execute and the hidden execute-rank
void add_validate_command(CLI::App& app, Context& ctx);
void add_calibrate_command(CLI::App& app, Context& ctx);
void add_import_command(CLI::App& app, Context& ctx);
void add_compare_command(CLI::App& app, Context& ctx);  // cli/compare_command.cpp
// --set KEY=VALUE (repeatable, one pair each): dotted scenario keys overriding the file's
// (scenarios/scenario.h KeyOverride); simulate and compare share it.
CLI::Option* set_option(CLI::App& sub, std::vector<scenario::KeyOverride>& target,
                        const std::string& help);

// The training run's inputs as options (--tokens, --usd-per-gpu-hour, ...: training_run/inputs.h
// reads and bounds them as it reads a scenario's `run:` block) into `run`, which must outlive the
// parse; simulate's, and any command that prints a run's time and cost.
void add_run_options(CLI::App& sub, training_run::RunInputs& run);

// --algo and --proto, shared by simulate and bench-collective (cli/app.cpp): NCCL's algorithms
// that run a collective and its protocols, each with "auto"; case-insensitive as NCCL_ALGO.
std::vector<std::string> algorithm_names();
std::vector<std::string> protocol_names();
std::optional<cost::Algorithm> algorithm_flag(const std::string& text);  // nullopt: auto
std::optional<cost::Protocol> protocol_flag(const std::string& text);

inline std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// Every value of an enum whose to_string answers "?" past its last value (at most `limit`).
template <class E>
std::vector<E> every_value(int limit = 64) {
  std::vector<E> out;
  for (int i = 0; i < limit; ++i) {
    const auto e = static_cast<E>(i);
    if (to_string(e) == "?") break;
    out.push_back(e);
  }
  return out;
}

template <class E>
std::vector<std::string> names_of(const std::vector<E>& values) {
  std::vector<std::string> out;
  for (E e : values) out.emplace_back(to_string(e));
  return out;
}

// The value of `values` whose to_string is `text`, or a UserError "FLAG 'text': valid values are
// ...".
template <class E>
E parse_choice(const std::string& flag, const std::string& text, const std::vector<E>& values) {
  for (E e : values) {
    if (text == to_string(e)) return e;
  }
  throw UserError(flag + " '" + text + "': valid values are " + join(names_of(values)));
}

// The names of a name table (the models/ convention: {"name", value} pairs, e.g. stack_names()).
template <class E>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, E>>& table) {
  std::vector<std::string> out;
  for (const auto& [name, e] : table) out.push_back(name);
  return out;
}

// The value named `text` in a name table, or a UserError "FLAG 'text': valid values are ...".
template <class E>
E parse_named(const std::string& flag, const std::string& text,
              const std::vector<std::pair<std::string, E>>& table) {
  for (const auto& [name, e] : table) {
    if (text == name) return e;
  }
  throw UserError(flag + " '" + text + "': valid values are " + join(names_of(table)));
}

// The same for a plain list of words.
inline void check_choice(const std::string& flag, const std::string& text,
                         const std::vector<std::string>& values) {
  for (const auto& v : values) {
    if (text == v) return;
  }
  throw UserError(flag + " '" + text + "': valid values are " + join(values));
}

// "a|b|c", the type shown in --help for a choice.
inline std::string choice_type(const std::vector<std::string>& values) { return join(values, "|"); }

// An option whose text goes to `set` when the command line is parsed; `set` converts it with the
// helpers of flags.h and throws UserError naming the flag. Given twice, the last one wins (as
// the hand-written parsers did).
inline CLI::Option* text_option(CLI::App& app, const std::string& names,
                                std::function<void(const std::string&)> set,
                                const std::string& help, const std::string& type = "TEXT") {
  return app.add_option_function<std::string>(names, std::move(set), help)
      ->type_name(type)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// An option with several names (bench-collective's --max, -e and --maxbytes: clustersim's name and
// nccl-tests' two). CLI11 does not say which name a value came with, so each name is its own
// option: `set` gets the name the user typed, and so do its refusals and CLI11's own ("-e: 1
// required SIZE missing"); naming another alias confused users. --help lists each name, the
// others as "the same as" the first (CLI11 names a hidden option "" in its errors). Each runs as
// soon as it is read, so the last one given wins whatever its name.
using AliasedSet = std::function<void(const std::string& flag, const std::string& value)>;
inline void aliased_option(CLI::App& app, const std::vector<std::string>& names,
                           const AliasedSet& set, const std::string& help,
                           const std::string& type) {
  for (const std::string& name : names) {
    app.add_option_function<std::string>(
           name, [set, name](const std::string& v) { set(name, v); },
           name == names[0] ? help : "the same as " + names[0])
        ->type_name(type)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->trigger_on_parse();
  }
}

// An option stored as text, judged later by the command (e.g. a path).
inline CLI::Option* text_option(CLI::App& app, const std::string& names, std::string& target,
                                const std::string& help, const std::string& type = "FILE") {
  return app.add_option(names, target, help)
      ->type_name(type)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// The positional arguments of a command that takes one file: CLI11 collects them, the command
// says "takes one ... file, got a second" as before.
inline const std::string& one_file(const std::vector<std::string>& given,
                                   const std::string& command,
                                   const std::string& what = "scenario file") {
  static const std::string none;
  if (given.size() > 1)
    throw UserError(command + " takes one " + what + ", got a second: '" + given[1] + "'");
  return given.empty() ? none : given[0];
}

}  // namespace cs::cli
