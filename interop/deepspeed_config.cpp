// DeepSpeed ds_config.json -> scenario draft (declared in interop/megatron_args.h).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/checked.h"
#include "common/error.h"
#include "common/limits.h"
#include "interop/hf_config.h"
#include "interop/json_file.h"
#include "interop/megatron_args.h"

namespace cs::interop {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A JSON number that is an integer, in whatever form it is written (64, 5e7, 5.0E7), within
// +-2^53 for floats (where every integer is exact); nullopt otherwise.
std::optional<int64_t> json_integer(const json& v) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
               ? std::optional<int64_t>(static_cast<int64_t>(v.get<uint64_t>()))
               : std::nullopt;
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number_float()) return std::nullopt;
  const double x = v.get<double>();
  if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) > 9007199254740992.0)
    return std::nullopt;
  return static_cast<int64_t>(x);
}

// Any JSON integer or integral float: one json_integer cannot give (past 2^53 or 64 bits, 1e300)
// is out of range, not "not an integer".
bool whole_number(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                   v.get<double>() == std::floor(v.get<double>()));
}

// The keys of `obj` not in `read`, as "prefix.key".
void unread_keys(const json& obj, const std::string& prefix, const std::vector<std::string>& read,
                 std::vector<std::string>& out) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(read.begin(), read.end(), it.key()) == read.end())
      out.push_back(prefix + it.key());
  }
}

struct Batch {
  int64_t micro, accum, global, world;
};

// train_batch_size = micro x accumulation x world (DeepSpeed checks the same identity): the
// missing ones derived, the product checked against 64 bits and the bound on a batch.
Batch resolve_batch(std::optional<int64_t> micro, std::optional<int64_t> accum,
                    std::optional<int64_t> global, std::optional<int64_t> world,
                    const std::string& file) {
  auto fail = [&](const std::string& msg) { throw UserError(file + ": train_batch_size: " + msg); };
  const std::string world_from =
      world ? "--gpus"
            : "train_batch_size / train_micro_batch_size_per_gpu / gradient_accumulation_steps";
  if (!world && micro && accum && global) {
    if (*global % (*micro * *accum) != 0)
      fail(std::to_string(*global) +
           " is not a multiple of train_micro_batch_size_per_gpu x gradient_accumulation_steps");
    world = *global / (*micro * *accum);
  }
  if (!world)
    throw UserError(
        file +
        ": the number of GPUs is not implied (give --gpus N, or all of train_batch_size, "
        "train_micro_batch_size_per_gpu and gradient_accumulation_steps)");
  if (!limits::within(limits::kClusterGpus, *world))
    throw UserError(file + ": GPUs from " + world_from + ": " +
                    limits::out_of_range(limits::kClusterGpus, std::to_string(*world)));
  if (!micro && global && accum) micro = *global / (*accum * *world);
  if (!micro) micro = 1;
  if (!accum) accum = global ? *global / (*micro * *world) : 1;
  const std::string factors = "train_micro_batch_size_per_gpu (" + std::to_string(*micro) +
                              ") x gradient_accumulation_steps (" + std::to_string(*accum) +
                              ") x GPUs (" + std::to_string(*world) + ")";
  const int64_t product = checked_product({*micro, *accum, *world}, file + ": " + factors);
  if (!global && !limits::within(limits::kBatchSequences, product))
    fail(limits::out_of_range(limits::kBatchSequences, factors + " = " + std::to_string(product)));
  if (!global) global = product;
  if (*accum < 1 || *global != product) fail(std::to_string(*global) + " != " + factors);
  return {*micro, *accum, *global, *world};
}

// The top-level keys this importer reads.
const std::vector<std::string> kRead = {"train_batch_size",
                                        "train_micro_batch_size_per_gpu",
                                        "gradient_accumulation_steps",
                                        "zero_optimization",
                                        "fp16",
                                        "bf16",
                                        "amp",
                                        "optimizer",
                                        "activation_checkpointing"};
// DeepSpeed's keys that change nothing one simulated step does: read past, named in a note (any
// other key is unknown, named in a warning).
const std::vector<std::string> kReadPast = {"scheduler",
                                            "gradient_clipping",
                                            "steps_per_print",
                                            "wall_clock_breakdown",
                                            "zero_allow_untested_optimizer",
                                            "flops_profiler",
                                            "tensorboard",
                                            "wandb",
                                            "csv_monitor",
                                            "comms_logger",
                                            "communication_data_type",
                                            "prescale_gradients",
                                            "gradient_predivide_factor",
                                            "sparse_gradients",
                                            "data_types",
                                            "zero_force_ds_cpu_optimizer",
                                            "dump_state",
                                            "memory_breakdown",
                                            "seed"};

bool listed(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The keys of a config that change nothing simulated: the top-level ones read past, and the
// sub-keys of the sections it reads in part.
std::vector<std::string> unread_config_keys(const json& j) {
  std::vector<std::string> unread;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (listed(kReadPast, it.key())) unread.push_back(it.key());
  }
  if (j.contains("zero_optimization"))
    unread_keys(j["zero_optimization"], "zero_optimization.",
                {"stage", "overlap_comm", "reduce_bucket_size", "offload_optimizer",
                 "offload_param", "cpu_offload", "cpu_offload_params"},
                unread);
  for (const char* key : {"fp16", "bf16", "amp"}) {
    if (j.contains(key)) unread_keys(j[key], std::string(key) + ".", {"enabled"}, unread);
  }
  if (j.contains("optimizer")) unread_keys(j["optimizer"], "optimizer.", {"type"}, unread);
  return unread;
}

// Offloads, in DeepSpeed's current and older spellings: notes that they are not modelled.
void note_offloads(const json& z, ScenarioDraft& d) {
  const std::string why =
      ": offload not modelled (the simulation keeps these tensors in GPU memory and does not "
      "count the host transfers)";
  for (const char* key : {"offload_optimizer", "offload_param"}) {
    if (z.contains(key) && z[key].is_object() && z[key].contains("device") &&
        z[key]["device"] != "none")
      d.notes.push_back(std::string("zero_optimization.") + key + ".device " +
                        z[key]["device"].dump() + why);
  }
  // Still accepted by DeepSpeed's config reader.
  for (const auto& [key, now] :
       {std::pair<const char*, const char*>{"cpu_offload", "offload_optimizer"},
        {"cpu_offload_params", "offload_param"}}) {
    if (z.contains(key) && z[key] == true)
      d.notes.push_back(std::string("zero_optimization.") + key + " true (the older form of " +
                        now + ".device \"cpu\")" + why);
  }
}

// Reads a DeepSpeed config's values, with errors that name the file and the key; notes and
// warnings go to the draft.
class DeepSpeedReader {
 public:
  DeepSpeedReader(const json& j, const std::string& file, ScenarioDraft& d)
      : j_(j), file_(file), d_(d) {}
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw UserError(file_ + ": " + key + ": " + msg);
  }
  // An integer in [lo, hi], absent, or "auto" (filled in by the Hugging Face Trainer): nullopt.
  // JSON writes an integer in any number form (5e7, 5.0E7): one that is integral is read.
  std::optional<int64_t> integer(const json& obj, const std::string& key, const std::string& path,
                                 const limits::IntegerBound& b) const {
    if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
    const json& v = obj[key];
    if (v.is_string() && v.get<std::string>() == "auto") {
      d_.notes.push_back(
          path + " is \"auto\" (the Hugging Face Trainer fills it in); derived or defaulted here");
      return std::nullopt;
    }
    const auto x = json_integer(v);
    if (!whole_number(v))
      fail(path, "expected an integer from " + std::to_string(b.lo) + " to " +
                     std::to_string(b.hi) + " or \"auto\", got " + v.dump());
    if (!x || !limits::within(b, *x)) fail(path, limits::out_of_range(b, v.dump()));
    return x;
  }
  std::optional<int64_t> integer(const std::string& key, const limits::IntegerBound& b) const {
    return integer(j_, key, key, b);
  }
  bool enabled(const std::string& key) const {
    if (!j_.contains(key) || !j_[key].is_object() || !j_[key].contains("enabled")) return false;
    const json& v = j_[key]["enabled"];
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_string() && v.get<std::string>() == "auto") {
      d_.notes.push_back(key + ".enabled is \"auto\"; taken as false");
      return false;
    }
    fail(key + ".enabled", "expected true, false or \"auto\", got " + v.dump());
  }
  const json& config() const { return j_; }
  ScenarioDraft& draft() const { return d_; }

 private:
  const json& j_;
  const std::string& file_;
  ScenarioDraft& d_;
};

// The model, which a DeepSpeed config does not describe: --hf CONFIG.json or --model PRESET.
model::ModelSpec model_of(const ImportOptions& o, const std::string& file, ScenarioDraft& d) {
  if (!o.hf_config.empty()) {
    d.model_hf_config = o.hf_config;
    const HfModel hf = load_hf_config(o.hf_config);
    for (const auto& n : hf.notes) d.notes.push_back(o.hf_config + ": " + n);
    return hf.spec;
  }
  if (!o.model_preset.empty()) {
    d.model_preset = o.model_preset;
    return model::find_model_preset(o.model_preset);
  }
  throw UserError(file +
                  ": a DeepSpeed config does not describe the model; give --model PRESET or --hf "
                  "CONFIG.json");
}

// fp32 unless fp16, bf16 (or its older "bfloat16") or amp is enabled.
std::string precision_of(const DeepSpeedReader& r) {
  const json& j = r.config();
  const bool fp16 = r.enabled("fp16"),
             bf16 = r.enabled("bf16") ||
                    (j.contains("bf16") && j["bf16"].is_object() && r.enabled("bfloat16"));
  if (fp16 && bf16) r.fail("fp16", "fp16 and bf16 are both enabled; DeepSpeed accepts one");
  std::string precision = "fp32";
  if (fp16) precision = "mixed_fp16";
  if (bf16) precision = "mixed_bf16";
  if (r.enabled("amp")) precision = "amp_fp16";
  return precision;
}

// zero_optimization: its stage (0 without the block), the overlap and the reduce bucket.
int read_zero(const DeepSpeedReader& r, int grad_bytes) {
  const json& j = r.config();
  ScenarioDraft& d = r.draft();
  if (!j.contains("zero_optimization")) return 0;
  const json& z = j["zero_optimization"];
  if (!z.is_object()) r.fail("zero_optimization", "expected an object");
  const int stage = static_cast<int>(
      r.integer(z, "stage", "zero_optimization.stage", {0, 3, "ZeRO's stages are 0 to 3"})
          .value_or(0));
  note_offloads(z, d);
  if (z.contains("overlap_comm") && z["overlap_comm"] == true)
    d.training.emplace_back("overlap_grad_reduce", "true");
  if (auto b = r.integer(z, "reduce_bucket_size", "zero_optimization.reduce_bucket_size",
                         limits::kBucketElements)) {
    d.layout.emplace_back("bucket_size", std::to_string(*b * grad_bytes) + "B");
    d.notes.push_back("reduce_bucket_size " + std::to_string(*b) + " elements x " +
                      std::to_string(grad_bytes) + " bytes per gradient = layout.bucket_size");
  }
  return stage;
}

// Notes for what the config sets that one step does not show: checkpointing the model code
// requests, and an optimizer other than Adam.
void note_training_settings(const json& j, ScenarioDraft& d) {
  if (j.contains("activation_checkpointing"))
    d.notes.push_back(
        "activation_checkpointing configures checkpointing the model code requests; "
        "training.recompute left at none (set it if the model checkpoints)");
  if (j.contains("optimizer") && j["optimizer"].is_object() && j["optimizer"].contains("type")) {
    std::string type =
        j["optimizer"]["type"].is_string() ? j["optimizer"]["type"].get<std::string>() : "";
    std::string lower = type;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower != "adam" && lower != "adamw")
      d.notes.push_back("optimizer " + type + ": simulated as AdamW");
  }
}

}  // namespace

ScenarioDraft import_deepspeed(const std::string& text, const std::string& file,
                               const ImportOptions& o) {
  const json j = parse_json(text, file);
  if (!j.is_object()) throw UserError(file + ": expected a JSON object (a DeepSpeed config)");
  ScenarioDraft d;
  const DeepSpeedReader r(j, file, d);
  std::vector<std::string> unknown;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!listed(kRead, it.key()) && !listed(kReadPast, it.key())) unknown.push_back(it.key());
  }
  if (!unknown.empty()) d.warnings.push_back("unknown keys, ignored: " + join(unknown));
  const model::ModelSpec m = model_of(o, file, d);

  // Batch: train_batch_size = micro x accumulation x world (DeepSpeed checks the same identity).
  auto micro = r.integer("train_micro_batch_size_per_gpu", limits::kBatchSequences);
  auto accum = r.integer("gradient_accumulation_steps", limits::kAccumulationSteps);
  auto global = r.integer("train_batch_size", limits::kBatchSequences);
  const Batch batch = resolve_batch(micro, accum, global,
                                    o.gpus ? std::optional<int64_t>(*o.gpus) : std::nullopt, file);

  const std::string precision = precision_of(r);
  const int stage = read_zero(r, precision == "fp32" ? 4 : 2);
  note_training_settings(j, d);

  d.stack = "deepspeed";  // DeepSpeed over an eager model (models/software_stack.cpp)
  d.cluster_preset = o.cluster;
  d.nodes = static_cast<int>((batch.world + o.gpus_per_node - 1) / o.gpus_per_node);
  d.layout.insert(d.layout.begin(),
                  {{"tp", "1"},
                   {"pp", "1"},
                   {"dp", std::to_string(batch.world)},
                   {"data_parallel", stage == 0 ? "ddp" : "zero" + std::to_string(stage)}});
  int64_t seq = o.seq_len.value_or(std::min<int64_t>(m.max_seq, 4096));
  if (!o.seq_len)
    d.notes.push_back("sequence length " + std::to_string(seq) +
                      " assumed (a DeepSpeed config has none; give --seq N)");
  d.training.insert(d.training.begin(), {{"global_batch", std::to_string(batch.global)},
                                         {"micro_batch", std::to_string(batch.micro)},
                                         {"seq_len", std::to_string(seq)},
                                         {"precision", precision}});
  const std::vector<std::string> unread = unread_config_keys(j);
  if (!unread.empty())
    d.notes.push_back("keys read past, not modelled (no change to one step's work): " +
                      join(unread));
  d.name = o.name.empty() ? "deepspeed-import" : o.name;
  d.header.push_back("imported from DeepSpeed config " + file + " by clustersim import deepspeed");
  d.header.push_back(m.name + ": " + with_commas(model::parameter_count(m)) +
                     " parameters; ZeRO stage " + std::to_string(stage) + ", " +
                     std::to_string(batch.accum) + " accumulation steps");
  return d;
}

}  // namespace cs::interop
