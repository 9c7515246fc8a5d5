"""simulate(): the flags as the command's, per-rank figures, the memory timeline, threads."""
import os
import subprocess
import threading

import pytest

import clustersim
from conftest import cli_json

BASE = "scenarios/gpt2-large-2xh100-ddp.yaml"


def test_acceptance_line_prints_the_cli_step_time(cli, tmp_path):
    # Issue 38's acceptance line, run by `python3` from PATH (pyenv's 3.11 on the build machine:
    # the module built against Debian's 3.11 imports there too).
    expected = cli_json(cli, tmp_path, "simulate", BASE)["step_time_s"]
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "build/python"))
    out = subprocess.run(
        ["python3", "-c", "import clustersim; r = clustersim.simulate(clustersim.load_scenario("
         f"'{BASE}')); print(r.step_time_s)"], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == repr(expected)


def test_flags_are_the_commands(cli, tmp_path):
    expected = cli_json(cli, tmp_path, "simulate", BASE, "--fidelity", "flow", "--no-profile")
    r = clustersim.simulate(BASE, fidelity="flow", profile=False)
    assert r.to_dict() == expected
    assert r.to_dict()["profile"]["name"] == "" and r.to_dict()["network"]["fidelity"] == "flow"


def test_per_rank_times_add_up_to_the_step():
    # sim/report.h: exposed = |compute U comm| - compute and idle = T - |compute U comm|, so
    # compute + exposed + idle = T on every rank.
    r = clustersim.simulate(BASE, baseline=False)
    c = r.per_rank
    assert c["rank"] == [0, 1]
    for k in range(2):
        total = c["compute_s"][k] + c["exposed_communication_s"][k] + c["idle_s"][k]
        assert total == pytest.approx(r.step_time_s, rel=1e-9)
    assert r.ranks[1].peak_memory_bytes == c["peak_memory_bytes"][1]


def test_memory_timeline_peaks_are_the_reported_peaks():
    # The timeline holds each rank's tensors after every change; its maximum is the rank's peak
    # less the reserve the report adds beside them (CUDA context, cuBLAS and NCCL buffers,
    # fragmentation).
    r = clustersim.simulate(BASE, baseline=False)
    t = r.memory_timeline
    assert len(t["time_s"]) == len(t["bytes"]) > 0
    for rank in r.ranks:
        peak = max(b for rk, b in zip(t["rank"], t["bytes"]) if rk == rank.rank)
        assert peak + rank.memory_at_peak["reserve"] == rank.peak_memory_bytes
        at = [s for rk, b, s in zip(t["rank"], t["bytes"], t["time_s"]) if rk == rank.rank and b == peak]
        assert rank.peak_time_s == at[0]
    assert max(rank.peak_memory_bytes for rank in r.ranks) == r.peak_memory_bytes


def test_two_threads_simulate_at_once():
    paths = [BASE, "scenarios/gpt2-large-2xh100-fsdp-full-shard.yaml"]
    expected = [clustersim.simulate(p, baseline=False).to_dict() for p in paths]
    got = [None, None]
    start = threading.Barrier(2)

    def run(i):
        start.wait()
        got[i] = clustersim.simulate(paths[i], baseline=False).to_dict()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected


def test_to_pandas():
    pandas = pytest.importorskip("pandas")
    r = clustersim.simulate(BASE, baseline=False)
    frame = r.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and list(frame["rank"]) == [0, 1]
    assert len(r.memory_timeline.to_pandas()) == len(r.memory_timeline["bytes"])


def test_refusals_are_errors():
    with pytest.raises(clustersim.Error, match="fidelity 'exact'"):
        clustersim.simulate(BASE, fidelity="exact")
    with pytest.raises(clustersim.Error, match="ranks 'some'"):
        clustersim.simulate(BASE, ranks="some")
