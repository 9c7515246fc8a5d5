// The physical bounds on every quantity a user can give (scenario, profile, flag, importer), in one
// table: each with its unit and the reason for it. Values outside are refused with that reason
// instead of becoming negative busy times, wrapped clocks or "inf" bandwidths downstream. The
// bounds are generous (no real hardware or run comes near them); what they keep out is arithmetic
// that cannot be right.
#pragma once

#include <cstdint>
#include <string>

namespace cs::limits {

struct PhysicalBound {
  double lo, hi;     // accepted: lo <= value <= hi
  const char* what;  // "a bandwidth"
  const char* text;  // the range in the unit a user writes ("1 B/s and 1 PB/s")
  const char* why;   // the reason for the bound
};

// Below 1 B/s one message of a few MiB outlasts the clock; no link, memory or NIC moves 10 PB/s
// (HBM3e: ~8 TB/s per GPU, NVLink 5: 900 GB/s per direction). Readers check tighter ranges per
// kind of link on top (scenario.cpp's NVLink, PCIe, NIC and HBM ranges).
inline constexpr PhysicalBound kBandwidth{
    1, 1e16, "a bandwidth", "1 B/s and 10 PB/s",
    "slower outlasts the simulator's clock; faster is beyond any link or memory built"};
// A latency, a per-kernel host cost or any single duration: at most an hour. The clock is integer
// picoseconds (int64: 106 days), and a step is a sum of many such terms.
inline constexpr PhysicalBound kDuration{
    0, 3600, "a duration", "0 and 1 hour",
    "one latency or overhead of more than an hour is not a measurement, and sums of them must stay "
    "within the clock's 106 days"};
// Sizes below 2^62 B (4 EiB): sums and products by small counts stay within 64-bit byte counts.
inline constexpr PhysicalBound kBytes{0, 4611686018427387904.0, "a size", "0 and 2^62 B (4 EiB)",
                                      "larger sizes overflow 64-bit byte counts when added up"};
// 1 MFLOP/s to 100 EFLOP/s: a GB300 is ~15 PFLOP/s dense FP4, a whole NVL72 rack 1.4 EFLOP/s
// (datasheets quote racks); the scenario reader bounds one GPU's peak more tightly.
inline constexpr PhysicalBound kFlopsRate{1e6, 1e20, "a compute rate", "1 MFLOP/s and 100 EFLOP/s",
                                          "no device or rack computes outside this range"};
// A buffer, bucket or memory size a flag gives (a gradient bucket, a memory headroom): at most
// 1 PiB, far below 64-bit byte counts (8 EiB).
inline constexpr int64_t kMaxBufferBytes = int64_t{1} << 50;
inline constexpr const char* kMaxBufferBytesWhy =
    "above any GPU's memory, gradient bucket or message";

// Multiplicative factors a user gives (slow-downs, bandwidth scales): finite and not absurd.
inline constexpr PhysicalBound kFactor{1e-6, 1e6, "a factor", "1e-6 and 1e6",
                                       "a factor outside this range is not a physical scaling"};

// GPUs in one simulated cluster: twice the largest announced training cluster (~100k GPUs).
inline constexpr int64_t kMaxGpus = 131072;
inline constexpr const char* kMaxGpusWhy = "twice the largest announced training cluster";

inline bool within(const PhysicalBound& b, double v) { return v >= b.lo && v <= b.hi; }

// A whole number a user gives (a count, a model dimension, a layer index): lo <= value <= hi, and
// why. Bounds that depend on another value (top-k at most the experts) are built where read.
struct IntegerBound {
  int64_t lo, hi;
  const char* why;  // the reason for the bound, said after the range
};

// Model dimensions (layers, hidden, heads, FFN, vocabulary, experts, ranks): the values are
// models/model_spec.h's model::limits, shared by the scenario reader and every importer.
inline constexpr const char* kModelDimensionWhy =
    "a model dimension, bounded far above any published model so that every tensor's size fits "
    "64-bit counts; the largest published: hidden 18432, 384 experts, vocabulary 262144, 126 "
    "layers";
inline IntegerBound model_dimension(int64_t lo, int64_t hi) { return {lo, hi, kModelDimensionWhy}; }

// The GPUs of a cluster, however given (a world size, a --gpus flag).
inline constexpr IntegerBound kClusterGpus{1, kMaxGpus, kMaxGpusWhy};
// A parallel size (TP, PP, CP, EP, ETP) is a number of GPUs.
inline constexpr IntegerBound kParallelSize{
    1, kMaxGpus,
    "a parallel size counts GPUs, and a cluster has at most 131072 (twice the "
    "largest announced training cluster)"};
// Nodes of a launch (torchrun --nnodes): each holds at least one GPU.
inline constexpr IntegerBound kNodes{
    1, kMaxGpus, "each node holds a GPU or more, and a cluster has at most 131072 GPUs"};
// Processes of one node (torchrun --nproc-per-node), one per GPU.
inline constexpr IntegerBound kGpusPerNode{
    1, 1024,
    "one process per GPU of a machine: 14 times the largest NVLink domain built (GB200 "
    "NVL72, 72 GPUs)"};
// Sequences in a global batch or a micro-batch: the scenario reader's bound
// (scenarios/scenario.cpp count_bound), so that what an importer writes reads back.
inline constexpr IntegerBound kBatchSequences{
    1, int64_t{1} << 24,
    "about 1000 times the largest published batch (DeepSeek-V3: 15360 "
    "sequences of 4096 tokens), and what a scenario accepts"};
// Tokens in a sequence (seq_len): what a scenario accepts, and the longest context a model may
// have (models/model_spec.h max_seq).
inline constexpr IntegerBound kSequenceTokens{
    1, int64_t{1} << 24, "what a scenario accepts: the longest context a model may have"};
// How long `execute` waits for a collective (--timeout), in seconds: at most an hour, as any
// single duration (kDuration); a collective still waiting after an hour has hung (PyTorch's
// process groups give up after 10 to 30 minutes by default).
inline constexpr IntegerBound kCollectiveTimeoutSeconds{
    1, 3600,
    "a collective still waiting after an hour has hung; PyTorch's process groups give up after 10 "
    "to 30 minutes by default"};
// Ranks of a cpu calibration (calibrate --backend cpu --ranks): each a process on this machine,
// all measured at once.
inline constexpr IntegerBound kCalibrationRanks{
    1, 64,
    "every rank is a process on this machine, measured at once: past a server's cores they share "
    "cores and measure contention, not the kernels"};
// Gradient accumulation steps: micro-batches per step, each at least one sequence of the batch.
inline constexpr IntegerBound kAccumulationSteps{
    1, int64_t{1} << 24, "each micro-batch holds at least one sequence of a batch of at most 2^24"};
// A gradient bucket, in elements (Megatron --ddp-bucket-size, DeepSpeed reduce_bucket_size).
inline constexpr IntegerBound kBucketElements{
    1, int64_t{1} << 40, "2^40 elements are 4 TiB of fp32 gradients, more than any GPU holds"};

// An MoE capacity factor, in (0, 16]: the scenario reader's and `import megatron`'s.
inline constexpr const char* kCapacityFactorWhy =
    "each expert's cap over its balanced share; leave it out for dropless routing";
// A dropout rate, in [0, 1).
inline constexpr const char* kDropoutWhy = "the probability of zeroing an activation";

// Bounds set by another value of the same model.
inline IntegerBound query_groups(int64_t heads) {
  return {1, heads,
          "key/value heads are shared by the query heads: at most one per attention head"};
}
inline IntegerBound routed_experts(int64_t experts) {
  return {1, experts, "a token is routed to at most every expert"};
}
inline IntegerBound layers_of(int64_t lo, int64_t layers) {  // a count or step of layers
  return {lo, layers, "within the model's layers"};
}
inline IntegerBound layer_index(int64_t layers) {
  return {0, layers - 1, "a layer index, counted from 0 within the model's layers"};
}

inline bool within(const IntegerBound& b, int64_t v) { return v >= b.lo && v <= b.hi; }

// "0 is out of range: from 1 to 65536 (a model dimension: ...)"; `given` as the user wrote it.
inline std::string out_of_range(const IntegerBound& b, const std::string& given) {
  return given + " is out of range: from " + std::to_string(b.lo) + " to " + std::to_string(b.hi) +
         " (" + b.why + ")";
}

// "'1e-300B/s' is out of range: a bandwidth is between 1 B/s and 1 PB/s (slower outlasts ...)"
inline std::string out_of_range(const PhysicalBound& b, const std::string& given) {
  return "'" + given + "' is out of range: " + b.what + " is between " + b.text + " (" + b.why +
         ")";
}

}  // namespace cs::limits
