#include "strategies/layout.h"

#include <algorithm>
#include <cstdio>

#include "common/checked.h"
#include "common/error.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"

namespace cs::strategy {

std::string_view to_string(DataParallel d) { return data_parallel_flavour(d).name; }

bool is_fsdp(DataParallel d) { return data_parallel_flavour(d).fsdp(); }

int zero_stage(DataParallel d) { return data_parallel_flavour(d).zero_stage; }

std::string_view to_string(PipelineSchedule s) { return pipeline_schedule_flavour(s).name; }

namespace {
int size_of(const Layout& l, Dim d) {
  switch (d) {
    case Dim::tp:
      return l.tp;
    case Dim::cp:
      return l.cp;
    case Dim::dp:
      return l.dp;
    case Dim::pp:
      return l.pp;
  }
  return 1;
}
int& index_of(Coord& c, Dim d) {
  switch (d) {
    case Dim::tp:
      return c.tp;
    case Dim::cp:
      return c.cp;
    case Dim::dp:
      return c.dp;
    case Dim::pp:
      break;
  }
  return c.pp;
}
std::string_view name_of(Dim d) {
  switch (d) {
    case Dim::tp:
      return "tp";
    case Dim::cp:
      return "cp";
    case Dim::dp:
      return "dp";
    case Dim::pp:
      break;
  }
  return "pp";
}
}  // namespace

Coord coord_of(const Layout& l, int rank) {
  Coord c;
  for (Dim d : l.order) {
    index_of(c, d) = rank % size_of(l, d);
    rank /= size_of(l, d);
  }
  return c;
}

int rank_of(const Layout& l, Coord c) {
  int rank = 0;
  for (auto it = l.order.rbegin(); it != l.order.rend(); ++it)
    rank = rank * size_of(l, *it) + index_of(c, *it);
  return rank;
}

std::vector<uint32_t> ranks_along(const Layout& l, Coord at, Dim d) {
  std::vector<uint32_t> ranks;
  for (int i = 0; i < size_of(l, d); ++i) {
    index_of(at, d) = i;
    ranks.push_back(static_cast<uint32_t>(rank_of(l, at)));
  }
  return ranks;
}

std::vector<uint32_t> ranks_along(const Layout& l, Coord at, std::initializer_list<Dim> dims) {
  std::vector<uint32_t> ranks{static_cast<uint32_t>(rank_of(l, at))};
  for (Dim d : dims) {
    std::vector<uint32_t> wider;
    for (uint32_t r : ranks) {
      for (uint32_t x : ranks_along(l, coord_of(l, static_cast<int>(r)), d)) wider.push_back(x);
    }
    ranks = std::move(wider);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

namespace {
// Position of `at` in its stage's tp x cp x dp block, numbered as the dense grid's order does
// (innermost first, pp skipped), and back.
int stage_local_index(const Layout& l, Coord at) {
  int local = 0;
  for (auto it = l.order.rbegin(); it != l.order.rend(); ++it) {
    if (*it != Dim::pp) local = local * size_of(l, *it) + index_of(at, *it);
  }
  return local;
}
Coord from_stage_local(const Layout& l, int local, int pp) {
  Coord c;
  c.pp = pp;
  for (Dim d : l.order) {
    if (d == Dim::pp) continue;
    index_of(c, d) = local % size_of(l, d);
    local /= size_of(l, d);
  }
  return c;
}
// The ranks whose expert-grid index differs from `at`'s only in the digit of size `extent` at
// local stride `stride` (etp: 1, etp; ep: etp, ep; edp: etp ep, edp).
std::vector<uint32_t> expert_grid_group(const Layout& l, Coord at, int stride, int extent) {
  const int local = stage_local_index(l, at);
  const int base = local - (local / stride % extent) * stride;
  std::vector<uint32_t> ranks;
  for (int i = 0; i < extent; ++i)
    ranks.push_back(
        static_cast<uint32_t>(rank_of(l, from_stage_local(l, base + i * stride, at.pp))));
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}
}  // namespace

int expert_data_parallel_size(const Layout& l) { return l.tp * l.cp * l.dp / (l.etp * l.ep); }

std::vector<uint32_t> expert_parallel_group(const Layout& l, Coord at) {
  return expert_grid_group(l, at, l.etp, l.ep);
}

std::vector<uint32_t> expert_tensor_parallel_group(const Layout& l, Coord at) {
  return expert_grid_group(l, at, 1, l.etp);
}

std::vector<uint32_t> expert_tensor_and_expert_parallel_group(const Layout& l, Coord at) {
  return expert_grid_group(l, at, 1, l.etp * l.ep);
}

std::vector<uint32_t> expert_data_parallel_group(const Layout& l, Coord at) {
  return expert_grid_group(l, at, l.etp * l.ep, expert_data_parallel_size(l));
}

int64_t numel_per_rank(const model::ParameterTensor& p, const Layout& l) {
  return p.numel_per_rank(l.tp, l.etp);
}

// Layers that do not divide: the middle stages take ceil(L / pp) each and the first and last
// share the rest (they also hold the embedding and the head), as Meta split Llama 3 405B's 126
// layers over 16 stages (7, 8 x 14, 7). When that leaves the ends empty, the first L mod pp
// middle stages take one layer more than the others instead.
std::vector<int> default_stage_split(int pp, int layers) {
  std::vector<int> counts(static_cast<size_t>(pp), layers / pp);
  const int per = (layers + pp - 1) / pp, rest = layers - per * (pp - 2);
  if (pp > 2 && rest >= 2) {
    for (auto& c : counts) c = per;
    counts.front() = rest / 2;
    counts.back() = rest - rest / 2;
    return counts;
  }
  for (int s = 0; s < layers % pp; ++s)
    ++counts[static_cast<size_t>(pp > 2 ? 1 + s % (pp - 2) : s)];
  return counts;
}

namespace {
bool ends_counted(const Layout& l) { return l.embedding_in_split || l.loss_in_split; }

// Megatron-Core's split with the embedding and/or the loss counted as layers
// (get_num_layers_to_build): (layers + counted) / chunks per chunk, the first chunk one fewer for
// the embedding, the last one fewer for the loss.
std::vector<int> split_counting_ends(const Layout& l, int layers) {
  const int chunks = l.pp * l.virtual_stages;
  const int counted = layers + int{l.embedding_in_split} + int{l.loss_in_split};
  std::vector<int> counts(static_cast<size_t>(chunks), counted / chunks);
  if (l.embedding_in_split) --counts.front();
  if (l.loss_in_split) --counts.back();
  return counts;
}
}  // namespace

std::vector<int> stage_layer_counts(const Layout& l, int layers) {
  std::vector<int> counts(static_cast<size_t>(l.pp), 0);
  if (ends_counted(l) || l.explicit_split()) {
    const std::vector<int> chunks = chunk_layer_counts(l, layers);
    for (size_t g = 0; g < chunks.size(); ++g) counts[g % counts.size()] += chunks[g];
    return counts;
  }
  if (l.pp == 1) {
    counts[0] = layers;
    return counts;
  }
  if (l.first_stage_layers == 0 && l.last_stage_layers == 0 && layers % l.pp != 0)
    return default_stage_split(l.pp, layers);
  int rest = layers, middle = l.pp;
  if (l.first_stage_layers > 0)
    counts.front() = l.first_stage_layers, rest -= l.first_stage_layers, --middle;
  if (l.last_stage_layers > 0)
    counts.back() = l.last_stage_layers, rest -= l.last_stage_layers, --middle;
  for (size_t s = 0; s < counts.size(); ++s) {
    const bool set =
        (s == 0 && l.first_stage_layers > 0) || (s + 1 == counts.size() && l.last_stage_layers > 0);
    if (!set) counts[s] = middle > 0 ? rest / middle : 0;
  }
  return counts;
}

std::vector<int> chunk_layer_counts(const Layout& l, int layers) {
  if (l.explicit_split()) return l.pipeline_layout.decoder_layers;
  if (ends_counted(l)) return split_counting_ends(l, layers);
  if (l.virtual_stages == 1) return stage_layer_counts(l, layers);
  const int chunks = l.pp * l.virtual_stages;
  const int base = layers / chunks;
  std::vector<int> counts(static_cast<size_t>(chunks), base);
  int extra = layers % chunks, given = base;
  for (int g = 1; g + 1 < chunks; ++g) {
    if (extra > 0) ++counts[static_cast<size_t>(g)], --extra;
    given += counts[static_cast<size_t>(g)];
  }
  counts.back() = layers - given;
  return counts;
}

std::string stage_split_string(const Layout& l, int layers) {
  if (l.pp == 1) return "";
  const bool interleaved = l.virtual_stages > 1;
  const std::vector<int> counts = chunk_layer_counts(l, layers);
  if (std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; })) return "";
  std::string out = interleaved ? "layers per model chunk " : "layers per stage ";
  for (size_t i = 0; i < counts.size();) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    out += (i ? ", " : "") + (j - i > 1 ? std::to_string(counts[i]) + " x " + std::to_string(j - i)
                                        : std::to_string(counts[i]));
    i = j;
  }
  if (l.explicit_split()) {
    out +=
        " (pipeline_layout " + format_pipeline_layout(counts, l.pipeline_layout.mtp_layers) + ")";
  } else if (ends_counted(l)) {
    out += std::string(" (the ") +
           (l.embedding_in_split && l.loss_in_split ? "embedding and the loss"
            : l.embedding_in_split                  ? "embedding"
                                                    : "loss") +
           " counted as layers of the split)";
  } else if (interleaved) {
    out += " (default split, TorchTitan's: " + std::to_string(layers) +
           " layers do not divide by pp x virtual_stages " +
           std::to_string(l.pp * l.virtual_stages) + ")";
  } else if (l.first_stage_layers == 0 && l.last_stage_layers == 0) {
    out += " (default split: " + std::to_string(layers) + " layers do not divide by pp " +
           std::to_string(l.pp) + "; set first_stage_layers / last_stage_layers to choose)";
  }
  return out;
}

std::string order_string(const Layout& l) {
  std::string s;
  for (Dim d : l.order) {
    if (d == Dim::cp && l.cp == 1) continue;  // "tp-dp-pp" where there is no context parallelism
    s += std::string(s.empty() ? "" : "-") + std::string(name_of(d));
  }
  return s;
}

namespace {

std::string s(int64_t v) { return std::to_string(v); }

// Every dimension in range, their product the cluster's GPUs, the batch split into micro-batches.
void check_sizes(const Layout& l, const TrainingSpec& t, int gpus) {
  constexpr int kMaxDim = 1 << 20;  // no dimension of a real cluster exceeds a million GPUs
  for (auto [name, v] : {std::pair{"tp", l.tp},
                         {"pp", l.pp},
                         {"dp", l.dp},
                         {"cp", l.cp},
                         {"ep", l.ep},
                         {"etp", l.etp}}) {
    if (v < 1 || v > kMaxDim)
      throw UserError(std::string(name) + " " + s(v) + " is out of range [1, " + s(kMaxDim) + "]");
  }
  const int64_t product = int64_t{l.tp} * l.cp * l.pp * l.dp;
  if (product != gpus) {
    throw UserError("tp x pp x dp" + std::string(l.cp > 1 ? " x cp" : "") + " = " + s(l.tp) +
                    " x " + s(l.pp) + " x " + s(l.dp) + (l.cp > 1 ? " x " + s(l.cp) : "") + " = " +
                    s(product) + " does not match the cluster's " + s(gpus) +
                    " GPUs; choose sizes whose product is " + s(gpus));
  }
  if (t.micro_batch < 1 || t.global_batch < 1 || t.seq_len < 1)
    throw UserError("global_batch, micro_batch and seq_len must be positive");
  // Checked: micro_batch x dp wrapping to 0 was divided by (SIGFPE).
  const int64_t replica_batch = checked_mul(t.micro_batch, l.dp, "micro_batch x dp");
  if (replica_batch > t.global_batch || t.global_batch % replica_batch != 0) {
    throw UserError("global_batch " + s(t.global_batch) +
                    " is not a multiple of micro_batch x dp = " + s(t.micro_batch) + " x " +
                    s(l.dp));
  }
}

void check_graph_size(const model::ModelSpec& m, int64_t micro_batches) {
  // Resource guard: one step's graph holds at least ~32 tasks per layer per micro-batch on each
  // pipeline stage's representative rank (GPT-2 Large DDP: 4690 tasks / 2 ranks / 36 layers /
  // 2 micro-batches); refused above kMaxTasks rather than exhausting memory while building it.
  constexpr double kTasksPerLayerMicroBatch = 32;
  constexpr double kMaxTasks = 5e7;  // ~10 GB of graph; the largest shipped scenario builds ~1e6
  const double tasks = static_cast<double>(micro_batches) * m.layers * kTasksPerLayerMicroBatch;
  if (tasks > kMaxTasks) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "this layout would create %.1e tasks (%lld micro-batches x %d layers x ~%g tasks "
                  "each); the limit is %.0e: "
                  "use a larger micro_batch or dp, or a smaller global_batch",
                  tasks, static_cast<long long>(micro_batches), m.layers, kTasksPerLayerMicroBatch,
                  kMaxTasks);
    throw UserError(text);
  }
}

void check_tensor_and_sequence_parallel(const Layout& l, const TrainingSpec& t,
                                        const model::ModelSpec& m) {
  if (l.tp > 1) {
    if (m.family == model::Family::mlp)
      throw UserError("tensor parallelism needs a transformer model; " + m.name +
                      " is an MLP (use tp: 1)");
    if (m.heads % l.tp != 0 || m.ffn_hidden % l.tp != 0) {
      throw UserError("tp " + s(l.tp) + " must divide " + m.name + "'s attention heads (" +
                      s(m.heads) + ") and ffn_hidden (" + s(m.ffn_hidden) + ")");
    }
    if (m.kv_heads >= l.tp && m.kv_heads % l.tp != 0) {
      throw UserError("tp " + s(l.tp) + " must divide " + m.name + "'s KV heads (" + s(m.kv_heads) +
                      ")");
    }
  }
  if (l.sequence_parallel) {
    if (l.tp < 2)
      throw UserError(
          "sequence_parallel needs tp > 1 (it shards what tensor parallelism replicates)");
    if (t.seq_len % l.tp != 0)
      throw UserError("sequence_parallel needs seq_len (" + s(t.seq_len) + ") divisible by tp (" +
                      s(l.tp) + ")");
  }
}

void check_context_parallel(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m) {
  // Not simulated yet: refuse rather than print a step that ignores them.
  if (l.cp > 1) {
    if (m.family == model::Family::mlp)
      throw UserError("context parallelism needs a transformer model; " + m.name +
                      " is an MLP (use cp: 1)");
    // Load-balanced causal ring attention cuts the sequence into 2 x cp chunks.
    if (t.seq_len % (2 * l.cp) != 0)
      throw UserError("cp " + s(l.cp) + " needs seq_len (" + s(t.seq_len) +
                      ") divisible by 2 x cp = " + s(2 * l.cp));
    if (l.sequence_parallel && (t.seq_len / l.cp) % l.tp != 0)
      throw UserError("sequence_parallel with cp needs seq_len / cp divisible by tp");
  }
}

// Expert settings need experts; ep and etp split them by Megatron-Core's expert grid.
void check_experts(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m) {
  if (l.ep > 1 && !m.moe.enabled())
    throw UserError("ep " + s(l.ep) + " needs a mixture-of-experts model; " + m.name +
                    " has no experts (use ep: 1)");
  if (l.etp > 1 && !m.moe.enabled())
    throw UserError("etp " + s(l.etp) + " needs a mixture-of-experts model; " + m.name +
                    " has no experts (use etp: 1)");
  if (l.etp != 1 && l.etp != l.tp) {
    throw UserError("etp " + s(l.etp) +
                    " is not simulated: use etp: 1 (whole experts on each rank) or etp: " +
                    s(l.tp) + " (= tp, experts split like the dense MLP)");
  }
  if (!m.moe.enabled() &&
      (t.moe.capacity_factor != 0 || t.moe.imbalance != 1.0 || t.moe.pad_to_capacity)) {
    throw UserError("moe routing settings need a mixture-of-experts model; " + m.name +
                    " has no experts");
  }
  if (!m.moe.enabled()) return;
  // Megatron-Core's expert grid re-splits each stage's tp x cp x dp ranks as etp x ep x edp.
  const int64_t block = int64_t{l.tp} * l.cp * l.dp;
  if (block % (int64_t{l.ep} * l.etp) != 0) {
    throw UserError("ep x etp = " + s(l.ep) + " x " + s(l.etp) +
                    " must divide tp x cp x dp = " + s(block) +
                    ": experts are split over each pipeline stage's tp x cp x dp ranks "
                    "(Megatron-Core's expert grid)");
  }
  if (m.moe.experts % l.ep != 0)
    throw UserError("ep " + s(l.ep) + " must divide " + m.name + "'s " + s(m.moe.experts) +
                    " experts");
  if (m.moe.expert_ffn_hidden % l.etp != 0) {
    throw UserError("etp " + s(l.etp) + " must divide " + m.name + "'s expert_ffn_hidden (" +
                    s(m.moe.expert_ffn_hidden) + ")");
  }
  if (m.moe.shared_ffn_hidden % l.tp != 0) {
    throw UserError("tp " + s(l.tp) + " must divide " + m.name + "'s shared_ffn_hidden (" +
                    s(m.moe.shared_ffn_hidden) + ")");
  }
  if (l.tp > 1 && !l.sequence_parallel) {
    throw UserError(m.name +
                    " has MoE layers: with tp > 1 they need sequence_parallel: true "
                    "(Megatron-Core asserts it: each "
                    "TP rank routes and dispatches its own sequence shard)");
  }
  if (!(t.moe.imbalance >= 1.0 && t.moe.imbalance <= l.ep)) {
    throw UserError("moe.imbalance " + std::to_string(t.moe.imbalance) +
                    " is out of range [1, ep = " + s(l.ep) +
                    "]: the busiest EP rank's token copies over the mean (1: balanced; ep: every "
                    "token to one rank)");
  }
  if (!(t.moe.capacity_factor == 0 || (t.moe.capacity_factor > 0 && t.moe.capacity_factor <= 16))) {
    throw UserError("moe.capacity_factor " + std::to_string(t.moe.capacity_factor) +
                    " is out of range (0, 16] (leave it unset for dropless routing)");
  }
  if (t.moe.pad_to_capacity && t.moe.capacity_factor == 0)
    throw UserError(
        "moe.pad_to_capacity needs moe.capacity_factor (dropless routing has no capacity)");
  if (std::string why = data_parallel_flavour(l.data_parallel).expert_parallel_refusal(l);
      !why.empty())
    throw UserError(why);
}

// LoRA's frozen weights are modelled under the flavours that keep them whole (DDP, ZeRO-1/2:
// Megatron's DDP and distributed optimizer); FSDP's units would gather and reshard them.
void check_lora(const Layout& l, const TrainingSpec& t) {
  if (t.lora.enabled() && is_fsdp(l.data_parallel)) {
    throw UserError("LoRA with " + std::string(to_string(l.data_parallel)) +
                    " is not modelled: use ddp, zero1 or zero2 (Megatron's DDP or distributed "
                    "optimizer)");
  }
}

void check_overlap(const Layout& l, const TrainingSpec& t) {
  if (t.tp_comm_overlap && (l.tp < 2 || !l.sequence_parallel)) {
    throw UserError(
        "tp_comm_overlap needs tp > 1 and sequence_parallel: true (it pipelines SP's all-gather "
        "and reduce-scatter with the GEMMs)");
  }
  if (t.tp_comm_overlap && t.stack == model::Stack::pytorch_eager) {
    throw UserError(
        "tp_comm_overlap under stack pytorch_eager: PyTorch's async TP is a torch.compile pass "
        "(TorchTitan refuses it without compile); use stack torch_compile");
  }
  if (t.overlap_param_gather &&
      !data_parallel_flavour(l.data_parallel).admits_overlap_param_gather()) {
    throw UserError(
        "overlap_param_gather needs a sharded optimizer (zero1 or zero2); DDP has no parameter "
        "all-gather");
  }
}

// Megatron-Core's split counting the embedding and/or the loss as layers: their sum with the
// decoder layers divides by the model chunks (TransformerConfig.__post_init__ asserts it), not
// with first/last_stage_layers (it refuses both). At one counted layer a chunk, the first chunk
// holds only the embedding and the last only the output head and loss: Megatron-Core builds them
// with no decoder layer (transformer_block.py get_num_layers_to_build asserts only >= 0), as
// Megatron-Bridge's Llama 3.1 405B recipes on PP 16 x VP 8 do.
void check_split_counting_ends(const Layout& l, const model::ModelSpec& m, int64_t chunks) {
  if (m.family == model::Family::mlp)
    throw UserError("account_for_embedding/loss_in_pipeline_split need a transformer model; " +
                    m.name + " is an MLP");
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
    throw UserError(
        "first_stage_layers / last_stage_layers cannot be set with "
        "account_for_embedding/loss_in_pipeline_split (Megatron-Core refuses both)");
  const int64_t counted = int64_t{m.layers} + l.embedding_in_split + l.loss_in_split;
  if (counted % chunks != 0 || counted / chunks < 1) {
    throw UserError(m.name + "'s " + s(m.layers) + " layers with the embedding or loss counted (" +
                    s(counted) + ") must divide by pp x virtual_stages = " + s(chunks) +
                    ", at least 1 a chunk");
  }
}

// An explicit pipeline layout holds every decoder and MTP layer of the model, one entry per model
// chunk, and is the whole split (Megatron-LM refuses it beside --decoder-first/last-pipeline-num-
// layers and the ends-counted flags; transformer_config.py). A chunk may hold no decoder layer, as
// DeepSeek-V3's "Et|(tt|)*30mL" last chunk (MTP and the loss only).
void check_explicit_split(const Layout& l, const model::ModelSpec& m, int64_t chunks) {
  const PipelineLayerLayout& p = l.pipeline_layout;
  const std::string text =
      "pipeline_layout \"" + format_pipeline_layout(p.decoder_layers, p.mtp_layers) + "\"";
  if (m.family == model::Family::mlp)
    throw UserError(text + " needs a transformer model; " + m.name + " is an MLP");
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0 || ends_counted(l))
    throw UserError(
        text +
        " is the whole split: it cannot be set with first_stage_layers, "
        "last_stage_layers or account_for_embedding/loss_in_pipeline_split (Megatron-LM "
        "refuses them together)");
  if (std::ssize(p.decoder_layers) != chunks)
    throw UserError(text + " has " + s(std::ssize(p.decoder_layers)) +
                    " model chunks; pp x virtual_stages = " + s(chunks) +
                    " needs one entry (between '|') per chunk");
  int64_t total = 0;
  for (int c : p.decoder_layers) total += c;
  if (total != m.layers)
    throw UserError(text + " places " + s(total) + " decoder layers (t); " + m.name + " has " +
                    s(m.layers));
  if (p.mtp_layers != m.mtp_depth)
    throw UserError(text + " places " + s(p.mtp_layers) + " MTP layers (m); " + m.name + " has " +
                    s(m.mtp_depth) + " (model.mtp_depth)");
}

// The schedule's own constraints, the stages' layers, and the flavour's under a pipeline.
void check_pipeline(const Layout& l, const model::ModelSpec& m, int64_t micro_batches) {
  if (l.virtual_stages < 1) throw UserError("virtual_stages must be at least 1");
  if (std::string why = pipeline_schedule_flavour(l.schedule).refusal(l, micro_batches);
      !why.empty())
    throw UserError(why);
  // Checked: pp x virtual_stages wrapping to 0 was divided by (SIGFPE).
  const int64_t chunks = checked_mul(l.pp, l.virtual_stages, "pp x virtual_stages");
  const bool uneven = l.first_stage_layers > 0 || l.last_stage_layers > 0;
  if (l.first_stage_layers < 0 || l.last_stage_layers < 0)
    throw UserError("first_stage_layers and last_stage_layers must be at least 1 (0: even split)");
  if (l.explicit_split()) {
    check_explicit_split(l, m, chunks);
  } else if (ends_counted(l)) {
    check_split_counting_ends(l, m, chunks);
  } else if (uneven || (l.pp > 1 && l.virtual_stages == 1 && m.layers % l.pp != 0)) {
    if (l.pp < 2) throw UserError("first_stage_layers / last_stage_layers need pp > 1");
    if (l.virtual_stages > 1) {
      throw UserError(
          m.name + "'s " + s(m.layers) +
          " layers with uneven stages: the interleaved schedule needs pp x virtual_stages = " +
          s(chunks) + " dividing the layers; use virtual_stages: 1 with first/last_stage_layers");
    }
    const std::vector<int> counts = stage_layer_counts(l, m.layers);
    int64_t total = 0;
    for (int c : counts) total += c;
    const int middle = l.pp - (l.first_stage_layers > 0) - (l.last_stage_layers > 0);
    if (total != m.layers || *std::min_element(counts.begin(), counts.end()) < 1) {
      throw UserError(
          "first_stage_layers " + s(l.first_stage_layers) + " and last_stage_layers " +
          s(l.last_stage_layers) + " leave " +
          s(m.layers - l.first_stage_layers - l.last_stage_layers) + " of " + m.name + "'s " +
          s(m.layers) + " layers for " + s(middle) +
          " other stages; each stage needs at least one layer and the rest must divide evenly");
    }
  } else if (l.pp > 1 && chunks > m.layers) {
    throw UserError(
        m.name + "'s " + s(m.layers) + " layers cannot fill pp x virtual_stages = " + s(chunks) +
        " model chunks (each needs a layer); choose pp x virtual_stages of at most " + s(m.layers));
  }
  if (std::string why = data_parallel_flavour(l.data_parallel).pipeline_refusal(l); !why.empty())
    throw UserError(why);
}

}  // namespace

void validate(const Layout& l, const TrainingSpec& t, const model::ModelSpec& m, int gpus) {
  check_sizes(l, t, gpus);
  const int64_t micro_batches = t.accumulation(l);
  check_graph_size(m, micro_batches);
  model::check_sequence_fits(m, t.seq_len,
                             "seq_len");  // beyond a rotary model's context: the report says so
  if (l.bucket_size.count <= 0) throw UserError("bucket_size must be positive");
  check_tensor_and_sequence_parallel(l, t, m);
  check_context_parallel(l, t, m);
  check_experts(l, t, m);
  check_lora(l, t);
  check_overlap(l, t);
  check_pipeline(l, m, micro_batches);
}

OverlapDefaults admitted_overlap(const Layout& l) {
  return {l.tp > 1 && l.sequence_parallel,
          data_parallel_flavour(l.data_parallel).admits_overlap_param_gather()};
}

OverlapDefaults stack_overlap_defaults(const Layout& l, model::Stack stack) {
  const model::StackTraits& t = model::stack_traits(stack);
  const OverlapDefaults admitted = admitted_overlap(l);
  return {t.tp_comm_overlap && admitted.tp_comm_overlap,
          t.overlap_param_gather && admitted.overlap_param_gather};
}

bool pipeline_p2p_blocks(const Layout& l, const TrainingSpec& t) {
  if (l.pp == 1) return false;
  if (l.schedule == PipelineSchedule::interleaved)
    return t.stack == model::Stack::megatron_core && !t.overlap_p2p_comm;
  if (l.schedule != PipelineSchedule::one_f_one_b) return false;
  return t.stack == model::Stack::megatron_core || t.stack == model::Stack::deepspeed;
}

bool pipeline_scatter_gather(const Layout& l, const TrainingSpec& t) {
  if (l.pp == 1 || l.tp == 1) return false;
  if (t.stack == model::Stack::deepspeed) return true;
  return t.stack == model::Stack::megatron_core && t.scatter_gather_tensors_in_pipeline &&
         !l.sequence_parallel;
}

Bytes pipeline_boundary_tensor_bytes(const model::ModelSpec& m, const Layout& l,
                                     const TrainingSpec& t) {
  const int64_t h = m.hidden, ab = t.precision_info().activation_bytes;
  if (m.family == model::Family::mlp) return {t.micro_batch * h * ab};
  const int64_t tokens = t.micro_batch * t.seq_len / l.cp;
  return {tokens * h * ab / (l.sequence_parallel ? l.tp : 1)};
}

Bytes pipeline_exchange_bytes(const model::ModelSpec& m, const Layout& l, const TrainingSpec& t) {
  const Bytes whole = pipeline_boundary_tensor_bytes(m, l, t);
  return pipeline_scatter_gather(l, t) ? Bytes{whole.count / l.tp} : whole;
}

Bytes stack_bucket_default(model::Stack stack, model::Precision precision) {
  if (stack != model::Stack::deepspeed) return Layout{}.bucket_size;
  constexpr int64_t kDeepSpeedReduceBucketElements = 500'000'000;
  return Bytes{kDeepSpeedReduceBucketElements * model::gradient_bytes(precision, stack, false)};
}

}  // namespace cs::strategy
