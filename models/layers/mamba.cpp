#include "models/layers/mamba.h"

namespace cs::model::layers {

namespace {

int64_t chunks_of(const MambaSpec& s, int64_t seq) { return (seq + s.chunk - 1) / s.chunk; }

// One SSD step: a batched GEMM forward; backward its two gradient products, 2x the work.
void ssd_gemm(const OpFactory& f, BlockOps& ops, const std::string& name, int64_t m, int64_t n,
              int64_t k, int64_t batch, std::vector<int> params = {}) {
  ops.add(named(name, f.gemm(m, n, k, batch)),
          named(name + ".bwd", f.gemm(m, n, k, 2 * batch), std::move(params)));
}

// The SSD chunked scan (Dao and Gu 2024, sec. 6; state-spaces/mamba e9594ce,
// mamba_ssm/modules/ssd_minimal.py ssd_minimal_discrete, whose four steps the Triton kernels of
// ssd_combined.py fuse), per sequence of s tokens in c = ceil(s / Q) chunks of Q, on the rank's
// H heads of P channels and G groups, state N:
//   1. intra-chunk (diagonal blocks): C B^T per chunk and group, [Q x N][N x Q], then the
//      decay-masked scores times X per head, [Q x Q][Q x P];
//   2. each chunk's state, B^T (decay X) per head, [N x Q][Q x P];
//   3. the inter-chunk recurrence: each chunk's state decayed into the next, c x H x P x N fp32
//      elements read and written, 2 FLOPs each;
//   4. state to output, C times the state entering the chunk per head, [Q x N][N x P].
// Forward 2 s (G Q N + H (Q P + 2 N P)) FLOPs in GEMMs. The per-head dt, its softplus and A's
// cumulative sum (s x H elements) and the decay masks, computed in registers, are not priced.
// dt_bias, A_log and D are complete when the scan's backward has run.
// The scan's products run in the activations' 16 bits with fp32 accumulation whatever the
// training precision: mamba_ssm's Triton kernels (ssd_chunk_scan.py, ssd_chunk_state.py,
// ssd_bmm.py) take bf16 B, C and x and Megatron-Core's MambaMixer calls them outside Transformer
// Engine's FP8 recipe, which quantizes only its TE linears (in_proj and out_proj here).
void ssd_scan(const LayerContext& c, BlockOps& ops, const std::string& mixer) {
  OpFactory f = c.f;
  f.gemm_dt = std::nullopt;
  const MambaSpec& s = c.m.mamba;
  const int64_t heads = s.heads / c.t, groups = s.groups / c.t;
  const int64_t Q = s.chunk, N = s.state, P = s.head_dim;
  const int64_t chunks = c.w.micro_batch * chunks_of(s, c.s);
  ssd_gemm(f, ops, "mamba.ssd.cb", Q, Q, N, chunks * groups,
           c.ids({mixer + "dt_bias", mixer + "A_log", mixer + "D"}));
  ssd_gemm(f, ops, "mamba.ssd.diag", Q, P, Q, chunks * heads);
  ssd_gemm(f, ops, "mamba.ssd.states", N, P, Q, chunks * heads);
  const int64_t states = chunks * heads * P * N;
  const ir::ComputeOp pass =
      f.memory_bound(ir::OpClass::elementwise, 8 * states, 2.0 * double(states));
  ops.add(named("mamba.ssd.pass", pass), named("mamba.ssd.pass.bwd", pass));
  ssd_gemm(f, ops, "mamba.ssd.off", Q, P, N, chunks * heads);
}

}  // namespace

// in_proj [h -> (2 d_inner + 2 G N + H) / t]; the causal depthwise conv1d and SiLU over x, B, C
// (conv_dim / t channels, K taps: 2 K + 4 FLOPs per element, reading x and writing y; backward
// reads dy and x, writes dx, and completes the conv's weight and bias); the SSD scan; the gated
// RMSNorm y = rmsnorm(y * silu(z)) (reads y and z, writes the output; backward reads dy, y, z
// and writes dy, dz); out_proj [d_inner / t -> h].
void mamba_mixer(const LayerContext& c, BlockOps& ops, const std::string& prefix) {
  const MambaSpec& s = c.m.mamba;
  const std::string mixer = prefix + "mixer.";
  const int64_t conv = c.T * (s.conv_dim() / c.t), inner = c.T * (s.d_inner() / c.t);
  linear(c.f, ops, "mamba.in_proj", c.T, s.in_proj_width() / c.t, c.h,
         c.ids({mixer + "in_proj.weight"}), Split::column, c.tp);
  const auto taps = static_cast<double>(2 * s.conv_kernel + 4);
  ops.add(
      named("mamba.conv1d",
            c.f.memory_bound(ir::OpClass::elementwise, 2 * conv * c.ab, taps * double(conv))),
      named("mamba.conv1d.bwd",
            c.f.memory_bound(ir::OpClass::elementwise, 3 * conv * c.ab, 2.0 * taps * double(conv)),
            c.ids({mixer + "conv1d.weight", mixer + "conv1d.bias"})));
  ssd_scan(c, ops, mixer);
  ops.add(named("mamba.norm",
                c.f.memory_bound(ir::OpClass::norm, 3 * inner * c.ab, 9.0 * double(inner))),
          named("mamba.norm.bwd",
                c.f.memory_bound(ir::OpClass::norm, 5 * inner * c.ab, 14.0 * double(inner)),
                c.ids({mixer + "norm.weight"})));
  linear(c.f, ops, "mamba.out_proj", c.T, c.h, s.d_inner() / c.t,
         c.ids({mixer + "out_proj.weight"}), Split::row, c.tp);
}

int64_t mamba_saved_bytes_per_token(const ModelSpec& m, const WorkShape& w, int64_t ab) {
  const MambaSpec& s = m.mamba;
  const int t = w.tp;
  const int64_t h_in = w.sequence_parallel ? m.hidden / t : m.hidden;
  return ab * (h_in + (s.in_proj_width() + s.d_inner()) / t) + 4 * (s.groups / t);
}

int64_t mamba_state_bytes(const MambaSpec& s, int64_t ab) {
  return 4 * s.heads * s.head_dim * s.state + ab * s.conv_dim() * (s.conv_kernel - 1);
}

int64_t mamba_chunk_states_bytes(const MambaSpec& s, int64_t seq) {
  return 4 * chunks_of(s, seq) * s.heads * s.head_dim * s.state;
}

}  // namespace cs::model::layers
