#!/usr/bin/env python3
"""Issue 37's step database: real PyTorch training steps of the Hugging Face architectures in
validate/measurements/SPLIT_gpu_database.yaml, built from their published config.json files with
random weights (nothing downloaded), on one GPU.

  python3 scripts/torch-hf-steps.py OUTDIR --stack pytorch_eager|torch_compile [--budget-s S]
  python3 scripts/torch-hf-steps.py OUTDIR --dry-run     (tiny sizes; SKIPPED without torch or GPU)
  python3 scripts/torch-hf-steps.py OUTDIR --plan-only   (plan.csv and configs/ only)
  python3 scripts/torch-hf-steps.py --check-split        (the split file against its rule)
  python3 scripts/torch-hf-steps.py --estimate           (the stages' expected seconds on an H100)

Every run: AdamW (fused), autocast bf16 over fp32 parameters, labels = inputs, SDPA attention
where the class has it. Each architecture is trained with fewer layers than published (the split
file says how many) so that one GPU holds it with its optimizer state at sequence 8192; the
changed config is written to OUTDIR/steps/configs/<name>.json before anything runs, and
`clustersim import hf` reads the same file.

OUTDIR/steps/ gets
  steps_<stack>.csv    one row per (architecture, batch, sequence): step time (median, min, max of
                       the timed steps), tokens/s, the first step's time (torch.compile's compile
                       is in it), the host's time to issue one step and GPU activities per step
                       (kernels, copies and fills; eager), peak allocated / reserved and
                       between-step memory (MiB), out of memory
  host_ops_<stack>.csv the host's time per eager op kind from one profiled step (batch 1, 1024)
  status_<stack>.csv   each architecture: done, stopped at its time limit, crashed, unknown to the
                       installed transformers, or not run because the stage's budget was spent
  plan.csv, configs/   the planned runs and the changed configs (also in the dry run)

One worker process runs the architectures one after another (an import of torch and transformers
costs seconds, paid once); the parent gives each architecture a time limit and restarts the
worker after the one that hung or crashed, so one bad architecture never takes the others down.
"""
import argparse
import csv
import functools
import importlib.util
import json
import math
import os
import queue
import random
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPLIT_FILE = os.path.join(ROOT, "validate", "measurements", "SPLIT_gpu_database.yaml")

# (batch, sequence) of each stack. Eager covers batch 1-16 and sequence 1k-8k at 1k-16k tokens
# per step; compile one batch-4 point: each shape is a compile of its own (10-40 s), so one call
# compiles about 5 of the 14 configs; a later call runs the rest, or other points (--grid 1x1024).
# A sequence beyond a config's own position limit is cut to it (GPT-2: 1024, Pythia: 2048).
GRIDS = {"pytorch_eager": [(1, 1024), (4, 1024), (16, 1024), (1, 4096), (4, 2048), (2, 8192)],
         "torch_compile": [(4, 2048)]}
DRY_RUN_GRID = [(1, 256)]
WARMUP_STEPS = 2  # the first one timed on its own (compile), then one more unmeasured
TIMED_STEPS = 5
# Seconds each architecture may take, the worker's start-up (imports) aside.
ARCH_LIMIT_S = {"pytorch_eager": 40, "torch_compile": 75}
STARTUP_LIMIT_S = 90
PRECISION = "amp_bf16"
COLUMNS = ["architecture", "class", "set", "stack", "precision", "batch", "seq", "step_ms",
           "step_ms_min", "step_ms_max", "tokens_per_s", "first_step_s", "host_issue_ms",
           "kernels_per_step", "host_us_per_kernel", "peak_allocated_mib", "peak_reserved_mib",
           "steady_allocated_mib", "parameters", "layers", "attn_implementation", "optimizer",
           "oom", "note"]
HOST_OP_COLUMNS = ["architecture", "op", "calls", "cpu_total_us", "self_cpu_us"]
STATUS_COLUMNS = ["architecture", "class", "set", "status", "seconds"]
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")


# --- the split and the configs (no torch) --------------------------------------------------------

def load_split(path=SPLIT_FILE):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def read_config(path):
    with open(os.path.join(ROOT, path)) as f:
        cfg = json.load(f)
    cfg.pop("_comment", None)
    return cfg


def kind_of(cfg):
    return "moe" if any(cfg.get(k) for k in EXPERT_KEYS) else "dense"


def split_by_rule(kind_by_class, seed):
    """The committed rule: per stratum, sorted class names shuffled with random.Random(seed);
    the first ceil(n / 2) are calibration, the rest validation."""
    sets = {}
    for kind in sorted(set(kind_by_class.values())):
        classes = sorted(c for c, k in kind_by_class.items() if k == kind)
        random.Random(seed).shuffle(classes)
        half = math.ceil(len(classes) / 2)
        for i, c in enumerate(classes):
            sets[c] = "calibration" if i < half else "validation"
    return sets


def check_split(split):
    """Problems with the split file: a config that does not parse or whose class or kind is not
    the entry's, or a set other than the rule's. Empty when the file is what the rule gives."""
    problems, kind_by_class = [], {}
    for a in split["architectures"]:
        try:
            cfg = read_config(a["config"])
        except (OSError, ValueError) as e:
            problems.append(f"{a['name']}: {a['config']}: {e}")
            continue
        cls = cfg.get("architectures", ["?"])[0]
        if cls != a["class"]:
            problems.append(f"{a['name']}: class {a['class']}, but the config says {cls}")
        if kind_of(cfg) != a["kind"]:
            problems.append(f"{a['name']}: kind {a['kind']}, but the config is {kind_of(cfg)}")
        if not 1 <= a["layers"] <= cfg.get("num_hidden_layers", cfg.get("n_layer", 0)):
            problems.append(f"{a['name']}: layers {a['layers']} beyond the config's own")
        kind_by_class[a["class"]] = a["kind"]
    rule = split_by_rule(kind_by_class, split["seed"])
    for a in split["architectures"]:
        if a["class"] in rule and rule[a["class"]] != a["set"]:
            problems.append(f"{a['name']}: set {a['set']}, the rule (seed {split['seed']}) says "
                            f"{rule[a['class']]}")
    return problems


def run_config(arch):
    """The published config as this architecture is trained: fewer layers, the entry's keys set,
    its `drop` keys removed, and a per-layer pattern cut to the layer count."""
    cfg = read_config(arch["config"])
    layers = arch["layers"]
    cfg["n_layer" if "n_layer" in cfg else "num_hidden_layers"] = layers
    for key in ("layer_types",):
        if isinstance(cfg.get(key), list):
            cfg[key] = cfg[key][:layers]
    cfg.update(arch.get("set_keys", {}))
    for key in arch.get("drop", []):
        cfg.pop(key, None)
    cfg.pop("torch_dtype", None)  # parameters are fp32 under autocast, whatever the release was
    return cfg


def max_positions(cfg):
    return cfg.get("max_position_embeddings", cfg.get("n_positions", 1 << 30))


def grid_for(cfg, stack, dry_run=False):
    """The stack's points, each sequence cut to the config's own maximum position (GPT-2's 1024),
    each point once."""
    points = []
    for b, s in DRY_RUN_GRID if dry_run else GRIDS[stack]:
        point = (b, min(s, max_positions(cfg)))
        if point not in points:
            points.append(point)
    return points


def interleaved(archs):
    """Calibration and validation alternately, so that a budget cut leaves both sets alike."""
    cal = [a for a in archs if a["set"] == "calibration"]
    val = [a for a in archs if a["set"] == "validation"]
    out = []
    for i in range(max(len(cal), len(val))):
        out += cal[i:i + 1] + val[i:i + 1]
    return out


def write_plan(out, archs, stacks, dry_run):
    """configs/<name>.json (what is trained) and plan.csv (every planned run)."""
    os.makedirs(os.path.join(out, "configs"), exist_ok=True)
    with open(os.path.join(out, "plan.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["architecture", "class", "set", "stack", "batch", "seq", "config"])
        for a in archs:
            cfg = run_config(a)
            path = os.path.join(out, "configs", a["name"] + ".json")
            with open(path, "w") as c:
                json.dump(cfg, c, indent=2, sort_keys=True)
            for stack in stacks:
                for b, s in grid_for(cfg, stack, dry_run):
                    w.writerow([a["name"], a["class"], a["set"], stack, b, s, a["config"]])


# --- expected time (no torch) ---------------------------------------------------------------------

def active_parameters(cfg):
    """Parameters one token meets: a rough count from the config's dimensions (attention as
    q/k/v/o projections, a gated MLP, or top-k experts plus shared ones), for the time estimate."""
    h = cfg.get("hidden_size", cfg.get("n_embd"))
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    hd = cfg.get("head_dim") or h // heads
    kv = cfg.get("num_key_value_heads", heads)
    attn = 2 * h * heads * hd + 2 * h * kv * hd
    ffn = cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * h
    if kind_of(cfg) == "moe":
        top_k = cfg.get("num_experts_per_tok", cfg.get("experts_per_token", 2))
        expert = cfg.get("moe_intermediate_size", ffn)
        mlp = 3 * h * expert * (top_k + cfg.get("n_shared_experts", 0))
    else:
        mlp = 3 * h * ffn
    layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    return layers * (attn + mlp) + cfg["vocab_size"] * h, layers * heads * hd


def estimate_stack_s(archs, stack, tflops=350.0, host_us=25.0, kernels_per_layer=150):
    """Seconds a stack's stage takes: per point (WARMUP + TIMED + 1 host-issue step) x the step's
    time (6 x tokens x active parameters plus causal attention, at `tflops`, or the host's
    kernels x host_us when that is longer), plus 4 s to build each model; compile adds 25 s per
    point. A shape x repetitions estimate, not a measurement."""
    total = 0.0
    for a in archs:
        cfg = run_config(a)
        active, attn_width = active_parameters(cfg)
        layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
        experts = max([cfg.get(k) or 0 for k in EXPERT_KEYS] + [1])
        host_s = layers * (kernels_per_layer + 20 * experts) * host_us * 1e-6
        total += 4
        for b, s in grid_for(cfg, stack):
            flops = 6 * b * s * active + 6 * b * s * s * attn_width  # 12 b s^2 d / 2 (causal)
            step_s = max(flops / (tflops * 1e12), host_s)
            total += (WARMUP_STEPS + TIMED_STEPS + 1) * step_s
            total += 25 if stack == "torch_compile" else 0
    return total


# --- the worker (needs torch, transformers and a GPU) ------------------------------------------

@functools.lru_cache(maxsize=None)
def step_bench():
    """scripts/torch-step-bench.py as a module: its train_step and timed_steps are shared."""
    sys.dont_write_bytecode = True  # no scripts/__pycache__ in the working tree
    spec = importlib.util.spec_from_file_location(
        "torch_step_bench", os.path.join(ROOT, "scripts", "torch-step-bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def emit(**message):
    print(json.dumps(message), flush=True)


def build_model(cfg):
    import torch
    import transformers
    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    if hasattr(transformers.AutoConfig, "for_model"):
        config = transformers.AutoConfig.for_model(model_type, **cfg)
    else:  # a release without for_model: its registry of config classes
        config = transformers.CONFIG_MAPPING[model_type](**cfg)
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
        except (ValueError, ImportError):
            # A class without SDPA (gpt-oss's sinks): transformers 5.17 refuses it, and its default
            # asks for SDPA again (the first GPU call, 2026-11-28, skipped gpt-oss so): eager.
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model.to(torch.float32).train()
    return model, getattr(model.config, "_attn_implementation", "")


def profile_host(step, x):
    """Kernels per step and the host's time per op kind, from one profiled step."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step(x)
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
    ops = [dict(op=e.key, calls=e.count, cpu_total_us=round(e.cpu_time_total, 1),
                self_cpu_us=round(e.self_cpu_time_total, 1))
           for e in prof.key_averages() if e.key.startswith("aten::")]
    ops.sort(key=lambda o: -o["self_cpu_us"])
    return kernels, ops[:40]


def host_issue_ms(step, x, repeats=3):
    """The host's time to issue one step (until step() returns, the GPU not waited for)."""
    import torch
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(x)
        times.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    return round(sorted(times)[len(times) // 2] * 1e3, 3)


def measure_point(step, x, kernels):
    """One (batch, sequence) point: the first step alone (it compiles), then the timed ones."""
    import torch
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step(x)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    times = step_bench().timed_steps(step, x, WARMUP_STEPS - 1, TIMED_STEPS)
    median = times[len(times) // 2]
    batch, seq = x.shape
    row = dict(step_ms=round(median * 1e3, 3), step_ms_min=round(times[0] * 1e3, 3),
               step_ms_max=round(times[-1] * 1e3, 3),
               tokens_per_s=round(batch * seq / median, 1), first_step_s=round(first, 2),
               peak_allocated_mib=round(torch.cuda.max_memory_allocated() / 2**20, 1),
               peak_reserved_mib=round(torch.cuda.max_memory_reserved() / 2**20, 1),
               steady_allocated_mib=round(torch.cuda.memory_allocated() / 2**20, 1))
    if batch * seq <= 4096:  # host-bound points: the issue time is the host's
        row["host_issue_ms"] = host_issue_ms(step, x)
        if kernels:
            row["kernels_per_step"] = kernels
            row["host_us_per_kernel"] = round(row["host_issue_ms"] * 1e3 / kernels, 2)
    return row


def run_architecture(arch, stack, configs, dry_run):
    import gc
    import torch
    cfg = json.load(open(os.path.join(configs, arch["name"] + ".json")))
    model, attn = build_model(cfg)
    base = dict(architecture=arch["name"], stack=stack, precision=PRECISION, layers=arch["layers"],
                parameters=sum(p.numel() for p in model.parameters()), attn_implementation=attn,
                optimizer="adamw_fused", oom=0, note="", **{"class": arch["class"], "set": arch["set"]})
    if stack == "torch_compile":
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    step = step_bench().train_step(model, opt, PRECISION)
    kernels = None
    for batch, seq in grid_for(cfg, stack, dry_run):
        row = dict(base, batch=batch, seq=seq)
        x = None
        try:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            x = torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda")
            if stack == "pytorch_eager" and kernels is None:
                step(x)  # warm before the profiled step
                kernels, ops = profile_host(step, x)
                for op in ops:
                    emit(host_op=dict(op, architecture=arch["name"]))
            row.update(measure_point(step, x, kernels))
        except torch.OutOfMemoryError:
            row.update(oom=1, note="torch.OutOfMemoryError")
            opt.zero_grad(set_to_none=True)  # the failed step's gradients
        emit(row=row)
        del x
        gc.collect()
    del model, opt, step
    gc.collect()
    torch.cuda.empty_cache()


def worker(args):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    split = {a["name"]: a for a in load_split()["architectures"]}
    stack = args.stack[-1]
    for name in args.archs.split(","):
        emit(start=name)
        try:
            run_architecture(split[name], stack, args.configs, args.dry_run)
            emit(done=name, status="done")
        except (KeyError, ValueError) as e:  # a model_type this transformers does not know
            traceback.print_exc()  # to worker_<stack>.log
            emit(done=name, status=f"skipped: {type(e).__name__}: {str(e)[:200]}")
        except Exception as e:  # noqa: BLE001 -- one architecture's failure is its row, not the run's
            traceback.print_exc()
            emit(done=name, status=f"failed: {type(e).__name__}: {str(e)[:200]}")
            if "CUDA error" in str(e):
                return 3  # the context is lost: the parent starts a new worker for the rest
            torch.cuda.empty_cache()
    return 0


# --- the parent: one worker, restarted after an architecture that hangs or crashes --------------

class Stage:
    def __init__(self, out, stack, archs, budget_s, dry_run, grid):
        self.out, self.stack, self.dry_run, self.grid = out, stack, dry_run, grid
        self.archs = {a["name"]: a for a in archs}
        self.pending = [a["name"] for a in archs]
        self.deadline = time.time() + budget_s
        self.files = [open(os.path.join(out, f"{kind}_{stack}.csv"), "w", newline="")
                      for kind in ("steps", "host_ops", "status")]
        self.rows, self.host_ops, self.status = (
            csv.DictWriter(f, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
            for f, cols in zip(self.files, (COLUMNS, HOST_OP_COLUMNS, STATUS_COLUMNS)))
        for w in (self.rows, self.host_ops, self.status):
            w.writeheader()
        self.log = open(os.path.join(out, f"worker_{stack}.log"), "a")

    def record(self, name, status, seconds):
        a = self.archs[name]
        self.status.writerow(dict(architecture=name, status=status, seconds=round(seconds, 1),
                                  **{"class": a["class"], "set": a["set"]}))
        print(f"{self.stack} {name}: {status} ({seconds:.0f} s)", flush=True)
        if name in self.pending:
            self.pending.remove(name)
        for f in self.files:
            f.flush()

    def run_worker(self):
        """One worker over the pending architectures, until it ends or one of them overruns."""
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--stack", self.stack,
               "--configs", os.path.join(self.out, "configs"), "--archs", ",".join(self.pending)]
        if self.dry_run:
            cmd.append("--dry-run")
        if self.grid:
            cmd += ["--grid", self.grid]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)],
                         daemon=True).start()
        current, started, started_any = None, time.time(), False
        limit = time.time() + STARTUP_LIMIT_S
        while True:
            wait = min(limit, self.deadline) - time.time()
            try:
                line = lines.get(timeout=max(wait, 0.1))
            except queue.Empty:
                proc.kill()
                proc.wait()
                name = current or self.pending[0]
                why = "stopped: the stage's budget is spent" if time.time() >= self.deadline \
                    else "stopped at its time limit"
                self.record(name, why, time.time() - started)
                return
            if line is None:
                rc = proc.wait()
                if current:
                    self.record(current, f"crashed: worker exit {rc}", time.time() - started)
                elif not started_any:  # it cannot start at all (an import failed): no retry
                    for name in list(self.pending):
                        self.record(name, f"not run: the worker exited {rc} before any "
                                          f"architecture (see worker_{self.stack}.log)", 0)
                return
            if not line.startswith("{"):
                self.log.write(line)
                continue
            msg = json.loads(line)
            if "start" in msg:
                current, started, started_any = msg["start"], time.time(), True
                limit = started + ARCH_LIMIT_S[self.stack]
            elif "row" in msg:
                self.rows.writerow(msg["row"])
            elif "host_op" in msg:
                self.host_ops.writerow(msg["host_op"])
            elif "done" in msg:
                self.record(msg["done"], msg["status"], time.time() - started)
                current = None

    def run(self):
        while self.pending and time.time() < self.deadline - 5:
            self.run_worker()
        for name in list(self.pending):
            self.record(name, "not run: the stage's budget is spent", 0)
        for f in self.files + [self.log]:
            f.close()


def torch_state():
    """'' when torch with a CUDA device is here, else why the runs are skipped."""
    try:
        import torch
    except ImportError:
        return "no torch"
    try:
        import transformers  # noqa: F401
    except ImportError:
        return "no transformers"
    return "" if torch.cuda.is_available() else "no CUDA device"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--stack", choices=list(GRIDS), action="append")
    ap.add_argument("--budget-s", type=float, default=300)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--check-split", action="store_true")
    ap.add_argument("--estimate", action="store_true")
    ap.add_argument("--plan-only", action="store_true", help="plan.csv and configs/ only")
    ap.add_argument("--only", help="comma-separated architecture names (a later call's rest)")
    ap.add_argument("--grid", help="BxS,BxS...: these (batch, sequence) points for every stack")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--configs")
    ap.add_argument("--archs")
    args = ap.parse_args()
    if args.grid:  # the worker is given the same --grid, so both see the same points
        points = [tuple(int(v) for v in p.split("x")) for p in args.grid.split(",")]
        for stack in GRIDS:
            GRIDS[stack] = points
    if args.worker:
        return worker(args)
    split = load_split()
    problems = check_split(split)
    for p in problems:
        print(f"split: {p}")
    if args.check_split or problems:
        print(f"split: {len(split['architectures'])} configs, "
              f"{'OK' if not problems else str(len(problems)) + ' problem(s)'}")
        return 1 if problems else 0
    archs = interleaved(split["architectures"])
    if args.only:
        archs = [a for a in archs if a["name"] in args.only.split(",")]
    stacks = args.stack or list(GRIDS)
    if args.estimate:
        for stack in stacks:
            per_arch = [estimate_stack_s([a], stack) for a in archs]
            fit = sum(1 for i in range(len(archs)) if sum(per_arch[:i + 1]) <= args.budget_s)
            print(f"{stack}: about {sum(per_arch):.0f} s for {len(archs)} architectures (H100, "
                  f"shapes x repetitions); {fit} fit {args.budget_s:.0f} s")
        return 0
    out = os.path.join(args.out, "steps")
    os.makedirs(out, exist_ok=True)
    write_plan(out, archs, list(GRIDS), args.dry_run)  # every stack's runs, whichever runs now
    print(f"steps: {len(archs)} architectures planned ({out}/plan.csv, configs/)")
    if args.plan_only:
        return 0
    missing = torch_state()
    for stack in stacks:
        if missing:
            with open(os.path.join(out, f"steps_{stack}.csv"), "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerow(COLUMNS)
            print(f"steps {stack}: SKIPPED ({missing})")
            continue
        Stage(out, stack, archs, args.budget_s, args.dry_run, args.grid).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
