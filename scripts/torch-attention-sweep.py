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
"""
import csv
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

TOKENS = 32768  # batch * seq per call: a training micro-batch's worth


def timed(fn, reps=20, warmup=5):
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
    out = sys.argv[1]
    backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION}
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for head_dim, heads in ((64, 16), (128, 32)):
            for seq in (512, 1024, 2048, 4096, 8192, 16384, 32768):
                batch = max(1, TOKENS // seq)
                for backend, which in backends.items():
                    if dtype == torch.float16 and backend != "default":
                        continue
                    q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=dtype,
                                           requires_grad=True) for _ in range(3))
                    g = torch.randn_like(q)

                    def fwd():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

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
                        print(f"{dtype} d{head_dim} s{seq} {backend}: {str(e)[:80]}", flush=True)
                        continue
                    flops_f = 4.0 * batch * heads * seq * seq * head_dim * 0.5
                    row = dict(dtype=str(dtype).split(".")[1], head_dim=head_dim, heads=heads,
                               seq=seq, batch=batch, causal=1, backend=backend,
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
