#!/usr/bin/env python3
"""Time PyTorch's scaled_dot_product_attention (what frameworks call) on one GPU, forward and
forward + backward, causal, by head dimension and sequence length, for profiles/<gpu>.yaml's
framework attention curve.

  python3 scripts/torch-attention-sweep.py OUT.csv

Each row: dtype, head_dim, heads, seq, batch, causal, backend (default = PyTorch's own choice,
which on Hopper with PyTorch 2.11 is cuDNN's flash kernel), forward ms, forward + backward ms, and
the FLOPs clustersim counts for them (4 * batch * heads * seq^2 * head_dim, halved when causal;
backward 2.5x forward), with the achieved TFLOP/s. The median of 20 timed calls after 5 warm-ups,
timed with CUDA events. Runs on the device machine only.

  python3 scripts/torch-attention-sweep.py --cp OUT.csv    (issue 13's context-parallel kernels)
  python3 scripts/torch-attention-sweep.py --list [--cp]   (the shapes only; no GPU, no torch)

--cp times the per-step kernels of PyTorch's load-balanced context-parallel ring (TorchTitan's
context_parallel): each rank holds two chunks of seq / (2 cp) tokens, and every step but the
diagonal one is non-causal at a half shape, q of 2 chunks against kv of 1, or q of 1 against kv
of 2. Rows: Llama 3 8B's attention as TorchTitan runs it (32 heads of 128, K and V repeated to the
query heads), bf16, seq 8192 .. 131072, cp 2, 4, 8; causal 0, with q_len and kv_len, FLOPs
4 * batch * heads * q_len * kv_len * head_dim. What it is for: the CP 2 -> CP 4 jump of
validate/suites/torchtitan_llama3_h100_202412.yaml Table 2, which the causal curve does not price.
"""
import csv
import sys

TOKENS = 32768  # batch * seq per call: a training micro-batch's worth


def causal_shapes():
    """(dtype name, head_dim, heads, q_len, kv_len, batch, causal) of the causal sweep."""
    for dtype in ("bfloat16", "float16"):
        for head_dim, heads in ((64, 16), (128, 32)):
            for seq in (512, 1024, 2048, 4096, 8192, 16384, 32768):
                yield dtype, head_dim, heads, seq, seq, max(1, TOKENS // seq), 1


def cp_shapes():
    """The context-parallel ring's non-causal half shapes (see --cp above), one per distinct one."""
    seen = set()
    for seq in (8192, 16384, 32768, 65536, 131072):
        for cp in (2, 4, 8):
            chunk = seq // (2 * cp)
            for q_len, kv_len in ((2 * chunk, chunk), (chunk, 2 * chunk)):
                if (q_len, kv_len) not in seen:
                    seen.add((q_len, kv_len))
                    yield "bfloat16", 128, 32, q_len, kv_len, 1, 0


def timed(fn, reps=20, warmup=5):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    args = sys.argv[1:]
    cp = "--cp" in args
    shapes = list(cp_shapes() if cp else causal_shapes())
    if "--list" in args:
        for shape in shapes:
            print(",".join(str(x) for x in shape))
        return
    out = [a for a in args if not a.startswith("--")][0]

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION}
    rows = []
    for dtype_name, head_dim, heads, q_len, kv_len, batch, causal in shapes:
        dtype = getattr(torch, dtype_name)
        for backend, which in backends.items():
            if dtype == torch.float16 and backend != "default":
                continue
            q = torch.randn(batch, heads, q_len, head_dim, device="cuda", dtype=dtype,
                            requires_grad=True)
            k, v = (torch.randn(batch, heads, kv_len, head_dim, device="cuda", dtype=dtype,
                                requires_grad=True) for _ in range(2))
            g = torch.randn_like(q)

            def fwd():
                return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

            def fwd_bwd():
                o = fwd()
                torch.autograd.grad(o, (q, k, v), g)

            try:
                if which is None:
                    t_f, t_fb = timed(fwd), timed(fwd_bwd)
                else:
                    with sdpa_kernel([which]):
                        t_f, t_fb = timed(fwd), timed(fwd_bwd)
            except RuntimeError as e:
                print(f"{dtype_name} d{head_dim} q{q_len} kv{kv_len} {backend}: {str(e)[:80]}",
                      flush=True)
                continue
            flops_f = 4.0 * batch * heads * q_len * kv_len * head_dim * (0.5 if causal else 1.0)
            row = dict(dtype=dtype_name, head_dim=head_dim, heads=heads, seq=q_len,
                       kv_len=kv_len, batch=batch, causal=causal, backend=backend,
                       forward_ms=round(t_f, 4), forward_backward_ms=round(t_fb, 4),
                       forward_flops=flops_f,
                       forward_tflops=round(flops_f / t_f / 1e9, 1),
                       forward_backward_tflops=round(3.5 * flops_f / t_fb / 1e9, 1))
            rows.append(row)
            print(row, flush=True)
            del q, k, v, g
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
