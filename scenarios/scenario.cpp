#include "scenarios/scenario.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/limits.h"
#include "common/text_file.h"
#include "cost_models/device_spec.h"
#include "interop/hf_config.h"
#include "interop/scenario_draft.h"
#include "scenarios/named_models.h"
#include "scenarios/profile_io.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"

namespace cs::scenario {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The whole string as a finite number, or nullopt.
std::optional<double> to_double(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (used != s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The byte offset of the first invalid UTF-8 sequence in `s`, or nullopt.
std::optional<size_t> invalid_utf8_at(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size() || (len == 2 && c < 0xC2) || (len == 4 && c > 0xF4))
      return i;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    }
    const auto c1 = static_cast<unsigned char>(len > 1 ? s[i + 1] : 0);
    if ((len == 3 && c == 0xE0 && c1 < 0xA0) || (len == 3 && c == 0xED && c1 >= 0xA0) ||
        (len == 4 && c == 0xF0 && c1 < 0x90) || (len == 4 && c == 0xF4 && c1 >= 0x90)) {
      return i;  // overlong, surrogate or above U+10FFFF
    }
    i += len;
  }
  return std::nullopt;
}

// The line of the `---` that opens the second document (one opening the file opens the first).
int second_document_line(const std::string& text) {
  int line = 1, markers = 0;
  bool content = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((i == 0 || text[i - 1] == '\n') && text.compare(i, 3, "---") == 0) {
      if (content || ++markers > 1) return line;
    } else if ((i == 0 || text[i - 1] == '\n') && text[i] != '#' && text[i] != '\n') {
      content = true;
    }
    if (text[i] == '\n') ++line;
  }
  return line;
}

// The largest value each integer key accepts, with its unit and why: physically sensible bounds,
// far below where products of them (micro_batch x dp, pp x virtual_stages) could overflow. Those
// shared with the flags and importers are common/limits.h's.
struct CountBound {
  int64_t max;
  const char* unit;
  const char* why;
  std::string text() const {
    return "at most " + std::to_string(max) + (*unit ? " " : "") + unit + " (" + why + ")";
  }
};

constexpr int64_t kMaxGpus = limits::kMaxGpus;

CountBound count_bound(const std::string& path) {
  const std::string key =
      path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  const auto shared = [](const limits::IntegerBound& b, const char* unit) {
    return CountBound{b.hi, unit, b.why};
  };
  const char* model = limits::kModelDimensionWhy;
  static const std::vector<std::pair<std::string, CountBound>> kBounds = {
      {"layers", {100000, "layers", model}},  // GPT-3 has 96, Llama 3 405B 126
      {"first_stage_layers", {100000, "layers", "within the model's layers"}},
      {"last_stage_layers", {100000, "layers", "within the model's layers"}},
      {"virtual_stages",
       {100000, "model chunks per stage", "each chunk holds a layer or more of the model's"}},
      {"hidden", {int64_t{1} << 20, "elements", model}},
      {"ffn_hidden", {int64_t{1} << 22, "elements", model}},
      {"heads", {65536, "heads", model}},
      {"kv_heads", {65536, "heads", model}},
      {"vocab", {int64_t{1} << 24, "tokens", model}},
      {"max_seq", shared(limits::kSequenceTokens, "tokens")},
      {"seq_len", shared(limits::kSequenceTokens, "tokens")},
      {"global_batch", shared(limits::kBatchSequences, "sequences")},
      {"micro_batch", shared(limits::kBatchSequences, "sequences")},
      {"tp", shared(limits::kParallelSize, "GPUs")},
      {"pp", shared(limits::kParallelSize, "GPUs")},
      {"dp", shared(limits::kParallelSize, "GPUs")},
      {"cp", shared(limits::kParallelSize, "GPUs")},
      {"ep", shared(limits::kParallelSize, "GPUs")},
      {"etp", shared(limits::kParallelSize, "GPUs")},
      {"nodes", shared(limits::kNodes, "nodes")},
      {"node", {kMaxGpus, "", "a node index, within a cluster of at most 131072 GPUs"}},
  };
  for (const auto& [k, b] : kBounds) {
    if (k == key) return b;
  }
  return {INT32_MAX, "", "2^31 - 1: counts are 32-bit integers"};
}

// "--set layout.tp=abc: ", how the refusal of a --set value begins: the value is not in the file,
// so no file:line:column.
std::string override_prefix(const KeyOverride& o) {
  return "--set " + o.key + "=" + o.value + ": ";
}

// Reads typed values out of a YAML tree, turning every problem into one ScenarioError that
// points at the offending node.
class Reader {
 public:
  explicit Reader(std::string file, std::vector<KeyOverride> overrides = {})
      : file_(std::move(file)), overrides_(std::move(overrides)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path,
                         const std::string& msg) const {
    // A value from --set has no place in the file: its node's position (1:1, from parsing the
    // value as a one-line document) meant nothing. The refusal names the --set instead.
    if (const KeyOverride* o = override_of(path)) {
      throw ScenarioError(override_prefix(*o) + (path == o->key ? "" : path + ": ") + msg);
    }
    std::ostringstream o;
    o << file_;
    if (at.IsDefined() && at.Mark().line >= 0)
      o << ":" << at.Mark().line + 1 << ":" << at.Mark().column + 1;
    o << ": " << (path.empty() ? "" : path + ": ") << msg;
    throw ScenarioError(o.str());
  }

  void expect_map(const YAML::Node& n, const std::string& path) const {
    if (!n.IsMap()) fail(n, path, "expected a mapping of keys to values");
  }

  void check_keys(const YAML::Node& map, const std::string& path,
                  const std::vector<std::string>& allowed) const {
    expect_map(map, path);
    std::map<std::string, int>
        seen;  // key -> line of its first occurrence (yaml-cpp keeps the first silently)
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = scalar(it->first, path.empty() ? "key" : path + ".key");
      const std::string key_path = path.empty() ? key : path + "." + key;
      if (const auto [first, fresh] = seen.emplace(key, it->first.Mark().line + 1); !fresh) {
        fail(it->first, key_path,
             "duplicate key (first given on line " + std::to_string(first->second) + ")");
      }
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(it->first, path.empty() ? key : path + "." + key,
             "unknown key; valid keys here: " + join(allowed));
      }
    }
  }

  YAML::Node require(const YAML::Node& map, const std::string& key, const std::string& path) const {
    YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) fail(map, path, "missing required key '" + key + "'");
    return n;
  }

  // Every scalar is valid UTF-8 (names reach JSON reports, which refuse anything else).
  std::string scalar(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected a single value");
    if (const auto bad = invalid_utf8_at(n.Scalar()))
      fail(n, path, "invalid UTF-8 at byte " + std::to_string(*bad + 1) + " of the value");
    return n.Scalar();
  }

  // A positive integer no larger than the bound of its key (kCountBounds), so that a count that
  // would wrap an int (layers: 4294967308 running 12 layers) or exhaust memory is refused here.
  int64_t positive_int(const YAML::Node& n, const std::string& path) const {
    const std::string s = scalar(n, path);
    const auto v = parse_integer(s);
    if (!v) {
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
        fail(n, path, s + " is out of range: " + count_bound(path).text());
      fail(n, path, "expected a positive integer, got '" + s + "'");
    }
    if (*v < 1) fail(n, path, "must be a positive integer, got " + s);
    const CountBound b = count_bound(path);
    if (*v > b.max) fail(n, path, s + " is out of range: " + b.text());
    return *v;
  }

  double fraction(const YAML::Node& n, const std::string& path) const {
    const auto v = to_double(scalar(n, path));
    if (!v || *v < 0 || *v >= 1)
      fail(n, path, "expected a number in [0, 1), got '" + n.Scalar() + "'");
    return *v;
  }

  double number(const YAML::Node& n, const std::string& path) const {
    const auto v = to_double(scalar(n, path));
    if (!v) fail(n, path, "expected a number, got '" + n.Scalar() + "'");
    return *v;
  }

  Bytes bytes(const YAML::Node& n, const std::string& path) const {
    const std::string s = scalar(n, path);
    if (!s.empty() && s[0] == '-') fail(n, path, "size must not be negative, got '" + s + "'");
    // A bare number is ambiguous (bucket_size: 100 meant 100 MB, read as 100 bytes): a unit is
    // required.
    if (!s.empty() && std::isdigit(static_cast<unsigned char>(s.back()))) {
      fail(n, path,
           "'" + s + "' has no unit; write e.g. " + s + "MiB or " + s +
               "B (units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
    }
    Bytes b;
    try {
      b = parse_bytes(s);
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
    // 1 PiB: above any memory, bucket or message size, and far below int64 bytes (8 EiB).
    if (b.count > (int64_t{1} << 50)) fail(n, path, "'" + s + "' is out of range: at most 1 PiB");
    return b;
  }

  BytesPerSecond bandwidth(const YAML::Node& n, const std::string& path) const {
    try {
      return parse_bandwidth(scalar(n, path));
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
  }

  SimTime duration(const YAML::Node& n, const std::string& path) const {
    try {
      return parse_duration(scalar(n, path));
    } catch (const UnitError& e) {
      fail(n, path, e.what());
    }
  }

  template <class E>
  E choice(const YAML::Node& n, const std::string& path,
           const std::vector<std::pair<std::string, E>>& options) const {
    const std::string s = scalar(n, path);
    std::vector<std::string> names;
    for (const auto& [name, value] : options) {
      if (name == s) return value;
      names.push_back(name);
    }
    fail(n, path, "unknown value '" + s + "'; valid values: " + join(names));
  }

  // `text` as exactly one YAML document (a second one would be ignored silently). The documents
  // are counted first with a bounded loop over the parser's events, not with YAML::LoadAll:
  // yaml-cpp 0.7 reports a token it cannot start a node with (a ',' outside [...] or {...}, as in
  // "[a], b" or a line ", 512]") as an empty document without consuming it, so LoadAll adds
  // empty documents forever (yaml-cpp issue #1040; fixed upstream after 0.8.0, PR #1319). Found
  // by the scenario fuzzer: a 2.8 KB input ran over 60 s and grew without bound.
  YAML::Node load(const std::string& text) const {
    try {
      std::istringstream in(text);
      YAML::Parser parser(in);
      DocumentProbe probe(text);
      std::optional<int> last_empty_at;  // where the previous document, a bare null, stood
      int documents = 0;
      while (documents < 3 && parser.HandleNextDocument(probe)) {
        ++documents;
        if (probe.bare_null()) {
          // The parser stood still: the same token gave two empty documents in a row.
          if (last_empty_at == probe.null_mark().pos) stuck(text, probe.null_mark());
          last_empty_at = probe.null_mark().pos;
        } else {
          last_empty_at.reset();
        }
      }
      if (const auto& m = probe.unterminated_quote()) {
        throw ScenarioError(where(*m) + ": invalid YAML: a quoted value that never ends (its " +
                            std::string(1, text[static_cast<size_t>(m->pos)]) +
                            " has no closing quote)");
      }
      if (documents > 1) {
        throw ScenarioError(file_ + ":" + std::to_string(second_document_line(text)) +
                            ": a second YAML document; a file holds one (remove the '---' and what "
                            "follows, or merge it)");
      }
      return YAML::Load(text);  // one document: Load reads only the first, so it cannot loop
    } catch (const YAML::DeepRecursion& e) {
      // yaml-cpp's own message is "bad file".
      throw ScenarioError(where(e.mark) + ": invalid YAML: nested " + std::to_string(e.depth()) +
                          " levels deep, where yaml-cpp stops (a scenario nests a few)");
    } catch (const YAML::Exception& e) {
      throw ScenarioError(where(e.mark) + ": invalid YAML: " + e.msg);
    }
  }

  // Runs `f` and re-throws a UserError from it as a ScenarioError pointing at `at`.
  template <class F>
  auto at(const YAML::Node& node, const std::string& path, F f) const {
    try {
      return f();
    } catch (const ScenarioError&) {
      throw;
    } catch (const UserError& e) {
      fail(node, path, e.what());
    }
  }

 private:
  // The last --set whose key is `path` or holds it (degraded for degraded[0].compute), if any.
  const KeyOverride* override_of(const std::string& path) const {
    for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
      const std::string& key = it->key;
      if (path.compare(0, key.size(), key) != 0) continue;
      if (path.size() == key.size() || path[key.size()] == '.' || path[key.size()] == '[')
        return &*it;
    }
    return nullptr;
  }

  // Whether the quoted scalar opening at `pos` of `text` has its closing quote. yaml-cpp 0.7 reads
  // an unterminated one to the end of the file, so `name: "abc` swallowed every key after it and
  // was reported as a missing key.
  static bool quote_closed(const std::string& text, size_t pos) {
    const char q = text[pos];
    for (size_t i = pos + 1; i < text.size(); ++i) {
      if (q == '"' && text[i] == '\\') {
        ++i;
      } else if (text[i] == q && q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes
      } else if (text[i] == q) {
        return true;
      }
    }
    return false;
  }

  // What one document of the event stream held: whether it was a single null, and where; and the
  // first quoted scalar of the stream that never closes.
  class DocumentProbe : public YAML::EventHandler {
   public:
    explicit DocumentProbe(const std::string& text) : text_(text) {}
    bool bare_null() const { return events_ == 1 && nulls_ == 1; }
    const std::optional<YAML::Mark>& unterminated_quote() const { return unterminated_; }
    const YAML::Mark& null_mark() const { return null_mark_; }
    void OnDocumentStart(const YAML::Mark&) override { events_ = nulls_ = 0; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& m, YAML::anchor_t) override {
      ++events_, ++nulls_, null_mark_ = m;
    }
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { ++events_; }
    void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  const std::string&) override {
      ++events_;
      const auto pos = static_cast<size_t>(std::max(m.pos, 0));
      if (!unterminated_ && pos < text_.size() && (text_[pos] == '"' || text_[pos] == '\'') &&
          !quote_closed(text_, pos))
        unterminated_ = m;
    }
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
      ++events_;
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
      ++events_;
    }
    void OnMapEnd() override {}

   private:
    const std::string& text_;
    int events_ = 0, nulls_ = 0;
    YAML::Mark null_mark_;
    std::optional<YAML::Mark> unterminated_;
  };

  std::string where(const YAML::Mark& m) const {
    return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  [[noreturn]] void stuck(const std::string& text, const YAML::Mark& m) const {
    const char c = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size()
                       ? text[static_cast<size_t>(m.pos)]
                       : '?';
    if (c == ',')
      throw ScenarioError(where(m) +
                          ": invalid YAML: a ',' outside [...] or {...}; commas separate items "
                          "only inside a flow list or mapping");
    const bool printable = c > ' ' && c < 0x7f;
    throw ScenarioError(where(m) + ": invalid YAML: no value can start with " +
                        (printable ? "'" + std::string(1, c) + "'" : "this character"));
  }

  std::string file_;
  std::vector<KeyOverride> overrides_;  // --set, whose values are refused by their key
};

// A whole number in [lo, hi]: the model limits the importers share (models/model_spec.h).
int64_t bounded_int(const Reader& rd, const YAML::Node& n, const std::string& path, int64_t lo,
                    int64_t hi) {
  const std::string s = rd.scalar(n, path);
  const auto v = parse_integer(s);
  if (!v || *v < lo || *v > hi)
    rd.fail(n, path,
            "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                ", got '" + s + "'");
  return *v;
}

bool yes_no(const Reader& rd, const YAML::Node& n, const std::string& path) {
  return rd.choice<bool>(n, path, {{"true", true}, {"false", false}});
}

// model.moe: the mixture-of-experts MLP, in MoeSpec's terms (what `import megatron` and presets
// write for Mixtral, Qwen3-MoE and DeepSeek-V3).
model::MoeSpec read_moe(const Reader& rd, const YAML::Node& n, int layers) {
  namespace lim = model::limits;
  rd.check_keys(n, "model.moe",
                {"experts", "top_k", "expert_ffn_hidden", "shared_experts", "shared_ffn_hidden",
                 "first_dense_layers", "layer_step", "dense_layers", "expert_score_bias"});
  model::MoeSpec e;
  e.experts = static_cast<int>(bounded_int(rd, rd.require(n, "experts", "model.moe"),
                                           "model.moe.experts", 1, lim::max_experts));
  e.top_k = static_cast<int>(
      bounded_int(rd, rd.require(n, "top_k", "model.moe"), "model.moe.top_k", 1, e.experts));
  e.expert_ffn_hidden = bounded_int(rd, rd.require(n, "expert_ffn_hidden", "model.moe"),
                                    "model.moe.expert_ffn_hidden", 1, lim::max_ffn);
  if (n["shared_experts"])
    e.shared_experts = static_cast<int>(bounded_int(
        rd, n["shared_experts"], "model.moe.shared_experts", 0, lim::max_shared_experts));
  if (n["shared_ffn_hidden"])
    e.shared_ffn_hidden =
        bounded_int(rd, n["shared_ffn_hidden"], "model.moe.shared_ffn_hidden", 1, lim::max_ffn);
  else if (e.shared_experts > 0)
    e.shared_ffn_hidden = e.expert_ffn_hidden;
  if (n["first_dense_layers"])
    e.first_dense_layers = static_cast<int>(
        bounded_int(rd, n["first_dense_layers"], "model.moe.first_dense_layers", 0, layers));
  if (n["layer_step"])
    e.layer_step =
        static_cast<int>(bounded_int(rd, n["layer_step"], "model.moe.layer_step", 1, layers));
  if (const YAML::Node d = n["dense_layers"]) {
    if (!d.IsSequence())
      rd.fail(d, "model.moe.dense_layers",
              "expected a list of 0-based layer indices, e.g. [0, 1, 2]");
    for (size_t i = 0; i < d.size(); ++i)
      e.dense_layers.push_back(static_cast<int>(bounded_int(
          rd, d[i], "model.moe.dense_layers[" + std::to_string(i) + "]", 0, layers - 1)));
  }
  if (n["expert_score_bias"])
    e.expert_score_bias = yes_no(rd, n["expert_score_bias"], "model.moe.expert_score_bias");
  return e;
}

// model.mla: multi-head latent attention (DeepSeek-V2/V3), in MlaSpec's terms.
model::MlaSpec read_mla(const Reader& rd, const YAML::Node& n) {
  namespace lim = model::limits;
  rd.check_keys(
      n, "model.mla",
      {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  model::MlaSpec a;
  if (n["q_lora_rank"])
    a.q_lora_rank = bounded_int(rd, n["q_lora_rank"], "model.mla.q_lora_rank", 0, lim::max_rank);
  a.kv_lora_rank = bounded_int(rd, rd.require(n, "kv_lora_rank", "model.mla"),
                               "model.mla.kv_lora_rank", 1, lim::max_rank);
  a.qk_nope_head_dim = bounded_int(rd, rd.require(n, "qk_nope_head_dim", "model.mla"),
                                   "model.mla.qk_nope_head_dim", 1, lim::max_head_dim);
  a.qk_rope_head_dim = bounded_int(rd, rd.require(n, "qk_rope_head_dim", "model.mla"),
                                   "model.mla.qk_rope_head_dim", 1, lim::max_head_dim);
  a.v_head_dim = bounded_int(rd, rd.require(n, "v_head_dim", "model.mla"), "model.mla.v_head_dim",
                             1, lim::max_head_dim);
  return a;
}

// A user-defined model: the dimensions are required.
model::ModelSpec custom_model(const Reader& rd, const YAML::Node& n) {
  model::ModelSpec m;
  m.name = n["name"] ? rd.scalar(n["name"], "model.name") : "custom";
  m.family = rd.choice<model::Family>(rd.require(n, "family", "model"), "model.family",
                                      {{"gpt", model::Family::gpt},
                                       {"llama", model::Family::llama},
                                       {"gpt_neox", model::Family::gpt_neox},
                                       {"mlp", model::Family::mlp}});
  m.layers = static_cast<int>(rd.positive_int(rd.require(n, "layers", "model"), "model.layers"));
  m.hidden = rd.positive_int(rd.require(n, "hidden", "model"), "model.hidden");
  if (m.family != model::Family::mlp) {
    m.heads = static_cast<int>(rd.positive_int(rd.require(n, "heads", "model"), "model.heads"));
    m.kv_heads = m.heads;
    m.ffn_hidden = 4 * m.hidden;
    m.vocab = rd.positive_int(rd.require(n, "vocab", "model"), "model.vocab");
    m.max_seq = rd.positive_int(rd.require(n, "max_seq", "model"), "model.max_seq");
    m.dropout = m.family == model::Family::gpt ? 0.1 : 0.0;
  } else {
    m.ffn_hidden = m.hidden;
    m.max_seq = 1;
  }
  return m;
}

// The model the keys below start from: a Hugging Face config.json, a preset, or the user's.
model::ModelSpec base_model(const Reader& rd, const YAML::Node& n, const std::string& file_name) {
  if (n["hf_config"]) {
    // A Hugging Face config.json, relative to the scenario file's folder; the keys below override
    // it.
    if (n["preset"]) rd.fail(n, "model", "give either 'preset' or 'hf_config', not both");
    std::string path = rd.scalar(n["hf_config"], "model.hf_config");
    const auto slash = file_name.rfind('/');
    if (!path.empty() && path[0] != '/' && slash != std::string::npos)
      path = file_name.substr(0, slash + 1) + path;
    return rd.at(n["hf_config"], "model.hf_config",
                 [&] { return interop::load_hf_config(path).spec; });
  }
  if (n["preset"]) {
    return rd.at(n["preset"], "model.preset",
                 [&] { return model::find_model_preset(rd.scalar(n["preset"], "model.preset")); });
  }
  return custom_model(rd, n);
}

// The dimensions a scenario sets over its base model.
void override_dimensions(const Reader& rd, const YAML::Node& n, model::ModelSpec& m) {
  if (n["name"]) m.name = rd.scalar(n["name"], "model.name");
  if (n["layers"]) m.layers = static_cast<int>(rd.positive_int(n["layers"], "model.layers"));
  if (n["hidden"]) m.hidden = rd.positive_int(n["hidden"], "model.hidden");
  if (n["heads"]) m.heads = static_cast<int>(rd.positive_int(n["heads"], "model.heads"));
  if (n["kv_heads"])
    m.kv_heads = static_cast<int>(rd.positive_int(n["kv_heads"], "model.kv_heads"));
  else if (n["heads"] && !n["preset"] && !n["hf_config"])
    m.kv_heads = m.heads;
  if (n["ffn_hidden"]) m.ffn_hidden = rd.positive_int(n["ffn_hidden"], "model.ffn_hidden");
  if (n["vocab"]) m.vocab = rd.positive_int(n["vocab"], "model.vocab");
  if (n["max_seq"]) m.max_seq = rd.positive_int(n["max_seq"], "model.max_seq");
  if (n["dropout"]) m.dropout = rd.fraction(n["dropout"], "model.dropout");
  // The LM head shares the embedding's weights (GPT-2) or has its own (Llama, Nemotron).
  if (n["tie_embeddings"])
    m.tie_embeddings = rd.choice<bool>(n["tie_embeddings"], "model.tie_embeddings",
                                       {{"true", true}, {"false", false}});
}

// What the importers write beyond the dimensions (Qwen's q/k/v biases, head size and q/k norms;
// MoE; MLA; multi-token prediction), so that an imported model reads back as it was imported.
void read_model_options(const Reader& rd, const YAML::Node& n, model::ModelSpec& m) {
  if (n["qkv_bias"]) m.qkv_bias = yes_no(rd, n["qkv_bias"], "model.qkv_bias");
  if (n["head_dim"])
    m.head_dim_explicit =
        bounded_int(rd, n["head_dim"], "model.head_dim", 1, model::limits::max_head_dim);
  if (n["qk_norm"]) m.qk_norm = yes_no(rd, n["qk_norm"], "model.qk_norm");
  if (n["moe"]) m.moe = read_moe(rd, n["moe"], m.layers);
  if (n["mla"]) m.mla = read_mla(rd, n["mla"]);
  if (n["activation"]) {
    m.activation = rd.choice(n["activation"], "model.activation", model::activation_names());
    if (m.family != model::Family::gpt && m.family != model::Family::gpt_neox)
      rd.fail(n["activation"], "model.activation",
              "names a GELU implementation: applies to the gpt and gpt_neox families (" + m.name +
                  " is " + std::string(model::to_string(m.family)) +
                  (m.gated_mlp() ? ", whose MLP is SwiGLU" : "") + ")");
  }
  if (n["projections"])
    m.projections = rd.choice(n["projections"], "model.projections", model::projection_names());
  if (n["rotary_fraction"]) {
    m.rotary_fraction = rd.number(n["rotary_fraction"], "model.rotary_fraction");
    if (!(m.rotary_fraction > 0 && m.rotary_fraction <= 1))
      rd.fail(n["rotary_fraction"], "model.rotary_fraction",
              "expected a number above 0 and at most 1 (the share of each head's dimensions "
              "rotary positions rotate), got '" +
                  n["rotary_fraction"].Scalar() + "'");
  }
  if (n["mtp_depth"])
    m.mtp_depth = static_cast<int>(
        bounded_int(rd, n["mtp_depth"], "model.mtp_depth", 0, model::limits::max_mtp));
}

model::ModelSpec read_model(const Reader& rd, const YAML::Node& n, const std::string& file_name) {
  rd.check_keys(
      n, "model",
      {"preset",         "hf_config",  "name",        "family",         "layers",  "hidden",
       "heads",          "kv_heads",   "ffn_hidden",  "vocab",          "max_seq", "dropout",
       "tie_embeddings", "qkv_bias",   "head_dim",    "qk_norm",        "moe",     "mla",
       "mtp_depth",      "activation", "projections", "rotary_fraction"});
  model::ModelSpec m = base_model(rd, n, file_name);
  override_dimensions(rd, n, m);
  read_model_options(rd, n, m);
  rd.at(n, "model", [&] {
    model::validate(m);
    return 0;
  });
  return m;
}

void read_custom_topology(const Reader& rd, const YAML::Node& n, Scenario& s) {
  const YAML::Node devices = rd.require(n, "devices", "cluster");
  if (!devices.IsSequence())
    rd.fail(devices, "cluster.devices", "expected a list of {name, kind, node}");
  std::set<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string path = "cluster.devices[" + std::to_string(i) + "]";
    const YAML::Node d = devices[i];
    rd.check_keys(d, path, {"name", "kind", "node"});
    Scenario::DeviceDecl decl;
    decl.name = rd.scalar(rd.require(d, "name", path), path + ".name");
    if (!names.insert(decl.name).second)
      rd.fail(d["name"], path + ".name", "device '" + decl.name + "' is defined twice");
    decl.kind = rd.choice<topo::DeviceKind>(rd.require(d, "kind", path), path + ".kind",
                                            {{"gpu", topo::DeviceKind::gpu},
                                             {"nvswitch", topo::DeviceKind::nvswitch},
                                             {"pcie_switch", topo::DeviceKind::pcie_switch},
                                             {"cpu", topo::DeviceKind::cpu},
                                             {"nic", topo::DeviceKind::nic},
                                             {"network_switch", topo::DeviceKind::network_switch}});
    decl.node = d["node"] ? static_cast<int>(rd.positive_int(d["node"], path + ".node")) - 1 : 0;
    s.devices.push_back(decl);
  }
  const YAML::Node links = rd.require(n, "links", "cluster");
  if (!links.IsSequence())
    rd.fail(links, "cluster.links", "expected a list of {from, to, kind, bandwidth, latency}");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string path = "cluster.links[" + std::to_string(i) + "]";
    const YAML::Node l = links[i];
    rd.check_keys(l, path, {"from", "to", "kind", "bandwidth", "reverse_bandwidth", "latency"});
    Scenario::LinkDecl decl;
    for (const char* end : {"from", "to"}) {
      const std::string name = rd.scalar(rd.require(l, end, path), path + "." + end);
      if (!names.count(name)) {
        rd.fail(l[end], path + "." + end,
                "no device named '" + name + "'; devices are: " +
                    join(std::vector<std::string>(names.begin(), names.end())));
      }
      (std::string(end) == "from" ? decl.from : decl.to) = name;
    }
    decl.kind = rd.choice<topo::LinkKind>(rd.require(l, "kind", path), path + ".kind",
                                          {{"nvlink", topo::LinkKind::nvlink},
                                           {"pcie", topo::LinkKind::pcie},
                                           {"infiniband", topo::LinkKind::infiniband},
                                           {"ethernet", topo::LinkKind::ethernet}});
    decl.bandwidth = rd.bandwidth(rd.require(l, "bandwidth", path), path + ".bandwidth");
    decl.reverse_bandwidth = l["reverse_bandwidth"]
                                 ? rd.bandwidth(l["reverse_bandwidth"], path + ".reverse_bandwidth")
                                 : decl.bandwidth;
    decl.latency = l["latency"] ? rd.duration(l["latency"], path + ".latency") : SimTime{};
    s.links.push_back(decl);
  }
}

// ---- Hardware: a GPU, a node and a cluster declared in YAML ----------------------------------
//
//   cluster:
//     preset: dgx_h100 | file: hardware/x.yaml | (neither: gpu and node declared whole)
//     name, description, nodes
//     gpu: h100_sxm | {preset | file, name, description, peak: {fp32, tf32, bf16, fp16, fp8},
//                      hbm: {capacity, bandwidth}}
//     node: {gpus, intra, nvlink_bandwidth, ...}   fabric: {type, nodes_per_leaf, oversubscription}
//
// A hardware file holds the same keys at its top level (a GPU file: the gpu keys); relative paths
// are beside the file that names them, and errors inside it name that file. Every figure is
// range-checked against the bounds below (typing 989PFLOPS for 989TFLOPS is the mistake to catch).

// Where a relative path named in `file` points: beside that file.
std::string beside(const std::string& file, const std::string& path) {
  const auto slash = file.rfind('/');
  if (path.empty() || path[0] == '/' || slash == std::string::npos) return path;
  return file.substr(0, slash + 1) + path;
}

struct HardwareFile {
  std::string path;
  YAML::Node root;
};

// The file named at `at` (relative to `from_file`), parsed; errors in it name it.
HardwareFile load_hardware_file(const Reader& rd, const YAML::Node& at, const std::string& key_path,
                                const std::string& from_file) {
  HardwareFile f;
  f.path = beside(from_file, rd.scalar(at, key_path));
  std::ifstream in(f.path);
  if (!in) rd.fail(at, key_path, "cannot open hardware file '" + f.path + "'");
  const std::string text = rd.at(
      at, key_path, [&] { return read_text_file(f.path, "hardware file", kMaxYamlFileBytes); });
  f.root = Reader(f.path).load(text);
  if (!f.root.IsMap()) throw ScenarioError(f.path + ": expected a mapping of hardware keys");
  return f;
}

std::string rate_text(double flops) {
  char buf[64];
  if (flops >= 1e15)
    std::snprintf(buf, sizeof buf, "%g PFLOP/s", flops * 1e-15);
  else if (flops >= 1e12)
    std::snprintf(buf, sizeof buf, "%g TFLOP/s", flops * 1e-12);
  else
    std::snprintf(buf, sizeof buf, "%g GFLOP/s", flops * 1e-9);
  return buf;
}

std::string capacity_text(Bytes b) {
  char buf[64];
  if (b.gib() >= 1024)
    std::snprintf(buf, sizeof buf, "%g TiB", b.gib() / 1024);
  else
    std::snprintf(buf, sizeof buf, "%g GiB", b.gib());
  return buf;
}

std::string bandwidth_text(double bytes_per_s) {
  char buf[64];
  if (bytes_per_s >= 1e12)
    std::snprintf(buf, sizeof buf, "%g TB/s", bytes_per_s * 1e-12);
  else
    std::snprintf(buf, sizeof buf, "%g GB/s", bytes_per_s * 1e-9);
  return buf;
}

// A figure outside [lo, hi] fails with both bounds and what the figure is.
FlopsPerSecond flops_rate_in(const Reader& rd, const YAML::Node& n, const std::string& path) {
  using B = cost::DeviceBounds;
  FlopsPerSecond r;
  try {
    r = parse_flops_rate(rd.scalar(n, path));
  } catch (const UnitError& e) {
    rd.fail(n, path, e.what());
  }
  if (r.value < B::min_rate.value || r.value > B::max_rate.value) {
    rd.fail(n, path,
            rate_text(r.value) + " is out of range: a dense peak per GPU is between " +
                rate_text(B::min_rate.value) + " and " + rate_text(B::max_rate.value) +
                " (B200 bf16: 2.25 PFLOP/s)");
  }
  return r;
}

BytesPerSecond bandwidth_in(const Reader& rd, const YAML::Node& n, const std::string& path,
                            BytesPerSecond lo, BytesPerSecond hi, const std::string& what) {
  const BytesPerSecond b = rd.bandwidth(n, path);
  if (b.value < lo.value || b.value > hi.value) {
    rd.fail(n, path,
            bandwidth_text(b.value) + " is out of range: " + what + " is between " +
                bandwidth_text(lo.value) + " and " + bandwidth_text(hi.value));
  }
  return b;
}

int count_in(const Reader& rd, const YAML::Node& n, const std::string& path, int hi,
             const std::string& why) {
  const int64_t v = rd.positive_int(n, path);
  if (v > hi)
    rd.fail(
        n, path,
        std::to_string(v) + " is out of range: at most " + std::to_string(hi) + " (" + why + ")");
  return static_cast<int>(v);
}

// Per-direction bounds of the node's links. NVLink: up to 10 TB/s (11x NVLink 5's 900 GB/s); PCIe
// x16 up to 1 TB/s (Gen7 is 242 GB/s); NICs from 1 Gb/s to 3.2 Tb/s (4x today's 800G ports).
constexpr BytesPerSecond kMinLink{1e9}, kMaxNvlink{10e12}, kMaxPcie{1e12}, kMaxSocket{2e12};
constexpr BytesPerSecond kMinNic{1e9 / 8}, kMaxNic{3.2e12 / 8};
constexpr int kMaxGpusPerNode = 576;  // the largest NVLink domain NVIDIA sells (NVL576)
constexpr int kMaxSockets = 64;
constexpr int kMaxNodesPerLeaf = 4096;
constexpr double kMaxOversubscription = 64;

// `gpu:` as a mapping: a GPU declared by its figures, starting from nothing, a device preset
// (`preset`) or a GPU file (`file`, the same keys at its top level).
// `peak`: the dtypes' rates. A GPU declared from nothing (`base` false) needs fp32 and a 16-bit
// rate.
void read_gpu_peaks(const Reader& rd, const YAML::Node& p, const std::string& pp, bool base,
                    cost::DeviceSpec& d) {
  rd.check_keys(p, pp, {"fp32", "tf32", "bf16", "fp16", "fp8"});
  if (!base) rd.require(p, "fp32", pp);
  if (!base && !p["bf16"] && !p["fp16"])
    rd.fail(p, pp, "declare bf16 or fp16 (the 16-bit tensor-core rate mixed precision runs at)");
  if (p["fp32"]) d.fp32 = flops_rate_in(rd, p["fp32"], pp + ".fp32");
  if (p["tf32"]) d.tf32 = flops_rate_in(rd, p["tf32"], pp + ".tf32");
  if (p["bf16"]) d.bf16 = flops_rate_in(rd, p["bf16"], pp + ".bf16");
  if (p["fp16"]) d.fp16 = flops_rate_in(rd, p["fp16"], pp + ".fp16");
  if (p["fp8"]) d.fp8 = flops_rate_in(rd, p["fp8"], pp + ".fp8");
}

// `hbm`: capacity and bandwidth, each within the device bounds.
void read_gpu_memory(const Reader& rd, const YAML::Node& h, const std::string& hp, bool base,
                     cost::DeviceSpec& d) {
  using B = cost::DeviceBounds;
  rd.check_keys(h, hp, {"capacity", "bandwidth"});
  if (!base) {
    rd.require(h, "capacity", hp);
    rd.require(h, "bandwidth", hp);
  }
  if (h["capacity"]) {
    d.memory_capacity = rd.bytes(h["capacity"], hp + ".capacity");
    if (d.memory_capacity < B::min_capacity || d.memory_capacity > B::max_capacity) {
      rd.fail(h["capacity"], hp + ".capacity",
              capacity_text(d.memory_capacity) + " is out of range: memory per GPU is between " +
                  capacity_text(B::min_capacity) + " and " + capacity_text(B::max_capacity));
    }
  }
  if (h["bandwidth"])
    d.hbm_bandwidth = bandwidth_in(rd, h["bandwidth"], hp + ".bandwidth", B::min_bandwidth,
                                   B::max_bandwidth, "memory bandwidth per GPU");
}

cost::DeviceSpec read_gpu(const Reader& rd, const YAML::Node& n, const std::string& path,
                          const std::string& file) {
  rd.check_keys(n, path, {"file", "preset", "name", "description", "peak", "hbm"});
  if (n["file"] && n["preset"]) rd.fail(n, path, "give either 'file' or 'preset', not both");
  cost::DeviceSpec d;
  bool base = true;
  if (n["file"]) {
    const HardwareFile f = load_hardware_file(rd, n["file"], path + ".file", file);
    const Reader frd(f.path);
    if (f.root["file"]) frd.fail(f.root["file"], "gpu.file", "a GPU file cannot name another file");
    d = read_gpu(frd, f.root, "gpu", f.path);
  } else if (n["preset"]) {
    d = rd.at(n["preset"], path + ".preset",
              [&] { return cost::find_device(rd.scalar(n["preset"], path + ".preset")); });
  } else {
    base = false;
    d.name = rd.scalar(rd.require(n, "name", path), path + ".name");
    d.description = "declared in " + file;
  }
  if (n["name"]) d.name = rd.scalar(n["name"], path + ".name");
  if (n["description"]) d.description = rd.scalar(n["description"], path + ".description");
  if (!base) rd.require(n, "peak", path);
  if (n["peak"]) read_gpu_peaks(rd, n["peak"], path + ".peak", base, d);
  if (!base) rd.require(n, "hbm", path);
  if (n["hbm"]) read_gpu_memory(rd, n["hbm"], path + ".hbm", base, d);
  // A preset's name on other figures would make reports say "h100_sxm" of a GPU that is not one.
  const bool changed = n["peak"] || n["hbm"];
  if (changed) {
    for (const auto& preset : cost::device_specs()) {
      if (preset.name == d.name) {
        rd.fail(n["name"] ? n["name"] : n, path + ".name",
                "'" + d.name +
                    "' is a device preset; a GPU with other figures needs a name of its own");
      }
    }
  }
  return d;
}

// `cluster.node`: the server. Changes to a preset's, or (declared) a server described whole.
void read_node(const Reader& rd, const YAML::Node& n, topo::NodeSpec& node, bool declared) {
  const std::string path = "cluster.node";
  rd.check_keys(
      n, path,
      {"gpus", "intra", "nvlink_bandwidth", "nvls", "pcie_bandwidth", "gpus_per_pcie_switch",
       "sockets", "inter_socket_bandwidth", "nics", "nic_bandwidth", "network"});
  auto key = [&](const char* k) { return path + "." + k; };
  if (declared) {
    rd.require(n, "gpus", path);
    rd.require(n, "pcie_bandwidth", path);
  }
  if (n["gpus"])
    node.gpus = count_in(rd, n["gpus"], key("gpus"), kMaxGpusPerNode,
                         "GPUs in one NVLink domain or server");
  if (n["intra"]) {
    node.intra = rd.choice<topo::IntraNode>(n["intra"], key("intra"),
                                            {{"nvswitch", topo::IntraNode::nvswitch},
                                             {"nvlink_pairs", topo::IntraNode::nvlink_pairs},
                                             {"pcie", topo::IntraNode::pcie}});
  }
  if (declared && node.intra != topo::IntraNode::pcie && node.gpus > 1 && !n["nvlink_bandwidth"]) {
    rd.fail(n, path,
            "missing required key 'nvlink_bandwidth' (per GPU per direction; or intra: pcie)");
  }
  if (n["nvlink_bandwidth"])
    node.nvlink = bandwidth_in(rd, n["nvlink_bandwidth"], key("nvlink_bandwidth"), kMinLink,
                               kMaxNvlink, "NVLink per GPU per direction");
  if (n["nvls"])
    node.nvls = rd.choice<bool>(n["nvls"], key("nvls"), {{"true", true}, {"false", false}});
  if (n["pcie_bandwidth"])
    node.pcie = bandwidth_in(rd, n["pcie_bandwidth"], key("pcie_bandwidth"), kMinLink, kMaxPcie,
                             "a PCIe x16 link per direction");
  if (n["gpus_per_pcie_switch"])
    node.gpus_per_pcie_switch = count_in(rd, n["gpus_per_pcie_switch"], key("gpus_per_pcie_switch"),
                                         kMaxGpusPerNode, "GPUs in a node");
  if (n["sockets"])
    node.sockets = count_in(rd, n["sockets"], key("sockets"), kMaxSockets, "CPU sockets in a node");
  if (n["inter_socket_bandwidth"]) {
    node.inter_socket = bandwidth_in(rd, n["inter_socket_bandwidth"], key("inter_socket_bandwidth"),
                                     kMinLink, kMaxSocket, "the inter-socket link per direction");
  }
  if (declared && n["nics"] && !n["nic_bandwidth"])
    rd.fail(n, path, "missing required key 'nic_bandwidth' (per NIC per direction, e.g. 400Gbps)");
  if (n["nics"])
    node.nics = count_in(rd, n["nics"], key("nics"), kMaxGpusPerNode, "NICs in a node");
  if (n["nic_bandwidth"])
    node.nic = bandwidth_in(rd, n["nic_bandwidth"], key("nic_bandwidth"), kMinNic, kMaxNic,
                            "a NIC per direction");
  if (n["network"]) {
    node.network = rd.choice<topo::LinkKind>(n["network"], key("network"),
                                             {{"infiniband", topo::LinkKind::infiniband},
                                              {"ethernet", topo::LinkKind::ethernet},
                                              {"roce", topo::LinkKind::ethernet}});
  }
}

void read_fabric(const Reader& rd, const YAML::Node& n, topo::FabricSpec& f) {
  rd.check_keys(n, "cluster.fabric", {"type", "nodes_per_leaf", "oversubscription"});
  if (n["type"]) {
    f.kind = rd.choice<topo::FabricKind>(n["type"], "cluster.fabric.type",
                                         {{"single_switch", topo::FabricKind::single_switch},
                                          {"rail_optimized", topo::FabricKind::rail_optimized},
                                          {"fat_tree", topo::FabricKind::fat_tree}});
  }
  if (n["nodes_per_leaf"])
    f.nodes_per_leaf = count_in(rd, n["nodes_per_leaf"], "cluster.fabric.nodes_per_leaf",
                                kMaxNodesPerLeaf, "nodes under one leaf switch");
  if (n["oversubscription"]) {
    f.oversubscription = rd.number(n["oversubscription"], "cluster.fabric.oversubscription");
    if (!(f.oversubscription >= 1.0))
      rd.fail(n["oversubscription"], "cluster.fabric.oversubscription",
              "must be at least 1 (leaf downlink : uplink bandwidth)");
    if (f.oversubscription > kMaxOversubscription) {
      rd.fail(n["oversubscription"], "cluster.fabric.oversubscription",
              "must be at most " + std::to_string(static_cast<int>(kMaxOversubscription)) +
                  " (leaf downlink : uplink bandwidth)");
    }
  }
}

// A cluster of parts (not devices and links), as in a scenario's `cluster:` block or a cluster
// file.
struct HardwareDecl {
  topo::ClusterSpec cluster;
  std::optional<cost::DeviceSpec> gpu;  // declared; nullopt: the device preset cluster.gpu names
};

const std::vector<std::string> kClusterFileKeys = {"preset", "name", "description", "nodes",
                                                   "gpu",    "node", "fabric"};

void read_cluster_decl(const Reader& rd, const YAML::Node& n, const std::string& file,
                       HardwareDecl& hw) {
  if (n["preset"] && n["file"]) rd.fail(n, "cluster", "give either 'preset' or 'file', not both");
  bool base = true;
  if (n["file"]) {
    const HardwareFile f = load_hardware_file(rd, n["file"], "cluster.file", file);
    const Reader frd(f.path);
    frd.check_keys(f.root, "cluster", kClusterFileKeys);
    read_cluster_decl(frd, f.root, f.path, hw);
  } else if (n["preset"]) {
    hw.cluster = rd.at(n["preset"], "cluster.preset", [&] {
      return topo::find_cluster_preset(rd.scalar(n["preset"], "cluster.preset"));
    });
    hw.gpu.reset();
  } else {
    base = false;
    hw.cluster = topo::ClusterSpec{};
    hw.cluster.name = "declared";
    rd.require(n, "gpu", "cluster");
    rd.require(n, "node", "cluster");
  }
  if (n["name"]) {
    hw.cluster.name = rd.scalar(n["name"], "cluster.name");
    if (hw.cluster.name == kCustomCluster)
      rd.fail(n["name"], "cluster.name",
              "'custom' names clusters of devices and links; choose another name");
  }
  if (n["description"]) hw.cluster.description = rd.scalar(n["description"], "cluster.description");
  if (n["nodes"]) hw.cluster.nodes = static_cast<int>(rd.positive_int(n["nodes"], "cluster.nodes"));
  if (n["gpu"] && n["gpu"].IsMap()) {
    hw.gpu = read_gpu(rd, n["gpu"], "cluster.gpu", file);
    hw.cluster.gpu = hw.gpu->name;
  } else if (n["gpu"]) {
    hw.cluster.gpu = rd.scalar(n["gpu"], "cluster.gpu");
    hw.gpu.reset();
    rd.at(n["gpu"], "cluster.gpu", [&] { return cost::find_device(hw.cluster.gpu).name; });
  }
  if (n["node"]) read_node(rd, n["node"], hw.cluster.node, !base);
  if (n["fabric"]) read_fabric(rd, n["fabric"], hw.cluster.fabric);
}

void read_cluster(const Reader& rd, const YAML::Node& n, Scenario& s) {
  rd.check_keys(n, "cluster",
                {"preset", "file", "name", "description", "nodes", "gpu", "node", "fabric",
                 "devices", "links"});
  if (n["devices"] || n["links"]) {
    if (n["preset"])
      rd.fail(n, "cluster", "give either 'preset' or 'devices' and 'links', not both");
    if (n["file"]) rd.fail(n, "cluster", "give either 'file' or 'devices' and 'links', not both");
    if (n["node"] || n["fabric"])
      rd.fail(n, "cluster",
              "'node' and 'fabric' change a preset; a cluster of 'devices' and 'links' describes "
              "its wiring itself");
    s.cluster_name = kCustomCluster;
    read_custom_topology(rd, n, s);
    try {  // every GPU must reach every other; built here so the error points at the cluster
      const topo::Topology t = build_topology(s);
      for (int r = 1; r < t.gpu_count(); ++r) t.route(0, r);
      s.gpus = t.gpu_count();
      s.nodes = t.node_count();
    } catch (const UserError& e) {
      rd.fail(n, "cluster", e.what());
    }
    if (s.gpus == 0)
      rd.fail(n["devices"], "cluster.devices", "a cluster needs at least one device of kind 'gpu'");
    if (!n["gpu"])
      rd.fail(n, "cluster", "missing required key 'gpu' (the device kind of a custom cluster)");
    if (n["gpu"].IsMap()) {
      s.declared_gpu = read_gpu(rd, n["gpu"], "cluster.gpu", s.file);
      s.gpu = s.declared_gpu->name;
    } else {
      s.gpu = rd.scalar(n["gpu"], "cluster.gpu");
      rd.at(n["gpu"], "cluster.gpu", [&] { return cost::find_device(s.gpu).name; });
    }
    return;
  }
  if (!n["preset"] && !n["file"] && !n["node"] && !n["gpu"])
    rd.fail(n, "cluster",
            "missing required key 'preset' (or 'file', 'devices' and 'links', or a declared 'gpu' "
            "and 'node')");
  HardwareDecl hw;
  read_cluster_decl(rd, n, s.file, hw);
  s.cluster = hw.cluster;
  s.cluster_name = s.cluster.name;
  s.gpu = s.cluster.gpu;
  s.declared_gpu = hw.gpu;
  rd.at(n, "cluster", [&] {
    topo::validate(s.cluster);
    return 0;
  });
  s.nodes = s.cluster.nodes;
  s.gpus = s.cluster.gpu_count();
}

// Why GPU `d` cannot train in precision `p`, or "" when it can: GEMMs in a datatype it has no
// rate for (a declared GPU without fp8, an A100 asked for fp8, FP4 before Blackwell), or a
// block-scaled recipe (mxfp8, nvfp4) on a GPU without Blackwell's block-scaled tensor cores.
std::string precision_refusal(const cost::DeviceSpec& d, model::Precision p) {
  const model::PrecisionInfo info = model::precision_info(p);
  const std::string name(model::to_string(p));
  if (info.gemm == ir::DType::fp4 && !d.supports(info.gemm))
    return d.name + " has no FP4 tensor cores; " + name + " needs Blackwell";
  const bool block_scaled =
      info.scaling == model::Scaling::mxfp8 || info.scaling == model::Scaling::nvfp4;
  if (block_scaled && !d.has_block_scaled_tensor_cores())
    return d.name + " has no MXFP8 (block-scaled FP8) tensor cores; " + name + " needs Blackwell";
  if (d.supports(info.gemm)) return "";
  const std::string need(ir::to_string(info.gemm));
  return name + " computes in " + need + ", which GPU '" + d.name +
         "' has no rate for (cluster.gpu.peak." + need + ")";
}

// The training precision must be one the GPU runs: said here, at the precision, not
// mid-simulation.
void check_precision_on_gpu(const Reader& rd, const YAML::Node& training, const Scenario& s) {
  const cost::DeviceSpec& d = s.profile        ? s.profile->device
                              : s.declared_gpu ? *s.declared_gpu
                                               : cost::find_device(s.gpu);
  const std::string why = precision_refusal(d, s.training.precision);
  if (why.empty()) return;
  std::vector<std::string> runs;
  for (model::Precision p :
       {model::Precision::fp32, model::Precision::amp_fp16, model::Precision::amp_bf16,
        model::Precision::mixed_fp16, model::Precision::mixed_bf16, model::Precision::tf32,
        model::Precision::fp8, model::Precision::fp8_rowwise, model::Precision::mxfp8,
        model::Precision::nvfp4}) {
    if (precision_refusal(d, p).empty() && d.supports(model::precision_info(p).compute))
      runs.emplace_back(model::to_string(p));
  }
  const YAML::Node at = training["precision"] ? training["precision"] : training;
  rd.fail(at, "training.precision", why + "; precisions it runs: " + join(runs));
}

// `network:` fidelity level and NCCL_ALGO / NCCL_PROTO-like overrides.
void read_network(const Reader& rd, const YAML::Node& n, Scenario& s) {
  rd.check_keys(n, "network", {"fidelity", "algorithm", "protocol"});
  if (n["fidelity"]) {
    s.fidelity = rd.choice<cost::NetworkFidelity>(n["fidelity"], "network.fidelity",
                                                  name_value_pairs(network_models()));
  }
  // auto (nullopt): NCCL's own choice.
  using OptAlgorithm = std::optional<cost::Algorithm>;
  using OptProtocol = std::optional<cost::Protocol>;
  if (n["algorithm"]) {
    s.collectives.algorithm = rd.choice<OptAlgorithm>(n["algorithm"], "network.algorithm",
                                                      name_value_pairs(collective_algorithms()));
  }
  if (n["protocol"]) {
    s.collectives.protocol = rd.choice<OptProtocol>(n["protocol"], "network.protocol",
                                                    name_value_pairs(collective_protocols()));
  }
}

// `run:` the training run's inputs (training_run/inputs.h reads and bounds each value, the same
// code as simulate's flags); tokens and steps are alternatives.
training_run::RunInputs read_run(const Reader& rd, const YAML::Node& n) {
  std::vector<std::string> keys;
  for (const auto& k : training_run::input_keys()) keys.emplace_back(k.key);
  rd.check_keys(n, "run", keys);
  if (n["tokens"] && n["steps"]) rd.fail(n, "run", "give either 'tokens' or 'steps', not both");
  training_run::RunInputs in;
  for (const auto& k : training_run::input_keys()) {
    if (!n[k.key]) continue;
    const std::string path = std::string("run.") + k.key;
    const std::string text = rd.scalar(n[k.key], path);
    try {
      k.read(in, text);
    } catch (const training_run::InputError& e) {
      rd.fail(n[k.key], path, e.what());
    }
  }
  return in;
}

// Megatron-Core's --cp-comm-type names (model::CpComm) and, for a2a+p2p, the all-to-all level's
// ranks (--hierarchical-context-parallel-sizes' first): more than 1, fewer than cp, dividing it.
void read_context_parallel_comm(const Reader& rd, const YAML::Node& n, strategy::Layout& l) {
  using model::CpComm;
  if (n["cp_comm"]) {
    l.cp_comm = rd.choice<CpComm>(
        n["cp_comm"], "layout.cp_comm",
        {{"p2p", CpComm::p2p}, {"a2a", CpComm::a2a}, {"a2a+p2p", CpComm::a2a_p2p}});
  }
  const bool hierarchical = l.cp_comm == CpComm::a2a_p2p;
  if (n["cp_a2a"]) {
    if (!hierarchical) rd.fail(n["cp_a2a"], "layout.cp_a2a", "applies to cp_comm: a2a+p2p only");
    l.cp_a2a = static_cast<int>(rd.positive_int(n["cp_a2a"], "layout.cp_a2a"));
    if (l.cp_a2a < 2 || l.cp_a2a >= l.cp || l.cp % l.cp_a2a != 0) {
      rd.fail(n["cp_a2a"], "layout.cp_a2a",
              "the all-to-all level's ranks must divide cp (" + std::to_string(l.cp) +
                  ") and lie between 2 and cp / 2 (the ring runs over cp / cp_a2a groups)");
    }
  } else if (hierarchical) {
    rd.fail(n["cp_comm"], "layout.cp_comm",
            "a2a+p2p needs layout.cp_a2a, the all-to-all level's ranks (Megatron's "
            "--hierarchical-context-parallel-sizes)");
  }
}

// Megatron-Core's --pipeline-model-parallel-layout. As Megatron-LM does, the layout's chunks give
// the virtual stages (chunks / pp) and an interleaved schedule where the file names neither.
void read_pipeline_layout(const Reader& rd, const YAML::Node& n, strategy::Layout& l) {
  const YAML::Node& node = n["pipeline_layout"];
  const std::string text = rd.scalar(node, "layout.pipeline_layout");
  l.pipeline_layout =
      rd.at(node, "layout.pipeline_layout", [&] { return strategy::parse_pipeline_layout(text); });
  const int chunks = static_cast<int>(l.pipeline_layout.decoder_layers.size());
  if (!n["virtual_stages"] && chunks % l.pp == 0) l.virtual_stages = chunks / l.pp;
  if (!n["schedule"] && l.virtual_stages > 1) l.schedule = strategy::PipelineSchedule::interleaved;
}

strategy::Layout read_layout(const Reader& rd, const YAML::Node& n) {
  rd.check_keys(n, "layout", interop::scenario_section_keys("layout"));
  strategy::Layout l;
  if (n["tp"]) l.tp = static_cast<int>(rd.positive_int(n["tp"], "layout.tp"));
  if (n["pp"]) l.pp = static_cast<int>(rd.positive_int(n["pp"], "layout.pp"));
  if (n["dp"]) l.dp = static_cast<int>(rd.positive_int(n["dp"], "layout.dp"));
  if (n["cp"]) l.cp = static_cast<int>(rd.positive_int(n["cp"], "layout.cp"));
  read_context_parallel_comm(rd, n, l);
  if (n["ep"]) l.ep = static_cast<int>(rd.positive_int(n["ep"], "layout.ep"));
  // Expert tensor parallelism: 1 (our default; Megatron's is tp) or tp, checked with the model.
  if (n["etp"]) l.etp = static_cast<int>(rd.positive_int(n["etp"], "layout.etp"));
  if (n["first_stage_layers"])
    l.first_stage_layers =
        static_cast<int>(rd.positive_int(n["first_stage_layers"], "layout.first_stage_layers"));
  if (n["last_stage_layers"])
    l.last_stage_layers =
        static_cast<int>(rd.positive_int(n["last_stage_layers"], "layout.last_stage_layers"));
  // Megatron-Core's flags of the same names (strategy::Layout::embedding_in_split).
  if (n["account_for_embedding_in_pipeline_split"])
    l.embedding_in_split = yes_no(rd, n["account_for_embedding_in_pipeline_split"],
                                  "layout.account_for_embedding_in_pipeline_split");
  if (n["account_for_loss_in_pipeline_split"])
    l.loss_in_split = yes_no(rd, n["account_for_loss_in_pipeline_split"],
                             "layout.account_for_loss_in_pipeline_split");
  if (n["data_parallel"]) {
    l.data_parallel =
        rd.choice(n["data_parallel"], "layout.data_parallel", strategy::data_parallel_names());
  }
  if (n["fsdp_version"]) {
    l.fsdp_version = rd.choice<int>(n["fsdp_version"], "layout.fsdp_version", {{"1", 1}, {"2", 2}});
    if (!strategy::is_fsdp(l.data_parallel)) {
      rd.fail(n["fsdp_version"], "layout.fsdp_version",
              "applies to data_parallel fsdp_full_shard or fsdp_shard_grad_op only");
    }
  }
  if (n["bucket_size"]) {
    l.bucket_size = rd.bytes(n["bucket_size"], "layout.bucket_size");
    if (l.bucket_size.count <= 0)
      rd.fail(n["bucket_size"], "layout.bucket_size", "must be positive");
  }
  if (n["sequence_parallel"]) {
    l.sequence_parallel = rd.choice<bool>(n["sequence_parallel"], "layout.sequence_parallel",
                                          {{"true", true}, {"false", false}});
  }
  if (n["schedule"]) {
    l.schedule = rd.choice(n["schedule"], "layout.schedule", strategy::pipeline_schedule_names());
  }
  if (n["virtual_stages"])
    l.virtual_stages =
        static_cast<int>(rd.positive_int(n["virtual_stages"], "layout.virtual_stages"));
  if (n["pipeline_layout"]) read_pipeline_layout(rd, n, l);
  if (n["order"]) {
    using strategy::Dim;
    // Innermost first; a three-dimension order places cp right after tp (Megatron's
    // tp-cp-ep-dp-pp).
    const std::string text = rd.scalar(n["order"], "layout.order");
    std::vector<Dim> dims;
    for (size_t start = 0; start <= text.size();) {
      const size_t end = std::min(text.find('-', start), text.size());
      const std::string d = text.substr(start, end - start);
      if (d == "tp")
        dims.push_back(Dim::tp);
      else if (d == "cp")
        dims.push_back(Dim::cp);
      else if (d == "dp")
        dims.push_back(Dim::dp);
      else if (d == "pp")
        dims.push_back(Dim::pp);
      else
        rd.fail(n["order"], "layout.order",
                "unknown dimension '" + d +
                    "'; write a permutation of tp, cp, dp, pp innermost first, e.g. tp-cp-dp-pp");
      start = end + 1;
    }
    if (dims.size() == 3 && std::find(dims.begin(), dims.end(), Dim::cp) == dims.end()) {
      dims.insert(std::find(dims.begin(), dims.end(), Dim::tp) + 1, Dim::cp);
    }
    std::vector<Dim> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp}) {
      rd.fail(n["order"], "layout.order",
              "'" + text +
                  "' is not a permutation of tp, dp, pp (and optionally cp), e.g. tp-cp-dp-pp");
    }
    std::copy(dims.begin(), dims.end(), l.order.begin());
  }
  return l;
}

// training.peft: parameter-efficient fine-tuning, Megatron-Bridge's `peft` config. method: lora
// (the only one modelled); rank (Megatron-Bridge's LoRA.dim), alpha, dropout and targets
// (Megatron-Core's module names) with Megatron-Bridge's defaults (models/lora_spec.h).
model::LoraSpec read_peft(const Reader& rd, const YAML::Node& n) {
  rd.check_keys(n, "training.peft", {"method", "rank", "alpha", "dropout", "targets"});
  rd.choice<int>(rd.require(n, "method", "training.peft"), "training.peft.method", {{"lora", 0}});
  model::LoraSpec lora;
  lora.rank = bounded_int(rd, rd.require(n, "rank", "training.peft"), "training.peft.rank", 1,
                          model::limits::max_rank);
  if (n["alpha"]) {
    lora.alpha = rd.number(n["alpha"], "training.peft.alpha");
    if (!cs::limits::within(cs::limits::kFactor, lora.alpha))
      rd.fail(n["alpha"], "training.peft.alpha",
              cs::limits::out_of_range(cs::limits::kFactor, n["alpha"].Scalar()));
  }
  if (n["dropout"]) lora.dropout = rd.fraction(n["dropout"], "training.peft.dropout");
  if (const YAML::Node targets = n["targets"]) {
    if (!targets.IsSequence() || targets.size() == 0)
      rd.fail(targets, "training.peft.targets",
              "expected a list of linear layers, e.g. [linear_qkv, linear_proj]");
    lora.targets.clear();
    for (size_t i = 0; i < targets.size(); ++i) {
      const std::string path = "training.peft.targets[" + std::to_string(i) + "]";
      const model::LoraTarget target = rd.choice(targets[i], path, model::lora_target_names());
      if (lora.adapts(target)) rd.fail(targets[i], path, "listed twice");
      lora.targets.push_back(target);
    }
  }
  return lora;
}

// training.grad_reduce_in_bf16 names a framework's switch: Megatron-Core's --grad-reduce-in-bf16,
// or FSDP2's reduce dtype (TorchTitan's parallelism.mixed_precision_reduce "bfloat16"). Other
// runs have neither.
void check_gradient_reduction(const Reader& rd, const YAML::Node& training, const Scenario& s,
                              model::Stack stack) {
  const YAML::Node key = training["grad_reduce_in_bf16"];
  if (!key || stack == model::Stack::megatron_core) return;
  const bool fsdp2 =
      strategy::data_parallel_flavour(s.layout.data_parallel).fsdp() && s.layout.fsdp_version == 2;
  if (fsdp2) return;
  rd.fail(key, "training.grad_reduce_in_bf16",
          "is Megatron-Core's --grad-reduce-in-bf16 or FSDP2's reduce dtype (TorchTitan's "
          "mixed_precision_reduce): applies to stack: megatron_core, or to a layout with "
          "data_parallel: fsdp_* and fsdp_version: 2 (this scenario's stack is " +
              std::string(model::to_string(stack)) + ", data_parallel " +
              std::string(strategy::data_parallel_flavour(s.layout.data_parallel).name) +
              ", fsdp_version " + std::to_string(s.layout.fsdp_version) + ")");
}

strategy::TrainingSpec read_training(const Reader& rd, const YAML::Node& n, model::Stack stack) {
  rd.check_keys(n, "training", interop::scenario_section_keys("training"));
  strategy::TrainingSpec t;
  t.stack = stack;
  t.global_batch =
      rd.positive_int(rd.require(n, "global_batch", "training"), "training.global_batch");
  t.micro_batch = rd.positive_int(rd.require(n, "micro_batch", "training"), "training.micro_batch");
  t.seq_len = rd.positive_int(rd.require(n, "seq_len", "training"), "training.seq_len");
  if (n["precision"]) {
    t.precision = rd.choice<model::Precision>(n["precision"], "training.precision",
                                              {{"fp32", model::Precision::fp32},
                                               {"amp_fp16", model::Precision::amp_fp16},
                                               {"amp_bf16", model::Precision::amp_bf16},
                                               {"mixed_fp16", model::Precision::mixed_fp16},
                                               {"mixed_bf16", model::Precision::mixed_bf16},
                                               {"tf32", model::Precision::tf32},
                                               {"fp8", model::Precision::fp8},
                                               {"fp8_rowwise", model::Precision::fp8_rowwise},
                                               {"mxfp8", model::Precision::mxfp8},
                                               {"nvfp4", model::Precision::nvfp4}});
  }
  if (n["attention"]) {
    t.attention = rd.choice<model::AttentionImpl>(
        n["attention"], "training.attention",
        {{"fused", model::AttentionImpl::fused}, {"eager", model::AttentionImpl::eager}});
  }
  if (n["attention_backend"]) {
    t.attention_kernel =
        rd.choice<ir::AttentionKernel>(n["attention_backend"], "training.attention_backend",
                                       name_value_pairs(attention_kernels()));
    if (t.attention_kernel != ir::AttentionKernel::cudnn &&
        t.attention != model::AttentionImpl::fused) {
      rd.fail(n["attention_backend"], "training.attention_backend",
              "names a fused kernel: applies to attention: fused only");
    }
  }
  if (n["recompute"]) {
    t.recompute = rd.choice<model::Recompute>(n["recompute"], "training.recompute",
                                              {{"none", model::Recompute::none},
                                               {"selective", model::Recompute::selective},
                                               {"full", model::Recompute::full},
                                               {"op_selective", model::Recompute::op_selective}});
  }
  if (n["op_sac_scaled_mm"]) {
    t.scaled_mm =
        rd.choice<model::ScaledMmSaving>(n["op_sac_scaled_mm"], "training.op_sac_scaled_mm",
                                         {{"saved", model::ScaledMmSaving::saved},
                                          {"recomputed", model::ScaledMmSaving::recomputed}});
    if (t.recompute != model::Recompute::op_selective) {
      rd.fail(n["op_sac_scaled_mm"], "training.op_sac_scaled_mm",
              "is what TorchTitan's per-op checkpointing does with low-precision GEMMs: applies "
              "to recompute: op_selective only (this scenario's recompute is " +
                  std::string(model::to_string(t.recompute)) + ")");
    }
  }
  if (n["optimizer"]) rd.choice<int>(n["optimizer"], "training.optimizer", {{"adamw", 0}});
  if (n["host_per_kernel"]) {
    const SimTime host = rd.duration(n["host_per_kernel"], "training.host_per_kernel");
    if (host.ps < 0 || host > SimTime::from_us(1000)) {
      rd.fail(n["host_per_kernel"], "training.host_per_kernel",
              "must be between 0 and 1ms (a kernel launch costs the host microseconds)");
    }
    t.host_per_kernel = host;
  }
  if (n["optimizer_impl"]) {
    t.optimizer_impl = rd.choice<model::OptimizerImpl>(
        n["optimizer_impl"], "training.optimizer_impl",
        {{"fused", model::OptimizerImpl::fused}, {"foreach", model::OptimizerImpl::foreach}});
  }
  if (n["compile_scope"]) {
    t.compile_scope =
        rd.choice(n["compile_scope"], "training.compile_scope", model::compile_scope_names());
    if (stack != model::Stack::torch_compile) {
      rd.fail(n["compile_scope"], "training.compile_scope",
              "says what torch.compile compiled: applies to stack: torch_compile only (this "
              "scenario's stack is " +
                  std::string(model::to_string(stack)) + ")");
    }
  }
  auto flag = [&](const char* key) {
    return rd.choice<bool>(n[key], std::string("training.") + key,
                           {{"true", true}, {"false", false}});
  };
  if (n["tp_comm_overlap"]) t.tp_comm_overlap = flag("tp_comm_overlap");
  if (n["overlap_param_gather"]) t.overlap_param_gather = flag("overlap_param_gather");
  if (n["grad_reduce_in_bf16"]) t.grad_reduce_in_bf16 = flag("grad_reduce_in_bf16");
  // Megatron's pipeline-exchange switches (strategy::TrainingSpec): no other stack has them.
  for (const char* key : {"overlap_p2p_comm", "scatter_gather_tensors_in_pipeline"}) {
    if (n[key] && stack != model::Stack::megatron_core) {
      rd.fail(n[key], std::string("training.") + key,
              "is a Megatron-LM pipeline switch: applies to stack: megatron_core only (this "
              "scenario's stack is " +
                  std::string(model::to_string(stack)) + ")");
    }
  }
  if (n["overlap_p2p_comm"]) t.overlap_p2p_comm = flag("overlap_p2p_comm");
  if (n["scatter_gather_tensors_in_pipeline"])
    t.scatter_gather_tensors_in_pipeline = flag("scatter_gather_tensors_in_pipeline");
  if (n["optimizer_moments"]) {
    t.bf16_optimizer_moments = rd.choice<bool>(n["optimizer_moments"], "training.optimizer_moments",
                                               {{"fp32", false}, {"bf16", true}});
    if (stack != model::Stack::megatron_core) {
      rd.fail(n["optimizer_moments"], "training.optimizer_moments",
              "bf16 moments are Megatron-Core's precision-aware optimizer "
              "(--use-precision-aware-optimizer): applies to stack: megatron_core only (this "
              "scenario's stack is " +
                  std::string(model::to_string(stack)) + ")");
    }
  }
  if (n["peft"]) t.lora = read_peft(rd, n["peft"]);
  // Gradient reduction is always overlapped with backward (buckets on their own stream); false
  // is refused rather than silently ignored.
  if (n["overlap_grad_reduce"] && !flag("overlap_grad_reduce")) {
    rd.fail(n["overlap_grad_reduce"], "training.overlap_grad_reduce",
            "only true is simulated (gradient buckets always reduce during backward)");
  }
  return t;
}

// moe: how MoE layers route tokens (strategy::MoeRouting); needs the model's experts and the
// layout's ep (imbalance is at most ep: every token sent to one rank).
strategy::MoeRouting read_moe_routing(const Reader& rd, const YAML::Node& n, const Scenario& s) {
  rd.check_keys(n, "moe", interop::scenario_section_keys("moe"));
  if (!s.model.moe.enabled())
    rd.fail(n, "moe",
            s.model.name + " has no experts; the moe section applies to mixture-of-experts models");
  strategy::MoeRouting r;
  if (n["capacity_factor"]) {
    r.capacity_factor = rd.number(n["capacity_factor"], "moe.capacity_factor");
    if (!(r.capacity_factor > 0 && r.capacity_factor <= 16)) {
      rd.fail(n["capacity_factor"], "moe.capacity_factor",
              std::string("expected a number in (0, 16] (") + limits::kCapacityFactorWhy + ")");
    }
  }
  if (n["pad_to_capacity"]) {
    r.pad_to_capacity = rd.choice<bool>(n["pad_to_capacity"], "moe.pad_to_capacity",
                                        {{"true", true}, {"false", false}});
    if (r.pad_to_capacity && !n["capacity_factor"])
      rd.fail(n["pad_to_capacity"], "moe.pad_to_capacity",
              "needs moe.capacity_factor (dropless routing has no capacity)");
  }
  if (n["dispatcher"]) {
    r.dispatcher =
        rd.choice<model::MoeDispatcher>(n["dispatcher"], "moe.dispatcher",
                                        {{"alltoall", model::MoeDispatcher::alltoall},
                                         {"allgather", model::MoeDispatcher::allgather}});
  }
  if (n["imbalance"]) {
    r.imbalance = rd.number(n["imbalance"], "moe.imbalance");
    if (!(r.imbalance >= 1 && r.imbalance <= s.layout.ep)) {
      rd.fail(n["imbalance"], "moe.imbalance",
              "expected a number in [1, ep = " + std::to_string(s.layout.ep) +
                  "] (the busiest EP rank's token copies over the mean; 1: balanced)");
    }
  }
  return r;
}

// `degraded:` a list of {gpu | node | nic_of_gpu: index, compute | bandwidth: factor}.
Degradation read_degradation(const Reader& rd, const YAML::Node& e, const std::string& path,
                             const Scenario& s) {
  using Target = Degradation::Target;
  rd.check_keys(e, path, {"gpu", "node", "nic_of_gpu", "compute", "bandwidth"});
  Degradation d;
  std::string what;
  for (const auto& [key, target] : {std::pair{"gpu", Target::gpu}, std::pair{"node", Target::node},
                                    std::pair{"nic_of_gpu", Target::nic_of_gpu}}) {
    if (!e[key]) continue;
    if (!what.empty())
      rd.fail(e, path,
              "give one of gpu, node or nic_of_gpu per entry, not " + what + " and " + key);
    what = key;
    d.target = target;
  }
  if (what.empty())
    rd.fail(e, path, "missing what is degraded: gpu: RANK, node: INDEX or nic_of_gpu: RANK");
  const bool node = d.target == Target::node;
  const int count = node ? s.nodes : s.gpus;
  const std::string index = rd.scalar(e[what], path + "." + what);
  const auto v = parse_integer(index);
  if (!v || *v < 0 || *v >= count)
    rd.fail(e[what], path + "." + what,
            "'" + index + "' is not a " + (node ? "node" : "GPU") + " of this cluster: it has " +
                std::to_string(count) + (node ? " node" : " GPU") + (count == 1 ? "" : "s") +
                ", numbered 0 to " + std::to_string(count - 1));
  d.index = static_cast<int>(*v);
  const bool nic = d.target == Target::nic_of_gpu;
  const std::string rate = nic ? "bandwidth" : "compute";
  const std::string other = nic ? "compute" : "bandwidth";
  if (e[other])
    rd.fail(e[other], path + "." + other,
            nic ? "a NIC is degraded in bandwidth, not compute (a slow GPU: gpu: RANK)"
                : "a GPU or node is degraded in compute, not bandwidth (a slow NIC: nic_of_gpu: "
                  "RANK)");
  const YAML::Node f = rd.require(e, rate, path);
  d.factor = rd.number(f, path + "." + rate);
  if (!(d.factor > 0 && d.factor <= 1))
    rd.fail(f, path + "." + rate,
            "expected a number in (0, 1], the fraction of its healthy " + rate + ", got '" +
                f.Scalar() + "'");
  return d;
}

std::vector<Degradation> read_degraded(const Reader& rd, const YAML::Node& n, const Scenario& s) {
  if (!n.IsSequence())
    rd.fail(n, "degraded",
            "expected a list such as [{gpu: 5, compute: 0.8}, {node: 1, compute: 0.9}, "
            "{nic_of_gpu: 3, bandwidth: 0.5}]");
  std::vector<Degradation> out;
  std::optional<topo::Topology> topology;  // built only to find NICs
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string path = "degraded[" + std::to_string(i) + "]";
    const Degradation d = read_degradation(rd, n[i], path, s);
    if (d.target == Degradation::Target::nic_of_gpu) {
      if (!topology) topology.emplace(build_topology(s));
      if (!topology->nic_of(d.index))
        rd.fail(n[i]["nic_of_gpu"], path + ".nic_of_gpu",
                "GPU " + std::to_string(d.index) + "'s node has no NIC (no network to degrade)");
    }
    out.push_back(d);
  }
  return out;
}

// `--set key=value`: the value replaces the key, or is added with the mappings on its way.
void apply_override(YAML::Node& root, const KeyOverride& o) {
  const std::string where = override_prefix(o);
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(where + "the value is not YAML (" + e.msg + ")");
  }
  YAML::Node at = root;
  std::string path;
  size_t from = 0;
  while (true) {
    const size_t dot = o.key.find('.', from);
    const std::string part = o.key.substr(from, dot == std::string::npos ? dot : dot - from);
    if (part.empty()) throw ScenarioError(where + "a key path has no empty part (write a.b.c)");
    if (dot == std::string::npos) {
      at[part] = value;
      return;
    }
    path += (path.empty() ? "" : ".") + part;
    if (!at[part] || at[part].IsNull()) at[part] = YAML::Node(YAML::NodeType::Map);
    if (!at[part].IsMap())
      throw ScenarioError(where + path + " is a single value or a list, not a mapping of keys");
    YAML::Node next = at[part];
    at.reset(next);
    from = dot + 1;
  }
}

void flatten(const YAML::Node& n, const std::string& path,
             std::map<std::string, std::string>& out) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it)
      flatten(it->second, (path.empty() ? "" : path + ".") + it->first.Scalar(), out);
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) flatten(n[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = n.IsScalar() ? n.Scalar() : "";
  }
}

YAML::Node load_with_overrides(const Reader& rd, const std::string& text,
                               const std::vector<KeyOverride>& overrides) {
  YAML::Node root = rd.load(text);
  if (!overrides.empty() && !root.IsMap()) return root;  // parse_scenario says what is wrong
  for (const KeyOverride& o : overrides) apply_override(root, o);
  return root;
}

}  // namespace

std::string read_scenario_text(const std::string& path) {
  try {
    return read_text_file(path, "scenario file", kMaxYamlFileBytes);
  } catch (const UserError& e) {
    throw ScenarioError(e.what());
  }
}

Scenario parse_scenario(const std::string& text, const std::string& file_name,
                        const std::vector<KeyOverride>& overrides) {
  Reader rd(file_name, overrides);
  const YAML::Node root = load_with_overrides(rd, text, overrides);
  if (!root.IsMap())
    throw ScenarioError(file_name +
                        ": expected a mapping with keys name, model, cluster, layout, training");
  rd.check_keys(root, "",
                {"name", "description", "model", "cluster", "network", "profile", "stack", "layout",
                 "training", "moe", "degraded", "run"});
  Scenario s;
  s.file = file_name;
  s.name = root["name"] ? rd.scalar(root["name"], "name") : file_name;
  s.model = read_model(rd, rd.require(root, "model", ""), file_name);
  read_cluster(rd, rd.require(root, "cluster", ""), s);
  if (s.gpus > kMaxGpus) {
    rd.fail(root["cluster"], "cluster",
            "a cluster of " + std::to_string(s.gpus) + " GPUs is above the limit of " +
                std::to_string(kMaxGpus) + " GPUs (" + limits::kMaxGpusWhy + ")");
  }
  if (root["network"]) read_network(rd, root["network"], s);
  if (root["degraded"]) s.degraded = read_degraded(rd, root["degraded"], s);
  if (root["profile"]) {
    // A shipped profile's name, or a file relative to the scenario file's folder.
    const std::string value = rd.scalar(root["profile"], "profile");
    s.profile = rd.at(root["profile"], "profile",
                      [&] { return load_profile(profile_file(value, file_name)); });
  }
  const YAML::Node layout_node = rd.require(root, "layout", "");
  s.layout = read_layout(rd, layout_node);
  const YAML::Node training_node = rd.require(root, "training", "");
  const model::Stack stack =
      root["stack"]
          ? rd.choice<model::Stack>(root["stack"], "stack", name_value_pairs(software_stacks()))
          : model::Stack::ideal;
  s.training = read_training(rd, training_node, stack);
  if (root["moe"]) s.training.moe = read_moe_routing(rd, root["moe"], s);
  if (root["run"]) s.run = read_run(rd, root["run"]);
  // The stack's overlap defaults (megatron_core: on, as NVIDIA's performance configurations set
  // them) where the layout admits them; a key in the file overrides them.
  const strategy::OverlapDefaults overlap = strategy::stack_overlap_defaults(s.layout, stack);
  if (!training_node["tp_comm_overlap"]) s.training.tp_comm_overlap = overlap.tp_comm_overlap;
  if (!training_node["overlap_param_gather"])
    s.training.overlap_param_gather = overlap.overlap_param_gather;
  if (!layout_node["bucket_size"])
    s.layout.bucket_size = strategy::stack_bucket_default(stack, s.training.precision);
  check_precision_on_gpu(rd, training_node, s);
  check_gradient_reduction(rd, training_node, s, stack);
  rd.at(layout_node, "layout", [&] {
    strategy::validate(s.layout, s.training, s.model, s.gpus);
    return 0;
  });
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<KeyOverride>& overrides) {
  return parse_scenario(read_scenario_text(path), path, overrides);
}

std::map<std::string, std::string> scenario_keys(const std::string& path,
                                                 const std::vector<KeyOverride>& overrides) {
  std::map<std::string, std::string> out;
  flatten(load_with_overrides(Reader(path), read_scenario_text(path), overrides), "", out);
  return out;
}

KeyOverride parse_override(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError("--set '" + text + "': expected KEY=VALUE with a dotted key (layout.tp=4)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string Degradation::describe() const {
  char factor_text[32];
  std::snprintf(factor_text, sizeof factor_text, "%gx", factor);
  const std::string i = std::to_string(index);
  switch (target) {
    case Target::gpu:
      return "gpu " + i + " compute " + factor_text;
    case Target::node:
      return "node " + i + " compute " + factor_text;
    case Target::nic_of_gpu:
      return "NIC of gpu " + i + " bandwidth " + factor_text;
  }
  return "";
}

topo::Topology build_topology(const Scenario& s) {
  topo::Topology t;
  if (!s.has_custom_cluster()) {
    t = topo::build_cluster(s.cluster);
  } else {
    for (const auto& d : s.devices) t.add_device(d.kind, d.name, d.node);
    for (const auto& l : s.links)
      t.add_link(t.find(l.from), t.find(l.to), l.kind, l.bandwidth, l.reverse_bandwidth, l.latency);
  }
  // A NIC two degraded GPUs share is scaled once, by the lower factor.
  std::map<topo::VertexId, double> nics;
  for (const Degradation& d : s.degraded) {
    if (d.target != Degradation::Target::nic_of_gpu) continue;
    const auto nic = t.nic_of(d.index);
    if (!nic) throw UserError("degraded: GPU " + std::to_string(d.index) + "'s node has no NIC");
    auto [it, fresh] = nics.emplace(*nic, d.factor);
    if (!fresh) it->second = std::min(it->second, d.factor);
  }
  for (const auto& [nic, factor] : nics) t.scale_links_of(nic, factor);
  return t;
}

std::vector<double> compute_rates(const Scenario& s, const topo::Topology& t) {
  std::vector<double> rates;
  for (const Degradation& d : s.degraded) {
    if (d.target == Degradation::Target::nic_of_gpu) continue;
    if (rates.empty()) rates.assign(static_cast<size_t>(t.gpu_count()), 1.0);
    for (int r = 0; r < t.gpu_count(); ++r) {
      const bool hit =
          d.target == Degradation::Target::gpu ? r == d.index : t.node_of(r) == d.index;
      if (hit) rates[static_cast<size_t>(r)] = std::min(rates[static_cast<size_t>(r)], d.factor);
    }
  }
  return rates;
}

}  // namespace cs::scenario
