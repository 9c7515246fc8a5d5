#include "interop/megatron_args.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "common/checked.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/units.h"
#include "strategies/pipeline_layout.h"

namespace cs::interop {
namespace {

namespace lim = model::limits;
constexpr auto dim = limits::model_dimension;
// --make-vocab-size-divisible-by; the padded vocabulary is then bounded as a model dimension.
constexpr limits::IntegerBound kVocabMultiple{1, 65536,
                                              "a padding multiple: Megatron-LM's default is 128"};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Megatron-LM flags (megatron/training/arguments.py) that this importer reads.
const std::set<std::string>& value_flags() {
  static const std::set<std::string> k = {"--num-layers",
                                          "--hidden-size",
                                          "--num-attention-heads",
                                          "--num-query-groups",
                                          "--ffn-hidden-size",
                                          "--vocab-size",
                                          "--padded-vocab-size",
                                          "--make-vocab-size-divisible-by",
                                          "--seq-length",
                                          "--max-position-embeddings",
                                          "--kv-channels",
                                          "--normalization",
                                          "--position-embedding-type",
                                          "--num-experts",
                                          "--moe-router-topk",
                                          "--moe-ffn-hidden-size",
                                          "--moe-shared-expert-intermediate-size",
                                          "--moe-layer-freq",
                                          "--q-lora-rank",
                                          "--kv-lora-rank",
                                          "--qk-head-dim",
                                          "--qk-pos-emb-head-dim",
                                          "--v-head-dim",
                                          "--mtp-num-layers",
                                          "--tensor-model-parallel-size",
                                          "--ddp-bucket-size",
                                          "--pipeline-model-parallel-size",
                                          "--context-parallel-size",
                                          "--cp-comm-type",
                                          "--hierarchical-context-parallel-sizes",
                                          "--data-parallel-sharding-strategy",
                                          "--expert-model-parallel-size",
                                          "--expert-tensor-parallel-size",
                                          "--num-layers-per-virtual-pipeline-stage",
                                          "--num-virtual-stages-per-pipeline-rank",
                                          "--decoder-first-pipeline-num-layers",
                                          "--decoder-last-pipeline-num-layers",
                                          "--pipeline-model-parallel-layout",
                                          "--micro-batch-size",
                                          "--global-batch-size",
                                          "--fp8-format",
                                          "--recompute-granularity",
                                          "--recompute-method",
                                          "--recompute-num-layers",
                                          "--attention-backend",
                                          "--tokenizer-type",
                                          "--tokenizer-model",
                                          "--vocab-file",
                                          "--merge-file",
                                          "--hidden-dropout",
                                          "--attention-dropout",
                                          "--nproc-per-node",
                                          "--nnodes",
                                          "--moe-token-dispatcher-type",
                                          "--moe-expert-capacity-factor",
                                          "--exp-avg-dtype",
                                          "--exp-avg-sq-dtype"};
  return k;
}
const std::set<std::string>& bool_flags() {
  static const std::set<std::string> k = {"--group-query-attention",
                                          "--swiglu",
                                          "--untie-embeddings-and-output-weights",
                                          "--disable-bias-linear",
                                          "--add-qkv-bias",
                                          "--add-bias-linear",
                                          "--multi-latent-attention",
                                          "--qk-layernorm",
                                          "--sequence-parallel",
                                          "--use-distributed-optimizer",
                                          "--overlap-grad-reduce",
                                          "--overlap-param-gather",
                                          "--tp-comm-overlap",
                                          "--no-overlap-p2p-communication",
                                          "--recompute-activations",
                                          "--bf16",
                                          "--fp16",
                                          "--use-flash-attn",
                                          "--use-rotary-position-embeddings",
                                          "--moe-grouped-gemm",
                                          "--use-torch-fsdp2",
                                          "--use-megatron-fsdp",
                                          "--moe-pad-expert-input-to-capacity",
                                          "--grad-reduce-in-bf16",
                                          "--use-precision-aware-optimizer",
                                          "--account-for-embedding-in-pipeline-split",
                                          "--account-for-loss-in-pipeline-split"};
  return k;
}
// Flags that do not change one step's work: read past without a warning.
const std::set<std::string>& ignored_value_flags() {
  static const std::set<std::string> k = {"--lr",
                                          "--min-lr",
                                          "--lr-decay-style",
                                          "--lr-decay-iters",
                                          "--lr-decay-samples",
                                          "--lr-warmup-iters",
                                          "--lr-warmup-fraction",
                                          "--lr-warmup-samples",
                                          "--train-iters",
                                          "--train-samples",
                                          "--weight-decay",
                                          "--clip-grad",
                                          "--adam-beta1",
                                          "--adam-beta2",
                                          "--adam-eps",
                                          "--init-method-std",
                                          "--data-path",
                                          "--train-data-path",
                                          "--valid-data-path",
                                          "--test-data-path",
                                          "--split",
                                          "--save",
                                          "--load",
                                          "--save-interval",
                                          "--eval-interval",
                                          "--eval-iters",
                                          "--log-interval",
                                          "--tensorboard-dir",
                                          "--wandb-project",
                                          "--wandb-exp-name",
                                          "--wandb-save-dir",
                                          "--seed",
                                          "--distributed-backend",
                                          "--rotary-base",
                                          "--rotary-percent",
                                          "--norm-epsilon",
                                          "--exit-duration-in-mins",
                                          "--moe-router-load-balancing-type",
                                          "--moe-aux-loss-coeff",
                                          "--moe-router-score-function",
                                          "--moe-router-num-groups",
                                          "--moe-router-group-topk",
                                          "--moe-router-topk-scaling-factor",
                                          "--moe-router-bias-update-rate",
                                          "--moe-z-loss-coeff",
                                          "--transformer-impl",
                                          "--ckpt-format",
                                          "--dataloader-type",
                                          "--num-workers",
                                          "--data-cache-path",
                                          "--node-rank",
                                          "--node_rank",
                                          "--master-addr",
                                          "--master-port",
                                          "--rdzv-id",
                                          "--rdzv-backend",
                                          "--rdzv-endpoint",
                                          "--timing-log-level",
                                          "--log-timers-to-tensorboard",
                                          "--distributed-timeout-minutes",
                                          "--main-grads-dtype",
                                          "--main-params-dtype",
                                          "--exp-avg-dtype",
                                          "--exp-avg-sq-dtype",
                                          "--fp8-recipe",
                                          "--fp8-amax-history-len",
                                          "--fp8-amax-compute-algo",
                                          "--loss-scale",
                                          "--initial-loss-scale",
                                          "--min-loss-scale",
                                          "--loss-scale-window",
                                          "--optimizer",
                                          "--manual-gc-interval",
                                          "--eval-samples",
                                          "--tensorboard-log-interval",
                                          "--use-checkpoint-args",
                                          "--pretrained-checkpoint",
                                          "--sequence-parallel-size",
                                          "--data-args-path",
                                          "--mock-data-seq-length"};
  return k;
}
const std::set<std::string>& ignored_bool_flags() {
  static const std::set<std::string> k = {"--use-mcore-models",
                                          "--no-masked-softmax-fusion",
                                          "--no-bias-gelu-fusion",
                                          "--no-bias-swiglu-fusion",
                                          "--no-bias-dropout-fusion",
                                          "--no-rope-fusion",
                                          "--attention-softmax-in-fp32",
                                          "--accumulate-allreduce-grads-in-fp32",
                                          "--log-throughput",
                                          "--no-gradient-accumulation-fusion",
                                          "--no-create-attention-mask-in-dataloader",
                                          "--mock-data",
                                          "--no-load-optim",
                                          "--no-load-rng",
                                          "--log-params-norm",
                                          "--log-num-zeros-in-grad",
                                          "--log-validation-ppl-to-tensorboard",
                                          "--log-memory-to-tensorboard",
                                          "--moe-router-enable-expert-bias",
                                          "--moe-permute-fusion",
                                          "--manual-gc",
                                          "--use-precision-aware-optimizer",
                                          "--cross-entropy-loss-fusion",
                                          "--no-async-tensor-model-parallel-allreduce",
                                          "--apply-layernorm-1p",
                                          "--ckpt-fully-parallel-save",
                                          "--async-save",
                                          "--no-save-optim",
                                          "--no-save-rng",
                                          "--calculate-per-token-loss",
                                          "--standalone"};
  return k;
}

std::string canonical(std::string flag) {
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

struct ParsedArgs {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  std::vector<std::string> unknown;
  std::set<std::string> unmodelled;   // read past: they do not change one step's work
  std::set<std::string> from_script;  // flags whose value is the launch script's
  std::string script;
  bool has(const std::string& f) const { return values.count(f) || flags.count(f); }
  // "launch.sh: megatron argument --num-layers", or without the file for a value given inline.
  std::string argument(const std::string& flag) const {
    return (from_script.count(flag) ? script + ": " : "") + "megatron argument " + flag;
  }
};

ParsedArgs parse(const std::vector<std::string>& args, const ImportOptions& o) {
  ParsedArgs p;
  p.script = o.script;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t at = i;  // the flag's word
    if (a.size() < 3 || a.rfind("--", 0) != 0)
      continue;  // program names, script paths, positional words
    std::string flag = a, value;
    bool inline_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    flag = canonical(flag);
    const bool next_is_value = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
    if (ignored_bool_flags().count(flag) || ignored_value_flags().count(flag))
      p.unmodelled.insert(flag);
    if (bool_flags().count(flag) || ignored_bool_flags().count(flag)) {
      p.flags.insert(flag);
    } else if (value_flags().count(flag) || ignored_value_flags().count(flag)) {
      if (!inline_value) {
        if (!next_is_value) throw UserError("megatron argument " + flag + ": needs a value");
        value = args[++i];
      }
      p.values[flag] = value;  // the last occurrence wins, as with argparse
      if (at < o.script_words)
        p.from_script.insert(flag);
      else
        p.from_script.erase(flag);
    } else {
      p.unknown.push_back(flag);
      if (!inline_value && next_is_value) ++i;
    }
  }
  return p;
}

// The flag's value within `b`; a refusal names the value, the range and why (common/limits.h).
int64_t int_value(const ParsedArgs& p, const std::string& flag, const limits::IntegerBound& b) {
  const std::string& s = p.values.at(flag);
  const auto v = parse_integer(s);
  const std::string range = "from " + std::to_string(b.lo) + " to " + std::to_string(b.hi);
  // Digits past 64 bits are a whole number too large, not "not an integer".
  const bool digits = s.find_first_not_of("0123456789", s[0] == '-' ? 1 : 0) == std::string::npos;
  if (!v && !(digits && s.size() > 1)) {
    if (!s.empty() && s[0] == '$')
      throw UserError(
          p.argument(flag) + ": value '" + s +
          "' is a shell variable this importer could not resolve; expected an integer " + range);
    throw UserError(p.argument(flag) + ": expected an integer " + range + ", got '" + s + "'");
  }
  if (!v || !limits::within(b, *v))
    throw UserError(p.argument(flag) + ": " + limits::out_of_range(b, s));
  return *v;
}

// --cp-comm-type (one value, or a value per layer: the first is read) and, for a2a+p2p,
// --hierarchical-context-parallel-sizes' first size: the all-to-all level.
void context_parallel_comm(const ParsedArgs& p, ScenarioDraft& d) {
  if (!p.values.count("--cp-comm-type")) return;
  const std::string& type = p.values.at("--cp-comm-type");
  if (type == "p2p") return;
  if (type == "allgather") {
    d.notes.push_back(
        "--cp-comm-type allgather is not modelled: imported as the p2p ring (cp_comm: p2p)");
    return;
  }
  if (type != "a2a" && type != "a2a+p2p")
    throw UserError("megatron argument --cp-comm-type: unknown value '" + type +
                    "' (p2p, a2a, allgather, a2a+p2p)");
  d.layout.emplace_back("cp_comm", type);
  if (type == "a2a+p2p") {
    if (!p.values.count("--hierarchical-context-parallel-sizes"))
      throw UserError(
          "megatron argument --cp-comm-type a2a+p2p needs "
          "--hierarchical-context-parallel-sizes");
    d.layout.emplace_back(
        "cp_a2a", std::to_string(int_value(p, "--hierarchical-context-parallel-sizes",
                                           {2, limits::kMaxGpus, limits::kParallelSize.why})));
  }
}

// Megatron-FSDP (--use-megatron-fsdp) by its --data-parallel-sharding-strategy (Megatron's
// default no_shard): optim_grads_params shards like FSDP2's FULL_SHARD (sharded gradient buffer,
// no unsharded gradients across micro-batches), optim_grads as ZeRO-2, optim as ZeRO-1. "" when
// Megatron-FSDP is off.
std::string megatron_fsdp_sharding(const ParsedArgs& p) {
  if (!p.has("--use-megatron-fsdp")) return "";
  const std::string s = p.values.count("--data-parallel-sharding-strategy")
                            ? p.values.at("--data-parallel-sharding-strategy")
                            : "no_shard";
  if (s == "optim_grads_params") return "fsdp_full_shard";
  if (s == "optim_grads") return "zero2";
  if (s == "optim") return "zero1";
  if (s == "no_shard") return "ddp";
  throw UserError("megatron argument --data-parallel-sharding-strategy: unknown value '" + s +
                  "' (no_shard, optim, optim_grads, optim_grads_params)");
}

// The data-parallel flavour: Megatron-FSDP's by its strategy; Megatron-LM's torch FSDP2 path
// shards parameters, gradients and optimizer state (FULL_SHARD); otherwise its DDP, with the
// distributed optimizer sharding the optimizer state (ZeRO-1). FULL_SHARD is FSDP2 either way.
void data_parallel_arguments(const ParsedArgs& p, ScenarioDraft& d) {
  std::string flavour = megatron_fsdp_sharding(p);
  if (flavour.empty()) {
    flavour = p.has("--use-torch-fsdp2")             ? "fsdp_full_shard"
              : p.has("--use-distributed-optimizer") ? "zero1"
                                                     : "ddp";
  }
  d.layout.emplace_back("data_parallel", flavour);
  if (flavour == "fsdp_full_shard")
    d.layout.emplace_back("fsdp_version", "2");  // fully_shard's copies
}
// --pipeline-model-parallel-layout: the split outright. Megatron-LM takes the virtual stages from
// it (its chunks / PP) and refuses it beside the other virtual-stage and split flags
// (arguments.py).
void pipeline_layout_argument(const ParsedArgs& p, int pp, ScenarioDraft& d) {
  const std::string flag = "--pipeline-model-parallel-layout";
  for (const char* other :
       {"--num-virtual-stages-per-pipeline-rank", "--num-layers-per-virtual-pipeline-stage",
        "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"}) {
    if (p.values.count(other))
      throw UserError("megatron argument " + flag + " cannot be given with " + other +
                      " (Megatron-LM refuses both: the layout is the whole split)");
  }
  std::string text = p.values.at(flag);
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
      text.back() == text.front())
    text = text.substr(1, text.size() - 2);
  const strategy::PipelineLayerLayout layout = strategy::parse_pipeline_layout(text);
  const int chunks = static_cast<int>(layout.decoder_layers.size());
  if (chunks % pp != 0)
    throw UserError("megatron argument " + flag + ": its " + std::to_string(chunks) +
                    " model chunks do not divide by --pipeline-model-parallel-size " +
                    std::to_string(pp));
  const int virtual_stages = chunks / pp;
  if (pp > 1) d.layout.emplace_back("schedule", virtual_stages > 1 ? "interleaved" : "1f1b");
  if (virtual_stages > 1) d.layout.emplace_back("virtual_stages", std::to_string(virtual_stages));
  d.layout.emplace_back("pipeline_layout",
                        strategy::format_pipeline_layout(layout.decoder_layers, layout.mtp_layers));
}

int64_t int_or(const ParsedArgs& p, const std::string& flag, int64_t fallback,
               const limits::IntegerBound& b) {
  return p.values.count(flag) ? int_value(p, flag, b) : fallback;
}
std::string choice(const ParsedArgs& p, const std::string& flag, const std::string& fallback,
                   const std::vector<std::string>& valid) {
  if (!p.values.count(flag)) return fallback;
  const std::string& s = p.values.at(flag);
  if (std::find(valid.begin(), valid.end(), s) == valid.end())
    throw UserError("megatron argument " + flag + ": unknown value '" + s +
                    "'; valid values: " + join(valid));
  return s;
}

// A --moe-layer-freq list such as "([0]*3+[1]*58)": terms [a,b,...] or [a,b,...]*n joined by
// '+', read in one pass into a pattern never longer than --num-layers (1 = MoE).
class FreqList {
 public:
  FreqList(const std::string& given, int layers) : given_(given), layers_(layers) {
    for (char c : given) {
      if (c != ' ' && c != '(' && c != ')' && c != '"' && c != '\'') t_ += c;
    }
  }

  std::vector<int> pattern() {
    while (k_ < t_.size()) {
      const std::vector<int> items = term_items();
      const int64_t times = term_times();
      if (static_cast<int64_t>(items.size()) * times >
          static_cast<int64_t>(layers_) - static_cast<int64_t>(pattern_.size()))
        throw too_long();
      for (int64_t r = 0; r < times; ++r)
        pattern_.insert(pattern_.end(), items.begin(), items.end());
      if (k_ < t_.size() && (t_[k_] != '+' || k_ + 1 == t_.size())) throw unreadable();
      if (k_ < t_.size()) ++k_;
    }
    return pattern_;
  }

 private:
  UserError unreadable() const {
    return UserError("megatron argument --moe-layer-freq: cannot read '" + given_.substr(0, 80) +
                     (given_.size() > 80 ? "..." : "") +
                     "'; expected an integer or a list such as ([0]*3+[1]*58)");
  }
  UserError too_long() const {
    return UserError(
        "megatron argument --moe-layer-freq: the list has more entries than "
        "--num-layers (" +
        std::to_string(layers_) + ")");
  }
  // [a,b,...]
  std::vector<int> term_items() {
    if (t_[k_++] != '[') throw unreadable();
    std::vector<int> items;
    for (;;) {
      if (k_ >= t_.size() || (t_[k_] != '0' && t_[k_] != '1')) throw unreadable();
      items.push_back(t_[k_++] - '0');
      if (items.size() > static_cast<size_t>(layers_)) throw too_long();
      const char next = k_ < t_.size() ? t_[k_++] : '\0';
      if (next == ']') return items;
      if (next != ',') throw unreadable();
    }
  }
  // *n, or 1; n saturates at 2^31 (more than any layer count).
  int64_t term_times() {
    if (k_ >= t_.size() || t_[k_] != '*') return 1;
    const size_t digits = ++k_;
    int64_t n = 0;
    for (; k_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[k_])); ++k_)
      n = std::min<int64_t>(n * 10 + (t_[k_] - '0'), int64_t{1} << 31);
    if (k_ == digits) throw unreadable();
    return n;
  }

  const std::string& given_;
  int layers_;
  std::string t_;
  size_t k_ = 0;
  std::vector<int> pattern_;
};

// --moe-layer-freq: an integer N (every N-th layer, from layer 0) or a Python list expression
// (FreqList). Returns the dense layers.
std::vector<int> dense_layers_from_freq(const std::string& s, int layers) {
  std::vector<int> pattern;
  if (const auto n = parse_integer(s)) {
    if (!limits::within(limits::layers_of(1, layers), *n))
      throw UserError("megatron argument --moe-layer-freq: " +
                      limits::out_of_range(limits::layers_of(1, layers), s) +
                      "; or a list such as ([0]*3+[1]*58)");
    for (int l = 0; l < layers; ++l) pattern.push_back(l % *n == 0 ? 1 : 0);
  } else {
    pattern = FreqList(s, layers).pattern();
    if (static_cast<int>(pattern.size()) != layers) {
      throw UserError("megatron argument --moe-layer-freq: the list has " +
                      std::to_string(pattern.size()) + " entries; --num-layers is " +
                      std::to_string(layers));
    }
  }
  std::vector<int> dense;
  for (int l = 0; l < layers; ++l) {
    if (pattern[static_cast<size_t>(l)] == 0) dense.push_back(l);
  }
  return dense;
}

// The vocabulary before Megatron pads it when --vocab-size is absent: the size of a tokenizer
// the arguments name. By --tokenizer-type (megatron/core/tokenizers/utils/build_tokenizer.py):
//   GPT2BPETokenizer 50257: GPT-2's encoder.json, 50,000 merges + 256 byte tokens + <|endoftext|>
//     (Radford et al. 2019; openai-community/gpt2 config.json vocab_size 50257).
//   Llama2Tokenizer 32000: Llama 2's SentencePiece model (Touvron et al. 2023, section 2.1;
//     meta-llama/Llama-2-7b-hf config.json vocab_size 32000); Mixtral 8x7B's is the same size
//     (mistralai/Mixtral-8x7B-v0.1 config.json vocab_size 32000), as Megatron-LM's
//     examples/mixtral script names it.
// By --tokenizer-model, a Hugging Face repository or a folder named after one (any path part):
//   Meta-Llama-3-*, Llama-3.1-*, Llama-3.2-*, Llama-3.3-*: 128256 = 128,000 BPE tokens + 256
//     special tokens (meta-llama/Meta-Llama-3-8B config.json vocab_size 128256);
//   Llama-2-* and Mixtral-8x7B*: 32000; gpt2: 50257 (as above).
// A --merge-file without --tokenizer-type is GPT-2's BPE: it is the only tokenizer that reads one.
struct KnownTokenizer {
  std::string_view name;
  int64_t vocab;
};
constexpr KnownTokenizer kTokenizerTypes[] = {{"GPT2BPETokenizer", 50257},
                                              {"Llama2Tokenizer", 32000}};
constexpr KnownTokenizer kTokenizerModels[] = {{"meta-llama-3-", 128256},
                                               {"llama-3.1-", 128256},
                                               {"llama-3.2-", 128256},
                                               {"llama-3.3-", 128256},
                                               {"llama-2-", 32000},
                                               {"mixtral-8x7b", 32000},
                                               {"gpt2", 50257}};

std::optional<KnownTokenizer> tokenizer_model(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (size_t start = 0; start < lower.size();) {
    const size_t end = std::min(lower.find('/', start), lower.size());
    const std::string_view part = std::string_view(lower).substr(start, end - start);
    for (const auto& t : kTokenizerModels) {
      if (part.substr(0, t.name.size()) == t.name) return t;
    }
    start = end + 1;
  }
  return std::nullopt;
}

int64_t tokenizer_vocabulary(const ParsedArgs& p, ScenarioDraft& d) {
  const std::string type =
      p.values.count("--tokenizer-type") ? p.values.at("--tokenizer-type") : "";
  const std::string model =
      p.values.count("--tokenizer-model") ? p.values.at("--tokenizer-model") : "";
  auto found = [&](std::string_view name, int64_t vocab, const std::string& why) {
    d.notes.push_back("vocabulary of " + std::string(name) + why + ": " + std::to_string(vocab) +
                      " before padding");
    return vocab;
  };
  if (const auto t = tokenizer_model(model))
    return found(model, t->vocab, " (--tokenizer-model; give --vocab-size if it differs)");
  for (const auto& t : kTokenizerTypes) {
    if (t.name == type)
      return found(t.name, t.vocab,
                   t.name == "GPT2BPETokenizer" ? "" : " (give --vocab-size for another model)");
  }
  if (type.empty() && p.values.count("--merge-file"))
    return found("GPT2BPETokenizer", 50257,
                 " (--merge-file without --tokenizer-type: only GPT-2's BPE reads a merge file)");
  std::string named;
  if (!type.empty()) named += " --tokenizer-type " + type;
  if (!model.empty()) named += " --tokenizer-model " + model;
  throw UserError(
      "megatron arguments: no --vocab-size, and" +
      (named.empty() ? std::string(" no tokenizer named")
                     : named + " is not a tokenizer whose size is known") +
      " (known: --tokenizer-type GPT2BPETokenizer or Llama2Tokenizer, --tokenizer-model "
      "Meta-Llama-3-*, Llama-3.x-*, Llama-2-*, Mixtral-8x7B*, gpt2); add --vocab-size N (the "
      "tokenizer's size, padded as Megatron pads it) or --padded-vocab-size N");
}

// The number of GPUs: --gpus, else torchrun's --nnodes x --nproc-per-node, else TP x PP x CP
// (with a note); refused unless TP x PP x CP divides it.
int64_t world_size(const ParsedArgs& p, const ImportOptions& o, int tp, int pp, int cp,
                   ScenarioDraft& d) {
  // Sizes are int64_t: TP, PP and CP are each at most 2^17 GPUs, so their product (up to 2^51)
  // fits, where an int wrapped (to 0 at 4096 x 4096 x 256, then divided by).
  const int64_t model_parallel = int64_t{tp} * pp * cp;
  int64_t world = 0;
  std::string world_from;
  if (p.values.count("--nnodes") && p.values.count("--nproc-per-node")) {
    world = int_value(p, "--nnodes", limits::kNodes) *
            int_value(p, "--nproc-per-node", limits::kGpusPerNode);
    world_from = "torchrun --nnodes x --nproc-per-node";
  }
  if (o.gpus) {
    world = *o.gpus;
    world_from = "--gpus";
  }
  if (world == 0) {
    world = model_parallel;
    world_from = "TP x PP x CP";
    d.notes.push_back(
        "world size unknown (no --gpus, no torchrun --nnodes x --nproc-per-node): data parallel "
        "size 1 assumed");
  }
  constexpr int64_t kMaxWorld = limits::kMaxGpus;  // the scenario reader's bound on GPUs
  const std::string product = "TP " + std::to_string(tp) + " x PP " + std::to_string(pp) +
                              " x CP " + std::to_string(cp) + " = " +
                              std::to_string(model_parallel) + " GPUs";
  if (world < model_parallel) {
    throw UserError("megatron arguments: " + product + ", more than the " + std::to_string(world) +
                    " that " + world_from + " gives" +
                    (world_from == "--gpus" ? "" : " (give --gpus N for the cluster meant)"));
  }
  if (world > kMaxWorld) {
    throw UserError(
        "megatron arguments: " +
        (world_from == "TP x PP x CP" ? product
                                      : std::to_string(world) + " GPUs from " + world_from) +
        ", over the bound of " + std::to_string(kMaxWorld) + " GPUs (" + limits::kMaxGpusWhy + ")");
  }
  if (world % model_parallel != 0) {
    throw UserError("megatron arguments: " + std::to_string(world) +
                    " GPUs do not divide into TP " + std::to_string(tp) + " x PP " +
                    std::to_string(pp) + " x CP " + std::to_string(cp));
  }
  return world;
}

// Megatron-LM keeps and reduces bf16 runs' gradients in fp32 unless --grad-reduce-in-bf16
// (model::gradient_bytes); --accumulate-allreduce-grads-in-fp32 states that default.
void read_gradient_reduction(const ParsedArgs& p, ScenarioDraft& d) {
  if (p.has("--grad-reduce-in-bf16")) d.training.emplace_back("grad_reduce_in_bf16", "true");
  if (p.has("--accumulate-allreduce-grads-in-fp32") && p.has("--fp16"))
    d.notes.push_back(
        "--accumulate-allreduce-grads-in-fp32 under --fp16: simulated with fp16 gradients");
}

// The precision-aware optimizer's AdamW moments: bf16 where both are (training.optimizer_moments);
// fp32 (Megatron's default) otherwise, with a note for a mix or another dtype.
void read_optimizer_moments(const ParsedArgs& p, ScenarioDraft& d) {
  if (!p.has("--use-precision-aware-optimizer")) {
    if (p.values.count("--exp-avg-dtype") || p.values.count("--exp-avg-sq-dtype"))
      d.notes.push_back(
          "--exp-avg-dtype / --exp-avg-sq-dtype need --use-precision-aware-optimizer (Megatron-LM "
          "keeps the moments in fp32 without it)");
    return;
  }
  const std::vector<std::string> dtypes = {"fp32", "fp16", "bf16", "fp8"};
  const std::string m = choice(p, "--exp-avg-dtype", "fp32", dtypes);
  const std::string v = choice(p, "--exp-avg-sq-dtype", "fp32", dtypes);
  if (m == "bf16" && v == "bf16")
    d.training.emplace_back("optimizer_moments", "bf16");
  else if (m != "fp32" || v != "fp32")
    d.notes.push_back("--exp-avg-dtype " + m + " --exp-avg-sq-dtype " + v +
                      ": simulated with fp32 moments (only both in bf16 is modelled)");
}

}  // namespace

std::vector<std::string> launch_script_arguments(const std::string& text, const std::string& file) {
  return read_launch_script(text, file).words;
}

ScenarioDraft import_megatron(const LaunchScript& script,
                              const std::vector<std::string>& inline_args,
                              const ImportOptions& options) {
  std::vector<std::string> args = script.words;
  args.insert(args.end(), inline_args.begin(), inline_args.end());
  ScenarioDraft d = import_megatron(args, options);
  d.notes.insert(d.notes.begin(), script.notes.begin(), script.notes.end());
  return d;
}

namespace {

// The architecture flags: the family (SwiGLU or GELU, the norm, the positions, the biases), with
// a note where Megatron's arguments differ from what the family models.
void read_family(const ParsedArgs& p, model::ModelSpec& m, ScenarioDraft& d) {
  const bool swiglu = p.has("--swiglu");
  const std::string norm = choice(p, "--normalization", "LayerNorm", {"LayerNorm", "RMSNorm"});
  const std::string pos = p.has("--use-rotary-position-embeddings")
                              ? "rope"
                              : choice(p, "--position-embedding-type", "learned_absolute",
                                       {"learned_absolute", "rope", "none", "mrope"});
  const bool bias = !p.has("--disable-bias-linear");
  m.family = swiglu ? model::Family::llama
                    : (pos == "rope" ? model::Family::gpt_neox : model::Family::gpt);
  if (m.family == model::Family::llama && (bias || norm != "RMSNorm" || pos != "rope")) {
    d.notes.push_back(
        "SwiGLU models are modelled as family llama (RMSNorm, rotary, no linear biases); these "
        "arguments differ:" +
        std::string(bias ? " linear biases (no --disable-bias-linear)" : "") +
        (norm != "RMSNorm" ? " --normalization " + norm : "") +
        (pos != "rope" ? " --position-embedding-type " + pos : ""));
  }
  if (m.family != model::Family::llama && (!bias || norm != "LayerNorm")) {
    d.notes.push_back("GELU models are modelled as family " +
                      std::string(model::to_string(m.family)) +
                      " (LayerNorm and biases); these arguments differ:" +
                      std::string(!bias ? " --disable-bias-linear" : "") +
                      (norm != "LayerNorm" ? " --normalization " + norm : ""));
  }
  if (m.family == model::Family::gpt_neox)
    d.notes.push_back(
        "rotary GELU model: family gpt_neox (its parallel residual is modelled; Megatron's is "
        "sequential; same parameters)");
  m.qkv_bias = bias || p.has("--add-qkv-bias");
  if (m.family == model::Family::llama && bias) m.qkv_bias = false;
}

void read_attention(const ParsedArgs& p, model::ModelSpec& m, ScenarioDraft& d) {
  const bool gqa = p.has("--group-query-attention");
  m.kv_heads =
      gqa ? static_cast<int>(int_or(p, "--num-query-groups", 1, limits::query_groups(m.heads)))
          : m.heads;
  if (!gqa && p.values.count("--num-query-groups"))
    d.notes.push_back("--num-query-groups without --group-query-attention is ignored by Megatron");
  if (m.heads % m.kv_heads != 0)
    throw UserError("megatron argument --num-query-groups: " + std::to_string(m.kv_heads) +
                    " must divide --num-attention-heads (" + std::to_string(m.heads) + ")");
}

void read_vocabulary(const ParsedArgs& p, int tp, model::ModelSpec& m, ScenarioDraft& d) {
  // Vocabulary: --padded-vocab-size as given, else --vocab-size (or the named tokenizer's size)
  // padded to a multiple of --make-vocab-size-divisible-by (128) x TP, as Megatron pads it.
  if (p.values.count("--padded-vocab-size")) {
    m.vocab = int_value(p, "--padded-vocab-size", dim(1, lim::max_vocab));
  } else {
    const int64_t v = p.values.count("--vocab-size")
                          ? int_value(p, "--vocab-size", dim(1, lim::max_vocab))
                          : tokenizer_vocabulary(p, d);
    const int64_t multiple = int_or(p, "--make-vocab-size-divisible-by", 128, kVocabMultiple) * tp;
    m.vocab = (v + multiple - 1) / multiple * multiple;
    if (m.vocab != v)
      d.notes.push_back("vocabulary padded from " + std::to_string(v) + " to " +
                        std::to_string(m.vocab) + " (multiple of " + std::to_string(multiple) +
                        ")");
  }
}

void read_dropout(const ParsedArgs& p, model::ModelSpec& m) {
  m.dropout = 0.0;
  if (p.values.count("--hidden-dropout")) {
    const std::string& s = p.values.at("--hidden-dropout");
    try {
      size_t used = 0;
      m.dropout = std::stod(s, &used);
      if (used != s.size() || m.dropout < 0 || m.dropout >= 1) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      throw UserError(p.argument("--hidden-dropout") + ": expected a number in [0, 1) (" +
                      limits::kDropoutWhy + "), got '" + s + "'");
    }
  } else if (m.family == model::Family::gpt) {
    m.dropout = 0.1;  // Megatron's default --hidden-dropout
  }
}

void read_moe(const ParsedArgs& p, model::ModelSpec& m, ScenarioDraft& d) {
  if (p.values.count("--num-experts")) {
    if (m.family != model::Family::llama)
      throw UserError(
          "megatron argument --num-experts: MoE layers are modelled with SwiGLU experts; add "
          "--swiglu");
    m.moe.experts = static_cast<int>(int_value(p, "--num-experts", dim(1, lim::max_experts)));
    m.moe.top_k =
        static_cast<int>(int_or(p, "--moe-router-topk", 2, limits::routed_experts(m.moe.experts)));
    m.moe.expert_ffn_hidden =
        int_or(p, "--moe-ffn-hidden-size", m.ffn_hidden, dim(1, lim::max_ffn));
    if (p.values.count("--moe-shared-expert-intermediate-size")) {
      m.moe.shared_experts = 1;  // Megatron sizes all shared experts as one MLP
      m.moe.shared_ffn_hidden =
          int_value(p, "--moe-shared-expert-intermediate-size", dim(1, lim::max_ffn));
    }
    if (p.values.count("--moe-layer-freq"))
      m.moe.dense_layers = dense_layers_from_freq(p.values.at("--moe-layer-freq"), m.layers);
    m.moe.expert_score_bias = p.has("--moe-router-enable-expert-bias");
    const std::string dispatcher = choice(p, "--moe-token-dispatcher-type", "allgather",
                                          {"allgather", "alltoall", "flex", "alltoall_seq"});
    // Megatron's default dispatcher is allgather; the scenario's is alltoall, so it is written out.
    if (dispatcher == "alltoall" || dispatcher == "allgather")
      d.moe.emplace_back("dispatcher", dispatcher);
    else
      d.notes.push_back("--moe-token-dispatcher-type " + dispatcher +
                        ": not simulated; the draft keeps the all-to-all dispatch");
    if (p.values.count("--moe-expert-capacity-factor")) {
      const std::string& s = p.values.at("--moe-expert-capacity-factor");
      double cf = 0;
      try {
        size_t used = 0;
        cf = std::stod(s, &used);
        if (used != s.size() || !(cf > 0 && cf <= 16)) throw std::invalid_argument(s);
      } catch (const std::exception&) {
        throw UserError(p.argument("--moe-expert-capacity-factor") +
                        ": expected a number in (0, 16] (" + limits::kCapacityFactorWhy +
                        "), got '" + s + "'");
      }
      d.moe.emplace_back("capacity_factor", s);
    }
    if (p.has("--moe-pad-expert-input-to-capacity")) {
      if (!p.values.count("--moe-expert-capacity-factor")) {
        throw UserError(
            "megatron argument --moe-pad-expert-input-to-capacity: needs "
            "--moe-expert-capacity-factor");
      }
      d.moe.emplace_back("pad_to_capacity", "true");
    }
  }
}

void read_mla(const ParsedArgs& p, model::ModelSpec& m) {
  if (p.has("--multi-latent-attention")) {
    m.mla.q_lora_rank = int_or(p, "--q-lora-rank", 0, dim(0, lim::max_rank));
    m.mla.kv_lora_rank = int_or(p, "--kv-lora-rank", 32, dim(1, lim::max_rank));
    m.mla.qk_nope_head_dim = int_or(p, "--qk-head-dim", 128, dim(1, lim::max_head_dim));
    m.mla.qk_rope_head_dim = int_or(p, "--qk-pos-emb-head-dim", 64, dim(0, lim::max_head_dim));
    m.mla.v_head_dim = int_or(p, "--v-head-dim", 128, dim(1, lim::max_head_dim));
  }
}

model::ModelSpec read_model(const ParsedArgs& p, const ImportOptions& o, int64_t seq, int tp,
                            ScenarioDraft& d) {
  model::ModelSpec m;
  m.name = o.name.empty() ? "megatron-model" : o.name;
  m.layers = static_cast<int>(int_value(p, "--num-layers", dim(1, lim::max_layers)));
  m.hidden = int_value(p, "--hidden-size", dim(1, lim::max_hidden));
  m.heads = static_cast<int>(int_value(p, "--num-attention-heads", dim(1, lim::max_heads)));
  read_family(p, m, d);
  read_attention(p, m, d);
  // Megatron's default: 4h, or with SwiGLU int(4h * 2/3 / 64) * 64 (arguments.py).
  const int64_t ffn_default =
      m.family == model::Family::llama ? (4 * m.hidden * 2 / 3) / 64 * 64 : 4 * m.hidden;
  m.ffn_hidden = int_or(p, "--ffn-hidden-size", ffn_default, dim(1, lim::max_ffn));
  if (p.values.count("--kv-channels")) {
    const int64_t kv_channels = int_value(p, "--kv-channels", dim(1, lim::max_head_dim));
    if (kv_channels * m.heads != m.hidden) m.head_dim_explicit = kv_channels;
  }
  read_vocabulary(p, tp, m, d);
  m.max_seq = int_or(p, "--max-position-embeddings", seq, dim(1, lim::max_seq));
  read_dropout(p, m);
  m.tie_embeddings = !p.has("--untie-embeddings-and-output-weights");
  m.qk_norm = p.has("--qk-layernorm");
  read_moe(p, m, d);
  read_mla(p, m);
  m.mtp_depth = static_cast<int>(int_or(p, "--mtp-num-layers", 0, dim(0, lim::max_mtp)));
  try {
    model::validate(m);
  } catch (const UserError& e) {
    throw UserError(std::string("megatron arguments: ") + e.what());
  }
  return m;
}

// The pipeline's schedule and split: a layout string, or the virtual stages and split flags.
void read_pipeline(const ParsedArgs& p, const model::ModelSpec& m, int pp, ScenarioDraft& d) {
  if (p.values.count("--pipeline-model-parallel-layout")) {
    pipeline_layout_argument(p, pp, d);
  } else if (pp > 1) {
    int virtual_stages =
        static_cast<int>(int_or(p, "--num-virtual-stages-per-pipeline-rank", 1,
                                {1, lim::max_layers, "a model chunk holds one layer or more"}));
    if (p.values.count("--num-layers-per-virtual-pipeline-stage")) {
      const int per = static_cast<int>(
          int_value(p, "--num-layers-per-virtual-pipeline-stage", limits::layers_of(1, m.layers)));
      if (m.layers % (pp * per) != 0)
        throw UserError("megatron argument --num-layers-per-virtual-pipeline-stage: " +
                        std::to_string(per) + " x PP " + std::to_string(pp) +
                        " must divide --num-layers (" + std::to_string(m.layers) + ")");
      virtual_stages = m.layers / (pp * per);
    }
    d.layout.emplace_back("schedule", virtual_stages > 1 ? "interleaved" : "1f1b");
    if (virtual_stages > 1) d.layout.emplace_back("virtual_stages", std::to_string(virtual_stages));
    if (p.values.count("--decoder-first-pipeline-num-layers"))
      d.layout.emplace_back("first_stage_layers",
                            std::to_string(int_value(p, "--decoder-first-pipeline-num-layers",
                                                     limits::layers_of(0, m.layers))));
    if (p.values.count("--decoder-last-pipeline-num-layers"))
      d.layout.emplace_back("last_stage_layers",
                            std::to_string(int_value(p, "--decoder-last-pipeline-num-layers",
                                                     limits::layers_of(0, m.layers))));
    if (p.has("--account-for-embedding-in-pipeline-split"))
      d.layout.emplace_back("account_for_embedding_in_pipeline_split", "true");
    if (p.has("--account-for-loss-in-pipeline-split"))
      d.layout.emplace_back("account_for_loss_in_pipeline_split", "true");
  }
}

// The parallel layout and the cluster it fills; returns DP.
int read_layout(const ParsedArgs& p, const ImportOptions& o, const model::ModelSpec& m, int tp,
                ScenarioDraft& d) {
  const int pp =
      static_cast<int>(int_or(p, "--pipeline-model-parallel-size", 1, limits::kParallelSize));
  const int cp = static_cast<int>(int_or(p, "--context-parallel-size", 1, limits::kParallelSize));
  const int ep =
      static_cast<int>(int_or(p, "--expert-model-parallel-size", 1, limits::kParallelSize));
  const int64_t world = world_size(p, o, tp, pp, cp, d);
  const int dp = static_cast<int>(world / (int64_t{tp} * pp * cp));
  // Megatron defaults --expert-tensor-parallel-size to TP (arguments.py); the expert grid splits
  // each stage's TP x CP x DP ranks as ETP x EP x expert-DP.
  const int etp =
      static_cast<int>(int_or(p, "--expert-tensor-parallel-size", tp, limits::kParallelSize));
  const int64_t expert_grid = int64_t{tp} * cp * dp;
  if (expert_grid % (int64_t{ep} * etp) != 0) {
    throw UserError("megatron argument --expert-model-parallel-size: EP " + std::to_string(ep) +
                    " x ETP " + std::to_string(etp) + " must divide TP x CP x DP (" +
                    std::to_string(expert_grid) + ")");
  }
  if (ep > 1 && !m.moe.enabled())
    throw UserError("megatron argument --expert-model-parallel-size: " + std::to_string(ep) +
                    " needs --num-experts");
  if (m.moe.enabled() && m.moe.experts % ep != 0)
    throw UserError("megatron argument --expert-model-parallel-size: " + std::to_string(ep) +
                    " must divide --num-experts (" + std::to_string(m.moe.experts) + ")");
  const int per_node =
      p.values.count("--nproc-per-node")
          ? static_cast<int>(int_value(p, "--nproc-per-node", limits::kGpusPerNode))
          : o.gpus_per_node;
  d.cluster_preset = o.cluster;
  d.nodes = static_cast<int>((world + per_node - 1) / per_node);
  if (world % per_node != 0)
    d.notes.push_back(std::to_string(world) + " GPUs fill " + std::to_string(d.nodes) +
                      " nodes of " + std::to_string(per_node) + " only partly");
  d.layout.emplace_back("tp", std::to_string(tp));
  d.layout.emplace_back("pp", std::to_string(pp));
  if (cp > 1) d.layout.emplace_back("cp", std::to_string(cp));
  d.layout.emplace_back("dp", std::to_string(dp));
  if (ep > 1) d.layout.emplace_back("ep", std::to_string(ep));
  if (m.moe.enabled() && etp > 1) d.layout.emplace_back("etp", std::to_string(etp));
  if (cp > 1) context_parallel_comm(p, d);
  data_parallel_arguments(p, d);
  if (p.values.count("--ddp-bucket-size")) {
    // Megatron counts a DDP bucket in parameters; its gradient buffer holds them in fp32 (4 B).
    const int64_t params = int_value(p, "--ddp-bucket-size", limits::kBucketElements);
    d.layout.emplace_back("bucket_size", std::to_string(params * 4) + "B");
  }
  if (p.has("--sequence-parallel")) {
    if (tp == 1)
      d.notes.push_back("--sequence-parallel with TP 1 has no effect; left out");
    else
      d.layout.emplace_back("sequence_parallel", "true");
  }
  read_pipeline(p, m, pp, d);
  return dp;
}

void read_training(const ParsedArgs& p, int64_t seq, int dp, ScenarioDraft& d) {
  const int64_t micro = int_or(p, "--micro-batch-size", 1, limits::kBatchSequences);
  const int64_t global = int_or(p, "--global-batch-size", micro * dp, limits::kBatchSequences);
  if (!limits::within(limits::kBatchSequences, global)) {  // the default, micro-batch x DP
    throw UserError("megatron arguments: the global batch (no --global-batch-size): " +
                    limits::out_of_range(limits::kBatchSequences,
                                         "--micro-batch-size x DP = " + std::to_string(micro) +
                                             " x " + std::to_string(dp) + " = " +
                                             std::to_string(global)));
  }
  // micro (at most 2^24) x DP (at most 2^17) fits an int64_t.
  if (global % (micro * dp) != 0) {
    throw UserError("megatron argument --global-batch-size: " + std::to_string(global) +
                    " is not a multiple of --micro-batch-size x DP (" + std::to_string(micro) +
                    " x " + std::to_string(dp) + ")");
  }
  d.training.emplace_back("global_batch", std::to_string(global));
  d.training.emplace_back("micro_batch", std::to_string(micro));
  d.training.emplace_back("seq_len", std::to_string(seq));
  std::string precision = "fp32";
  if (p.has("--bf16"))
    precision = "mixed_bf16";
  else if (p.has("--fp16"))
    precision = "mixed_fp16";
  if (p.has("--bf16") && p.has("--fp16"))
    throw UserError("megatron arguments: --bf16 and --fp16 are exclusive");
  if (p.values.count("--fp8-format")) {
    choice(p, "--fp8-format", "", {"e4m3", "hybrid"});
    precision = "fp8";
    d.notes.push_back("--fp8-format " + p.values.at("--fp8-format") +
                      ": simulated as training.precision fp8 (Transformer Engine's recipe; e4m3 "
                      "and hybrid alike)");
  }
  d.training.emplace_back("precision", precision);
  const std::string attention =
      choice(p, "--attention-backend", "auto", {"auto", "flash", "fused", "unfused", "local"});
  d.training.emplace_back("attention",
                          attention == "unfused" || attention == "local" ? "eager" : "fused");
  std::string recompute = p.has("--recompute-activations") ? "selective" : "none";
  recompute = choice(p, "--recompute-granularity", recompute, {"full", "selective"});
  if (recompute == "full" &&
      (p.values.count("--recompute-method") || p.values.count("--recompute-num-layers"))) {
    d.notes.push_back(
        "--recompute-method/--recompute-num-layers: every layer is recomputed in the simulation");
  }
  d.training.emplace_back("recompute", recompute);
  // The megatron_core stack turns the overlaps on (NVIDIA's published configurations);
  // Megatron-LM's arguments default to off, so each is written as the arguments set it.
  d.stack = "megatron_core";
  d.training.emplace_back("tp_comm_overlap", p.has("--tp-comm-overlap") ? "true" : "false");
  d.training.emplace_back("overlap_param_gather",
                          p.has("--overlap-param-gather") ? "true" : "false");
  // 1F1B's exchanges block whatever it says (strategy::pipeline_p2p_blocks).
  if (p.has("--no-overlap-p2p-communication")) d.training.emplace_back("overlap_p2p_comm", "false");
  read_gradient_reduction(p, d);
  read_optimizer_moments(p, d);
  if (p.has("--overlap-grad-reduce"))
    d.training.emplace_back("overlap_grad_reduce", "true");
  else
    d.notes.push_back(
        "no --overlap-grad-reduce: Megatron-LM then reduces gradients after the backward pass; "
        "simulated with buckets reducing during it");
}

// The draft's name, header and what was not read.
void describe_draft(const ParsedArgs& p, const ImportOptions& o, const model::ModelSpec& m,
                    ScenarioDraft& d) {
  d.name = o.name.empty() ? "megatron-import" : o.name;
  d.header.push_back("imported from Megatron-LM arguments by clustersim import megatron");
  d.header.push_back(
      m.name + ": " + with_commas(model::parameter_count(m)) + " parameters" +
      (m.moe.enabled() ? ", " + with_commas(model::active_parameter_count(m)) + " active per token"
                       : ""));
  if (!p.unknown.empty()) {
    std::vector<std::string> u(p.unknown.begin(), p.unknown.end());
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    d.warnings.push_back("unknown flags, ignored: " + join(u));
  }
  if (!p.unmodelled.empty()) {
    d.notes.push_back("flags read past, not modelled (no change to one step's work): " +
                      join({p.unmodelled.begin(), p.unmodelled.end()}));
  }
}

}  // namespace

ScenarioDraft import_megatron(const std::vector<std::string>& args, const ImportOptions& o) {
  const ParsedArgs p = parse(args, o);
  ScenarioDraft d;
  for (const char* flag :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length"}) {
    if (!p.values.count(flag))
      throw UserError(std::string("megatron arguments: ") + flag +
                      " is missing (it has no default)");
  }
  const int64_t seq = int_value(p, "--seq-length", dim(1, lim::max_seq));
  const int tp =
      static_cast<int>(int_or(p, "--tensor-model-parallel-size", 1, limits::kParallelSize));
  const model::ModelSpec m = read_model(p, o, seq, tp, d);
  d.model = m;
  const int dp = read_layout(p, o, m, tp, d);
  read_training(p, seq, dp, d);
  describe_draft(p, o, m, d);
  return d;
}

}  // namespace cs::interop
