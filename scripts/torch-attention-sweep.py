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
  python3 scripts/torch-attention-sweep.py --database OUT.csv   (issue 37's kernel database)
  python3 scripts/torch-attention-sweep.py --list --database     (its shapes; --estimate: seconds)

--database times the cuDNN and FlashAttention back ends (forced) in bf16 over head_dim 64, 128
and 256, GQA ratios 1-16 (query heads over key/value heads, enable_gqa: no repeated K and V),
sequence 512-32,768 at 32,768 tokens per call, causal and not, and a 4,096-token sliding window
(a band mask: cuDNN and the memory-efficient kernel, FlashAttention takes no mask). Each shape's
repetitions are sized from one call (about 40 ms of timed work), so the stage's time is bounded
by the shape count; rows carry kv_heads and window besides the columns above.
"""
import csv
import random
import sys
import time

TOKENS = 32768  # batch * seq per call: a training micro-batch's worth
TARGET_S = 0.04  # --database: timed work per shape, back end and pass


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


def database_shapes():
    """(dtype, head_dim, heads, q_len, kv_len, batch, causal, kv_heads, window) of --database, in
    a fixed shuffled order: a run cut short by its budget loses a sample of every kind of shape."""
    shapes = []
    for head_dim, heads in ((64, 32), (128, 32), (256, 16)):
        ratios = (1, 2, 4, 8, 16) if head_dim == 128 else (1, 4, 16)
        for ratio in ratios:
            for seq in (512, 2048, 8192, 32768):
                for causal in (1, 0):
                    shapes.append(("bfloat16", head_dim, heads, seq, seq, TOKENS // seq, causal,
                                   heads // ratio, 0))
    # With a mask, Hugging Face repeats K and V to the query heads (enable_gqa only without one).
    for seq in (8192, 32768):
        shapes.append(("bfloat16", 128, 32, seq, seq, TOKENS // seq, 1, 32, 4096))
    random.Random(37).shuffle(shapes)
    return shapes


def database_backends(window):
    return ("cudnn", "efficient") if window else ("cudnn", "flash")


def estimate_database_s(tflops=350.0):
    """Seconds of --database on an H100: per shape and back end, the sizing call, 2 warm-ups and
    the timed calls (TARGET_S, at least 3 calls) of the forward and of forward + backward
    (3.5x the forward's FLOPs), at `tflops`, plus 20 ms of set-up."""
    total = 0.0
    for _, d, h, q, kv, b, causal, _, window in database_shapes():
        span = min(kv, window) if window else kv
        t_f = 4.0 * b * h * q * span * d * (0.5 if causal and not window else 1.0) / (tflops * 1e12)
        for _ in database_backends(window):
            for t in (t_f, 3.5 * t_f):
                total += 3 * t + max(TARGET_S, 3 * t) + 0.01
    return total


def timed(fn, reps=20, warmup=5, target_s=None):
    """Median milliseconds of one call; with target_s, reps sized from one call to spend about
    that long (3..reps calls)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if target_s:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        reps = max(3, min(reps, int(target_s * 1e3 / max(a.elapsed_time(b), 1e-3))))
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
    database = "--database" in args
    shapes = list(database_shapes() if database else cp_shapes() if cp else causal_shapes())
    if "--dry-run" in args:  # the smallest shapes, to check the code on a GPU in seconds
        shapes = [sh for sh in shapes if sh[3] == 512 and sh[1] == 64][:4]
    if "--list" in args:
        for shape in shapes:
            print(",".join(str(x) for x in shape))
        return
    if "--estimate" in args:
        print(f"{len(shapes)} shapes, about {estimate_database_s():.0f} s on an H100")
        return
    # --budget-s S: shapes not started within S seconds are left out (the rows so far are kept).
    budget = None
    if "--budget-s" in args:
        i = args.index("--budget-s")
        budget = float(args.pop(i + 1))
    deadline = time.time() + budget if budget else None
    out = [a for a in args if not a.startswith("--")][0]

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    target_s = TARGET_S if database else None
    fields = ["dtype", "head_dim", "heads", "seq", "kv_len", "batch", "causal", "backend",
              "forward_ms", "forward_backward_ms", "forward_flops", "forward_tflops",
              "forward_backward_tflops"] + (["kv_heads", "window"] if database else [])
    # Each row is written as it is measured: a run stopped by its time limit keeps its rows.
    f = open(out, "w", newline="")
    writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for shape in shapes:
        if deadline and time.time() > deadline:
            print(f"budget of {budget:.0f} s spent: {len(shapes) - shapes.index(shape)} shapes "
                  "left out", flush=True)
            break
        dtype_name, head_dim, heads, q_len, kv_len, batch, causal = shape[:7]
        kv_heads, window = shape[7:] if database else (heads, 0)
        dtype = getattr(torch, dtype_name)
        chosen = database_backends(window) if database else ("default", "flash", "cudnn")
        for backend in chosen:
            which = backends[backend]
            if dtype == torch.float16 and backend != "default":
                continue
            q = torch.randn(batch, heads, q_len, head_dim, device="cuda", dtype=dtype,
                            requires_grad=True)
            k, v = (torch.randn(batch, kv_heads, kv_len, head_dim, device="cuda", dtype=dtype,
                                requires_grad=True) for _ in range(2))
            g = torch.randn_like(q)
            extra = {"enable_gqa": True} if kv_heads != heads else {}
            if window:  # causal band: each query sees itself and the window - 1 keys before it
                i = torch.arange(q_len, device="cuda")[:, None]
                j = torch.arange(kv_len, device="cuda")[None, :]
                extra["attn_mask"] = (j <= i) & (j > i - window)

            def fwd():
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=bool(causal) and not window, **extra)

            def fwd_bwd():
                o = fwd()
                torch.autograd.grad(o, (q, k, v), g)

            try:
                warmup = 2 if database else 5
                if which is None:
                    t_f, t_fb = timed(fwd, warmup=warmup), timed(fwd_bwd, warmup=warmup)
                else:
                    with sdpa_kernel([which]):
                        t_f = timed(fwd, warmup=warmup, target_s=target_s)
                        t_fb = timed(fwd_bwd, warmup=warmup, target_s=target_s)
            except (RuntimeError, ValueError, TypeError) as e:  # a back end without the shape
                print(f"{dtype_name} d{head_dim} q{q_len} kv{kv_len} kv_heads {kv_heads} "
                      f"window {window} {backend}: {str(e)[:80]}", flush=True)
                continue
            # FLOPs of the keys each query sees: all (kv_len), half on the causal triangle, or
            # about the window (exactly, less the first window's triangle).
            span = min(kv_len, window) if window else kv_len
            flops_f = 4.0 * batch * heads * q_len * span * head_dim * (
                0.5 if causal and not window else 1.0)
            row = dict(dtype=dtype_name, head_dim=head_dim, heads=heads, seq=q_len,
                       kv_len=kv_len, batch=batch, causal=causal, backend=backend,
                       forward_ms=round(t_f, 4), forward_backward_ms=round(t_fb, 4),
                       forward_flops=flops_f,
                       forward_tflops=round(flops_f / t_f / 1e9, 1),
                       forward_backward_tflops=round(3.5 * flops_f / t_fb / 1e9, 1))
            if database:
                row.update(kv_heads=kv_heads, window=window)
            writer.writerow(row)
            f.flush()
            print(row, flush=True)
            del q, k, v, g, extra
    f.close()


if __name__ == "__main__":
    main()
