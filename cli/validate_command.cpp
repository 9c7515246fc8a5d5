#include "cli/validate_command.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>

#include "common/error.h"
#include "validate/table_validation.h"

namespace cs::cli {
namespace {

struct Args {
  std::string table, csv;
  unsigned seed = 42;
};

Args parse(const std::vector<std::string>& args, const char* command, const char* help) {
  Args a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& x = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UserError("option " + x + " needs a value");
      return args[++i];
    };
    if (x == "--table" || x == "--from-table") a.table = value();
    else if (x == "--csv") a.csv = value();
    else if (x == "--seed") {
      const std::string v = value();
      try {
        a.seed = static_cast<unsigned>(std::stoul(v));
      } catch (...) {
        throw UserError("--seed '" + v + "': expected a non-negative integer");
      }
    } else if (x == "--help" || x == "-h") {
      throw UserError(help);
    } else {
      throw UserError("unknown option '" + x + "' for " + command + "\n" + help);
    }
  }
  if (a.table.empty()) throw UserError(std::string(command) + " needs a table\n" + help);
  return a;
}

void print_factors(std::ostream& out, const validate::Factors& f) {
  for (int i = 0; i < validate::kFactorCount; ++i) {
    const double scale = std::string(validate::Factors::unit(i)) == "us" ? 1e6 : std::string(validate::Factors::unit(i)) == "ms" ? 1e3 : 1.0;
    char line[160];
    std::snprintf(line, sizeof line, "  %-52s %9.3f %s\n", validate::Factors::name(i), f.v[static_cast<size_t>(i)] * scale, validate::Factors::unit(i));
    out << line;
  }
}

}  // namespace

int validate_command(const std::vector<std::string>& args, std::ostream& out) {
  constexpr const char* kHelp =
      "usage: clustersim validate --table FILE [--seed N] [--csv FILE]\n"
      "  Predicts every row of a published table (vTrain's format: GPUs, global batch, micro batch,\n"
      "  hidden, heads, layers, sequence, TP, DP, PP, iteration ms), fits a few global factors on a\n"
      "  random half (seed N, default 42) and reports the error on the other half: MAPE, median,\n"
      "  worst, and by parallelism type. --csv writes every row's prediction.\n";
  const Args a = parse(args, "validate", kHelp);
  const auto rows = validate::read_vtrain_table(a.table);
  const auto parts = validate::simulate_rows(rows);
  std::vector<size_t> train, test;
  validate::split_half(parts, a.seed, train, test);
  size_t failed = 0;
  for (const auto& p : parts) failed += p.error.empty() ? 0 : 1;
  const validate::Factors fitted = validate::fit(rows, parts, train);
  const auto def = validate::errors(rows, parts, validate::Factors{}, test);
  const auto held = validate::errors(rows, parts, fitted, test);
  const auto seen = validate::errors(rows, parts, fitted, train);
  out << "validate    " << a.table << ": " << rows.size() << " rows, " << failed << " could not be simulated\n";
  out << "            fitted on " << train.size() << " rows (random half, seed " << a.seed << "), tested on the other " << test.size() << "\n\n";
  out << "fitted factors (" << validate::kFactorCount << ")\n";
  print_factors(out, fitted);
  char line[200];
  std::snprintf(line, sizeof line, "\nheld-out half  MAPE %.2f%%  median %.2f%%  worst %.1f%%\n", held.mape, held.median, held.worst);
  out << line;
  std::snprintf(line, sizeof line, "fitting half   MAPE %.2f%%\n", seen.mape);
  out << line;
  std::snprintf(line, sizeof line, "default model  MAPE %.2f%% on the held-out half (no fitting)\n\n", def.mape);
  out << line;
  out << "held-out error by parallelism\n";
  std::map<std::string, std::vector<size_t>> by_type;
  for (size_t i : test) by_type[validate::parallelism_type(rows[i])].push_back(i);
  for (const auto& [type, idx] : by_type) {
    const auto e = validate::errors(rows, parts, fitted, idx);
    std::snprintf(line, sizeof line, "  %-24s %4zu rows  MAPE %6.2f%%  worst %6.1f%%\n", type.c_str(), e.rows, e.mape, e.worst);
    out << line;
  }
  if (!a.csv.empty()) {
    std::ofstream f(a.csv);
    if (!f) throw UserError("cannot write '" + a.csv + "'");
    validate::write_rows_csv(f, rows, parts, fitted, test);
    out << "\nwrote " << a.csv << "\n";
  }
  return 0;
}

int calibrate_command(const std::vector<std::string>& args, std::ostream& out) {
  constexpr const char* kHelp =
      "usage: clustersim calibrate --from-table FILE\n"
      "  Fits the global factors of the table model (see `clustersim validate`) on every row of a\n"
      "  published table and prints them with their units. (Calibrating from microbenchmarks on\n"
      "  a backend is not built yet.)\n";
  const Args a = parse(args, "calibrate", kHelp);
  const auto rows = validate::read_vtrain_table(a.table);
  const auto parts = validate::simulate_rows(rows);
  std::vector<size_t> all;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].error.empty()) all.push_back(i);
  }
  const validate::Factors f = validate::fit(rows, parts, all);
  const auto e = validate::errors(rows, parts, f, all);
  out << "calibrate   " << a.table << ": fitted on " << all.size() << " of " << rows.size() << " rows\n";
  print_factors(out, f);
  char line[120];
  std::snprintf(line, sizeof line, "in-sample MAPE %.2f%% (use `clustersim validate --table` for a held-out error)\n", e.mape);
  out << line;
  return 0;
}

}  // namespace cs::cli
