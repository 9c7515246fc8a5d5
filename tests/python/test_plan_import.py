"""plan(), validate_suite() and the importers against the commands that share their libraries."""
import os

import pytest

import clustersim
from conftest import cli_json

SUITE = "validate/suites/seed002_gpt2_large_2xh100_strategies.yaml"


def test_plan_ranks_as_the_command(cli, tmp_path):
    flags = dict(model="gpt2-large", cluster="dgx_h100", gpus=8, global_batch=64, seq=1024,
                 micro_batches=[4, 8], recompute=["none"])
    expected = cli_json(cli, tmp_path, "plan", "--model", "gpt2-large", "--cluster", "dgx_h100",
                        "--gpus", "8", "--global-batch", "64", "--seq", "1024",
                        "--micro-batches", "4,8", "--recompute", "none")
    p = clustersim.plan(**flags)
    assert [c.layout for c in p] == expected["ranked"]
    assert [c.layout for c in p.pareto] == expected["pareto"]
    assert (p.considered, p.valid, p.pruned, p.simulated) == \
        (expected["considered"], expected["valid"], expected["pruned"], expected["simulated"])
    rows = {r["layout"]: r for r in expected["evaluations"]}
    for c in p.evaluations:
        assert c.to_dict() == rows[c.layout]
    assert all(c.fits for c in p) and p[0].step_time_s <= p[-1].step_time_s


def test_plan_needs_presets_or_a_scenario():
    with pytest.raises(clustersim.Error, match="plan needs model, cluster, gpus"):
        clustersim.plan(model="gpt2-large")
    with pytest.raises(clustersim.Error, match="precision 'fp9'"):
        clustersim.plan(model="gpt2-large", cluster="dgx_h100", gpus=8, global_batch=64,
                        seq=1024, precision="fp9")


def test_validate_suite_as_the_command(cli, tmp_path):
    expected = cli_json(cli, tmp_path, "validate", "--suite", SUITE)["sources"]
    got = clustersim.validate_suite(SUITE)
    assert len(got) == len(expected) == 1
    assert (got[0].source, got[0].rows_run, got[0].passed) == \
        (expected[0]["source"], expected[0]["rows_run"], expected[0]["pass"])
    assert got[0].mape == expected[0]["mape"] and got[0].worst == expected[0]["worst"]


def test_import_hf():
    m = clustersim.import_hf("tests/data/hf/llama-3.2-3b.json")
    # 3,212,749,824 parameters with tied embeddings (tests/interop_test.cpp derives it).
    assert m.architecture == "LlamaForCausalLM" and m.parameters == 3212749824
    assert m.model == {"hf_config": os.path.abspath("tests/data/hf/llama-3.2-3b.json")}
    assert m.dimensions["tie_embeddings"] is True
    s = clustersim.load_scenario("scenarios/gpt2-large-2xh100-ddp.yaml")
    s.model = m.model  # read from the scenarios/ folder: the path is absolute
    assert clustersim.simulate(s, baseline=False).to_dict()["model"] == \
        {"name": "llama-3.2-3b", "parameters": 3212749824}
    with pytest.raises(clustersim.Error, match="unsupported architecture 'FalconForCausalLM'"):
        clustersim.import_hf("tests/data/hf/unknown-architecture.json")


def test_import_megatron():
    # The launch script: 2 nodes x 8 GPUs, TP 2 x PP 2 x CP 2 -> DP 2, an unknown flag warned about
    # (as tests/cmake/interop.cmake checks the command's output).
    d = clustersim.import_megatron("tests/data/megatron/llama3-8b-launch.sh")
    assert any("--my-custom-flag" in w for w in d.warnings)
    s = d.scenario
    assert (s.layout.tp, s.layout.pp, s.layout.cp, s.layout.dp) == (2, 2, 2, 2)
    assert s.cluster.nodes == 2 and s.stack == "megatron_core"
    inline = clustersim.import_megatron(args=["--num-layers", "2", "--hidden-size", "256",
                                              "--num-attention-heads", "4", "--seq-length", "128",
                                              "--max-position-embeddings", "128", "--vocab-size", "32000",
                                              "--micro-batch-size", "1", "--global-batch-size", "8"],
                                        gpus=8)
    assert inline.scenario.layout.dp == 8
