#include "training_run/inputs.h"

#include <cmath>
#include <cstdio>

#include "common/units.h"

namespace cs::training_run {
namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// `text` as a whole number text (no trailing characters), or InputError.
double plain_number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    throw InputError("expected a number, got '" + text + "'");
  return v;
}

// `v` within [lo, hi] (lo excluded when `open_low`), with the bounds, unit and why in the message.
double in_range(double v, double lo, double hi, const char* unit, const char* why,
                bool open_low = false) {
  if (v > hi || v < lo || (open_low && v == lo)) {
    throw InputError(number_text(v) + " is out of range: " + (open_low ? "above " : "at least ") +
                     number_text(lo) + " and at most " + number_text(hi) +
                     (*unit ? std::string(" ") + unit : std::string()) + " (" + why + ")");
  }
  return v;
}

// The bounds are far outside any real run, to catch a unit or an exponent typed wrong: 1e15
// tokens is 64x Llama 3's 15.6T; 1e9 steps; $1,000 per GPU-hour is 80x a list price; 10 kW per
// GPU is 5x a GB300's board and node share; a PUE of 3 is twice the global average of about 1.6;
// one failure per GPU-hour is 50,000x Meta's rate; storage from 1 MB/s to 1 PB/s; a restart of
// at most a day. Each refusal says so.
constexpr const char* kTypo = "far outside any real run: a unit or an exponent typed wrong?";
void read_tokens(RunInputs& in, const std::string& t) {
  in.tokens = in_range(parse_count(t), 0, 1e15, "tokens",
                       "64 times the 15.6T tokens Llama 3 was trained on", true);
}
void read_steps(RunInputs& in, const std::string& t) {
  const double v = in_range(parse_count(t), 1, 1e9, "steps", kTypo);
  if (v != std::floor(v)) throw InputError("expected a whole number of steps, got '" + t + "'");
  in.steps = v;
}
void read_price(RunInputs& in, const std::string& t) {
  in.usd_per_gpu_hour =
      in_range(plain_number(t), 0, 1000, "USD per GPU-hour", "80 times a cloud list price");
}
void read_watts(RunInputs& in, const std::string& t) {
  in.watts_per_gpu = in_range(plain_number(t), 0, 10000, "W per GPU",
                              "5 times a GB300's board and its node's share", true);
}
void read_pue(RunInputs& in, const std::string& t) {
  in.pue = in_range(plain_number(t), 1, 3, "",
                    "a PUE counts the facility's power over the IT power, so at least 1; 3 is "
                    "twice the global average of about 1.6");
}
void read_failures(RunInputs& in, const std::string& t) {
  in.failures_per_gpu_hour = in_range(plain_number(t), 0, 1, "failures per GPU-hour",
                                      "50,000 times Meta's rate on Llama 3");
}
void read_checkpoint_size(RunInputs& in, const std::string& t) {
  if (!t.empty() && t.back() >= '0' && t.back() <= '9')
    throw InputError("'" + t + "' has no unit; write e.g. " + t +
                     "GB (units: B, KB, MB, GB, TB, KiB, ...)");
  try {
    in.checkpoint_bytes = in_range(static_cast<double>(parse_bytes(t).count), 0,
                                   std::ldexp(1.0, 60), "bytes", kTypo, true);
  } catch (const UnitError& e) {
    throw InputError(e.what());
  }
}
void read_bandwidth(RunInputs& in, const std::string& t) {
  try {
    in.checkpoint_bandwidth = parse_bandwidth(t).value;
  } catch (const UnitError& e) {
    throw InputError(e.what());
  }
  if (*in.checkpoint_bandwidth < 1e6 || *in.checkpoint_bandwidth > 1e15) {
    throw InputError(t + " is out of range: at least 1 MB/s and at most 1 PB/s (" + kTypo + ")");
  }
}
void read_restart(RunInputs& in, const std::string& t) {
  try {
    in.restart_seconds = in_range(parse_duration(t).seconds(), 0, 86400, "s",
                                  "a restart that takes over a day is an outage, not an overhead");
  } catch (const UnitError& e) {
    throw InputError(e.what());
  }
}

}  // namespace

double parse_count(const std::string& text) {
  static constexpr std::pair<char, double> kSuffixes[] = {
      {'K', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}};
  std::string digits = text;
  double scale = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (!text.empty() && text.back() == suffix) {
      digits.pop_back();
      scale = factor;
    }
  }
  try {
    return plain_number(digits) * scale;
  } catch (const InputError&) {
    throw InputError("expected a count such as 15T, 300B or 2.5e12, got '" + text + "'");
  }
}

void RunInputs::override_with(const RunInputs& later) {
  if (later.tokens || later.steps) {
    tokens = later.tokens;
    steps = later.steps;
  }
  auto take = [](std::optional<double>& mine, const std::optional<double>& theirs) {
    if (theirs) mine = theirs;
  };
  take(usd_per_gpu_hour, later.usd_per_gpu_hour);
  take(watts_per_gpu, later.watts_per_gpu);
  take(pue, later.pue);
  take(failures_per_gpu_hour, later.failures_per_gpu_hour);
  take(checkpoint_bytes, later.checkpoint_bytes);
  take(checkpoint_bandwidth, later.checkpoint_bandwidth);
  take(restart_seconds, later.restart_seconds);
}

const std::vector<InputKey>& input_keys() {
  static const std::vector<InputKey> kKeys = {
      {"tokens", "--tokens", "COUNT",
       "tokens to train, e.g. 15T (default: 20 per parameter, Chinchilla)", read_tokens},
      {"steps", "--steps", "COUNT", "optimizer steps to train (instead of --tokens)", read_steps},
      {"usd_per_gpu_hour", "--usd-per-gpu-hour", "USD",
       "price of one GPU-hour (default: a cloud list price for the GPU, named in the report)",
       read_price},
      {"watts_per_gpu", "--watts-per-gpu", "W",
       "power per GPU at the wall: its board and its node's share (default: the GPU's DGX/HGX "
       "system maximum over its GPUs)",
       read_watts},
      {"pue", "--pue", "RATIO", "the data centre's power usage effectiveness (default 1.1)",
       read_pue},
      {"failures_per_gpu_hour", "--failures-per-gpu-hour", "RATE",
       "job interruptions per GPU-hour (default: Llama 3's 419 in 54 days on 16,384 H100)",
       read_failures},
      {"checkpoint_size", "--checkpoint-size", "SIZE",
       "bytes one checkpoint writes (default: 14 B per parameter: bf16 weights, fp32 master "
       "weights, AdamW's two moments)",
       read_checkpoint_size},
      {"checkpoint_bandwidth", "--checkpoint-bandwidth", "RATE",
       "storage bandwidth for checkpoints, all ranks together (default 2 TB/s: Llama 3's "
       "Tectonic, sustained)",
       read_bandwidth},
      {"restart_overhead", "--restart-overhead", "TIME",
       "time to reschedule and restart after a failure, before the restore (default 600s)",
       read_restart},
  };
  return kKeys;
}

}  // namespace cs::training_run
