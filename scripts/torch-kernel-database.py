#!/usr/bin/env python3
"""Issue 37's kernel database: the GEMMs and memory-bound kernels LLM training runs, timed one by
one with PyTorch on one GPU (attention: scripts/torch-attention-sweep.py --database).

  python3 scripts/torch-kernel-database.py OUTDIR [--only gemm,grouped,memory] [--budget-s S]
  python3 scripts/torch-kernel-database.py OUTDIR --dry-run   (the shape lists; tiny sizes on a GPU)
  python3 scripts/torch-kernel-database.py --estimate         (expected seconds on an H100)

OUTDIR/kernels/ gets
  gemm.csv          dtype, layout, m, n, k, layout (nt = forward x @ W^T, nn = input gradient dy @ W,
                    tn = weight gradient dy^T @ x; fp8 runs every shape as nt, the layout
                    torch._scaled_mm takes, with one scale per tensor, and fp8_rowwise the same
                    shapes with a scale per row of x and per column of W^T, as torchao's rowwise
                    recipe runs them), what the shape is (layer, op, hidden, ffn, tp), time (us),
                    TFLOP/s, repetitions
  grouped_gemm.csv  experts, tokens per expert, n, k, implementation (torch._grouped_mm, or one
                    torch.mm per expert as Hugging Face's eager MoE loops run), time, TFLOP/s
  memory_bound.csv  kernel, dtype, pass (forward, or forward + backward), elements, bytes moved
                    (by the count in the row's comment), time, GB/s
Each row is the median of a few timed loops (CUDA events around `reps` calls), reps chosen from
one call so that every shape spends about TARGET_S: the stage's time is the shape count times
that, whatever the GPU.
"""
import argparse
import csv
import os
import random
import sys
import time

TARGET_S = 0.004  # timed work per shape (3 loops of reps calls)
MAX_REPS = 200
TOKENS = (2048, 8192)  # tokens per micro-batch (m of the forward GEMMs)
# (hidden, ffn) pairs: hidden 512-16,384 at the two ffn ratios LLMs use: SwiGLU's 8/3 (rounded up
# to a multiple of 256, as Llama does) and GPT's 4; Llama 2 7B's 11008 (2.7) and Mixtral's 14336
# (3.5) are among the 8/3 roundings' neighbours.
HIDDEN = (512, 1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
TP = (1, 2, 4, 8)
VOCAB = (32000, 50257, 128256, 151936, 262144)
HEAD_HIDDEN = (2048, 4096, 8192)
# Grouped-expert GEMMs: (experts, n, k) of the MoE configs in SPLIT_gpu_database.yaml (gate and up
# fused, then down) at small tokens per expert.
GROUPED = [(8, 2 * 14336, 4096), (8, 4096, 14336),      # Mixtral 8x7B
           (32, 2 * 2880, 2880), (32, 2880, 2880),      # gpt-oss-20b
           (128, 2 * 768, 2048), (128, 2048, 768),      # Qwen3-30B-A3B
           (16, 2 * 2048, 7168), (16, 7168, 2048)]      # DeepSeek-V3's experts (16 of 256)
TOKENS_PER_EXPERT = (16, 64, 256, 1024)
# Memory-bound kernels by the bytes of their main operand (bf16 rows of hidden 4096).
MEMORY_MIB = (1, 4, 16, 64, 256, 1024)
OPTIMIZER_MIB = (16, 256, 4096)  # fp32 parameters under AdamW
# Bytes an ideal forward kernel reads and writes per element of its bf16 operand: one read and
# one write (2 + 2), a second input (add, SwiGLU: + 2), an fp32 side (cast: 4 + 2; softmax of the
# fp32 upcast: 2 + 4), the loss (reads the logits, writes one number per row).
FORWARD_BYTES_PER_ELEMENT = {"add": 6, "cast_fp32_to_bf16": 6, "rmsnorm_hf": 4, "rms_norm": 4,
                             "layer_norm": 4, "rotary_hf": 4, "swiglu": 6, "gelu_tanh": 4,
                             "softmax": 6, "cross_entropy": 2}
DTYPES = ("bf16", "fp16", "tf32", "fp8", "fp8_rowwise")
FP8 = ("fp8", "fp8_rowwise")
# Datasheet dense peaks (TFLOP/s) of the H100 SXM, for the time estimate only.
H100_PEAK = {"bf16": 989, "fp16": 989, "tf32": 495, "fp8": 1979, "fp8_rowwise": 1979}
H100_BW = 3.35e12


def ceil_to(x, q):
    return (x + q - 1) // q * q


def linears():
    """(layer, op, hidden, ffn, tp, tokens, n, k) of every linear layer, deduplicated on (tokens,
    n, k). GQA 8:1 for q/k/v (n = 1.25 h), gate and up fused (n = 2 ffn)."""
    seen, out = set(), []
    for h in HIDDEN:
        for ffn in (ceil_to(8 * h // 3, 256), 4 * h):
            for tp in TP:
                for t in TOKENS:
                    for op, n, k in (("qkv", 5 * h // 4 // tp, h), ("o", h, h // tp),
                                     ("gate_up", 2 * ffn // tp, h), ("down", h, ffn // tp)):
                        if (t, n, k) not in seen and n >= 64 and k >= 64:
                            seen.add((t, n, k))
                            out.append(("block", op, h, ffn, tp, t, n, k))
    for h in HEAD_HIDDEN:
        for v in VOCAB:
            for tp in (1, 8):
                out.append(("head", "lm_head", h, 0, tp, 8192, -(-v // tp), h))
    return out


def gemm_shapes(dtypes=DTYPES):
    """(dtype, layout, m, n, k, layer, op, hidden, ffn, tp): forward, input and weight gradient of
    each linear. bf16 gets every shape; fp16, tf32 and fp8 the 8192-token ones at TP 1 and 8
    (their rate relative to bf16 is what a profile needs, not every shape again)."""
    out = []
    for layer, op, h, ffn, tp, t, n, k in linears():
        for dtype in dtypes:
            if dtype != "bf16" and (t != 8192 or tp not in (1, 8)):
                continue
            for layout, (m, nn, kk) in (("nt", (t, n, k)), ("nn", (t, k, n)), ("tn", (n, k, t))):
                if dtype in FP8 and (m % 16 or nn % 16 or kk % 16):
                    continue  # torch._scaled_mm needs every dimension a multiple of 16
                out.append((dtype, "nt" if dtype in FP8 else layout, m, nn, kk, layer, op, h,
                            ffn, tp))
    # A fixed shuffle: a stage cut short by its budget loses a sample of every size and dtype,
    # not the largest hidden sizes.
    random.Random(37).shuffle(out)
    return out


def grouped_shapes():
    return [(e, m, n, k, impl) for e, n, k in GROUPED for m in TOKENS_PER_EXPERT
            for impl in ("grouped_mm", "loop")]


def memory_kernels():
    """(kernel, dtype, passes, MiB): every eager kernel family at every size."""
    kernels = ["add", "cast_fp32_to_bf16", "rmsnorm_hf", "rms_norm", "layer_norm", "rotary_hf",
               "swiglu", "gelu_tanh", "softmax", "cross_entropy"]
    out = []
    for kern in kernels:
        for mib in MEMORY_MIB:
            passes = ("forward",) if kern in ("add", "cast_fp32_to_bf16") else ("forward", "forward_backward")
            for p in passes:
                out.append((kern, "bf16", p, mib))
    for kern in ("adamw_foreach", "adamw_fused"):
        for mib in OPTIMIZER_MIB:
            out.append((kern, "fp32", "step", mib))
    return out


def estimate_s():
    """Seconds of the three sections on an H100: per shape, one sizing call plus about TARGET_S of
    timed calls (more when one call is longer than TARGET_S / 3), plus 1 ms of Python and input
    allocation; a GEMM's call time from its FLOPs at 70% of the datasheet peak, or its bytes at
    the HBM rate."""
    total = {"gemm": 0.0, "grouped": 0.0, "memory": 0.0}
    for dtype, _, m, n, k, *_ in gemm_shapes():
        size = 1 if dtype in FP8 else (4 if dtype == "tf32" else 2)
        t = max(2 * m * n * k / (0.7 * H100_PEAK[dtype] * 1e12), size * (m * k + k * n + m * n) / H100_BW)
        total["gemm"] += 4 * t + max(TARGET_S, 3 * t) + 1e-3
    for e, m, n, k, impl in grouped_shapes():
        t = max(2 * e * m * n * k / (0.5 * 989e12), 2 * e * k * n / H100_BW) + (e * 8e-6 if impl == "loop" else 0)
        total["grouped"] += 4 * t + max(TARGET_S, 3 * t) + 1e-3
    for kern, _, p, mib in memory_kernels():
        t = (4 if p == "forward_backward" else 2) * mib * 2**20 / H100_BW
        total["memory"] += 4 * t + max(TARGET_S, 3 * t) + 1e-3
    return total


# --- timing (torch) --------------------------------------------------------------------------------

def time_call(fn):
    """Median microseconds per call of fn: reps sized from one call, 3 loops of reps."""
    import torch
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    reps = max(1, min(MAX_REPS, int(TARGET_S / 3 / max(one, 1e-6))))
    loops = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        loops.append(a.elapsed_time(b) * 1e3 / reps)
    return sorted(loops)[1], reps


def gemm_call(dtype, layout, m, n, k):
    """A function running the GEMM, operands allocated once."""
    import torch
    dev = "cuda"
    if dtype in FP8:
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
        # Tensorwise: one fp32 scale each. Rowwise: [m, 1] and [1, n], which sends _scaled_mm to
        # its rowwise kernel (issue 31: TorchTitan's float8 rowwise rows run slower than the
        # tensorwise rate the model prices them at).
        rows = dtype == "fp8_rowwise"
        sa = torch.ones((m, 1) if rows else (), device=dev)
        sb = torch.ones((1, n) if rows else (), device=dev)
        return lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dtype]
    # The three layouts a linear layer's forward and backward run, with its own operands:
    # nt: x (m, k) @ W^T (W stored (n, k)); nn: dy (m, k) @ W (k, n); tn: dy^T ((m, k) stored
    # (k, m)) @ x (k, n).
    a = torch.randn(m, k, device=dev, dtype=dt) if layout != "tn" else torch.randn(k, m, device=dev, dtype=dt).t()
    b = torch.randn(n, k, device=dev, dtype=dt).t() if layout == "nt" else torch.randn(k, n, device=dev, dtype=dt)
    return lambda: torch.mm(a, b)


def grouped_call(e, m, n, k, impl):
    import torch
    x = torch.randn(e * m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16)
    if impl == "grouped_mm":
        offs = torch.arange(m, e * m + 1, m, device="cuda", dtype=torch.int32)
        wt = w.transpose(-2, -1)
        return lambda: torch._grouped_mm(x, wt, offs=offs)
    chunks = x.split(m)
    return lambda: [torch.mm(c, w[i].t()) for i, c in enumerate(chunks)]


def memory_call(kern, p, mib):
    """(function, elements, bytes): the bytes an ideal (one-kernel) forward moves, x 2.5 with the
    backward (which reads the output's gradient and the saved input and writes the input's
    gradient: 3 tensors more to the forward's 2), so that GB/s shows what unfused chains cost."""
    import torch
    import torch.nn.functional as F
    h = 4096
    if kern.startswith("adamw"):
        numel = mib * 2**20 // 4
        params = [torch.randn(numel // 64, device="cuda", requires_grad=True) for _ in range(64)]
        for q in params:
            q.grad = torch.randn_like(q)
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=kern == "adamw_foreach",
                                fused=kern == "adamw_fused" or None)
        opt.step()
        return opt.step, numel, numel * 4 * 7  # read p, g, m, v; write p, m, v
    rows = max(1, mib * 2**20 // (2 * h))
    bf = torch.bfloat16
    need_grad = p == "forward_backward"
    x = torch.randn(rows, h, device="cuda", dtype=bf, requires_grad=need_grad)
    w = torch.ones(h, device="cuda", dtype=bf, requires_grad=need_grad)
    if kern == "add":
        y = torch.randn_like(x)
        fwd = lambda: x + y  # noqa: E731
    elif kern == "cast_fp32_to_bf16":
        x32 = torch.randn(rows, h, device="cuda")
        fwd = lambda: x32.to(bf)  # noqa: E731
    elif kern == "rmsnorm_hf":  # Hugging Face's LlamaRMSNorm, op by op
        def fwd():
            v = x.float()
            v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)
            return w * v.to(bf)
    elif kern == "rms_norm":
        fwd = lambda: F.rms_norm(x, (h,), w, 1e-6)  # noqa: E731
    elif kern == "layer_norm":
        fwd = lambda: F.layer_norm(x, (h,), w, None, 1e-5)  # noqa: E731
    elif kern == "rotary_hf":  # q * cos + rotate_half(q) * sin over (rows, heads of 128)
        cos = torch.randn(rows, 1, 128, device="cuda", dtype=bf)
        sin = torch.randn_like(cos)

        def fwd():
            q = x.view(rows, h // 128, 128)
            half = torch.cat((-q[..., 64:], q[..., :64]), dim=-1)
            return q * cos + half * sin
    elif kern == "swiglu":
        u = torch.randn_like(x)
        fwd = lambda: F.silu(x) * u  # noqa: E731
    elif kern == "gelu_tanh":
        fwd = lambda: F.gelu(x, approximate="tanh")  # noqa: E731
    elif kern == "softmax":
        fwd = lambda: torch.softmax(x.float(), dim=-1)  # noqa: E731
    else:  # cross_entropy over a 32,768-word vocabulary, bf16 logits as autocast leaves them
        logits = x.view(-1, 32768) if x.numel() >= 32768 else x.view(1, -1)
        target = torch.randint(0, logits.shape[1], (logits.shape[0],), device="cuda")
        fwd = lambda: F.cross_entropy(logits.float(), target)  # noqa: E731
    fwd_bytes = x.numel() * FORWARD_BYTES_PER_ELEMENT[kern]
    if not need_grad:
        return fwd, x.numel(), fwd_bytes
    grad = None

    def fwd_bwd():
        nonlocal grad
        out = fwd()
        if grad is None or grad.shape != out.shape:
            grad = torch.ones_like(out)
        out.backward(grad)
    return fwd_bwd, x.numel(), int(fwd_bytes * 2.5)


# --- sections ----------------------------------------------------------------------------------------

def dry_run_items(items, kind_fields):
    """The smallest item of each kind (the fields at kind_fields: dtype and layout, the
    implementation, the kernel and its pass)."""
    smallest = {}
    for item in items:
        kind = tuple(item[i] for i in kind_fields)
        size = [x for x in item if isinstance(x, int)]
        if kind not in smallest or size < smallest[kind][0]:
            smallest[kind] = (size, item)
    return [item for _, item in smallest.values()]


def run_section(path, columns, items, measure, deadline):
    """Rows for every item until the deadline; an item that fails is a row with its error."""
    import torch
    done = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for item in items:
            if time.time() > deadline:
                w.writerow(list(item) + ["", "", "", "not run: the budget is spent"])
                continue
            try:
                us, reps, rate = measure(item)
                w.writerow(list(item) + [round(us, 3), round(rate, 2), reps, ""])
                done += 1
            except Exception as e:  # noqa: BLE001 -- an unsupported shape or API is its row's note
                w.writerow(list(item) + ["", "", "", f"{type(e).__name__}: {str(e)[:100]}"])
                torch.cuda.empty_cache()
            if done % 50 == 0:  # now and then, not per shape: cudaMalloc is not free
                torch.cuda.empty_cache()
    print(f"{os.path.basename(path)}: {done} of {len(items)} measured", flush=True)


def measure_gemm(item):
    import torch
    dtype, layout, m, n, k = item[:5]
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    us, reps = time_call(gemm_call(dtype, layout, m, n, k))
    return us, reps, 2 * m * n * k / us / 1e6  # TFLOP/s


def measure_grouped(item):
    e, m, n, k, impl = item
    us, reps = time_call(grouped_call(e, m, n, k, impl))
    return us, reps, 2 * e * m * n * k / us / 1e6


def measure_memory(item):
    kern, _, p, mib = item
    fn, _, nbytes = memory_call(kern, p, mib)
    us, reps = time_call(fn)
    return us, reps, nbytes / us / 1e3  # GB/s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--only", default="memory,grouped,gemm")
    ap.add_argument("--budget-s", type=float, default=90)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--estimate", action="store_true")
    args = ap.parse_args()
    # The cheap sections first: a GEMM list cut by the budget still leaves them whole.
    sections = {
        "memory": ("memory_bound.csv", ["kernel", "dtype", "pass", "mib", "time_us", "gbps"],
                   memory_kernels(), measure_memory, (0, 2)),
        "grouped": ("grouped_gemm.csv", ["experts", "tokens_per_expert", "n", "k", "impl",
                                         "time_us", "tflops"], grouped_shapes(), measure_grouped,
                    (4,)),
        "gemm": ("gemm.csv", ["dtype", "layout", "m", "n", "k", "layer", "op", "hidden", "ffn",
                              "tp", "time_us", "tflops"], gemm_shapes(), measure_gemm, (0, 1))}
    chosen = [s for s in sections if s in args.only.split(",")]
    if args.estimate:
        est = estimate_s()
        for s in chosen:
            print(f"{s}: {len(sections[s][2])} shapes, about {est[s]:.0f} s on an H100")
        return 0
    out = os.path.join(args.out, "kernels")
    os.makedirs(out, exist_ok=True)
    try:
        import torch
        missing = "" if torch.cuda.is_available() else "no CUDA device"
    except ImportError:
        missing = "no torch"
    deadline = time.time() + args.budget_s
    for s in chosen:
        name, cols, items, measure, kind_fields = sections[s]
        cols = cols + ["reps", "note"]
        if args.dry_run:
            items = dry_run_items(items, kind_fields)
        if missing:
            with open(os.path.join(out, name), "w", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(cols)
                w.writerows(list(i) + ["", "", "", "planned"] for i in items)
            print(f"kernels {s}: {len(items)} shapes planned, SKIPPED ({missing})")
            continue
        run_section(os.path.join(out, name), cols, items, measure, deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
