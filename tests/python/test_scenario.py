"""Scenarios from Python: edits reach the simulation, and a bad value set from Python is refused
with the scenario reader's own message (the one `clustersim simulate` prints for the same value
in a file), naming the scenario's source and the key."""
import re

import pytest

import clustersim
from conftest import run_cli

BASE = "scenarios/gpt2-large-2xh100-ddp.yaml"

# (section, key, bad value, the file's line, the same line with the bad value)
BAD_VALUES = [
    ("training", "micro_batch", 0, "  micro_batch: 8\n", "  micro_batch: 0\n"),
    ("layout", "data_parallel", "zero9", "  data_parallel: ddp\n", "  data_parallel: zero9\n"),
    ("training", "precision", "fp9", "  precision: amp_fp16\n", "  precision: fp9\n"),
    ("layout", "bucket_size", "25 parsecs", "  bucket_size: 25MiB\n", "  bucket_size: 25 parsecs\n"),
]


@pytest.mark.parametrize("section,key,value,line,bad_line", BAD_VALUES)
def test_bad_value_has_the_readers_message(cli, tmp_path, section, key, value, line, bad_line):
    text = open(BASE).read()
    assert line in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(line, bad_line))
    rc, _, err = run_cli(cli, "simulate", str(bad))
    assert rc != 0
    message = err.strip().removeprefix("error: ")
    # The reader's message: FILE:LINE:COLUMN: section.key: what is wrong.
    found = re.match(re.escape(str(bad)) + r":\d+:\d+: (.*)", message, re.S)
    assert found, message
    assert found.group(1).startswith(f"{section}.{key}: ")

    s = clustersim.load_scenario(BASE)
    setattr(getattr(s, section), key, value)
    with pytest.raises(clustersim.ScenarioError) as raised:
        clustersim.simulate(s)
    assert str(raised.value) == f"{BASE}: {found.group(1)}"
    assert isinstance(raised.value, ValueError)
    # The file itself, loaded from Python: the command's message, line and column included.
    with pytest.raises(clustersim.ScenarioError) as raised:
        clustersim.load_scenario(bad)
    assert str(raised.value) == message


def test_edits_reach_the_simulation():
    s = clustersim.load_scenario(BASE)
    assert s.layout.dp == 2 and s.training.micro_batch == 8 and s.layout.bucket_size == "25MiB"
    # Accumulation steps = global batch / (micro-batch x dp): 32 / (8 x 2) = 2, then 32 / (4 x 2) = 4.
    assert clustersim.simulate(s, baseline=False).to_dict()["accumulation_steps"] == 2
    s.training.micro_batch = 4
    assert clustersim.simulate(s, baseline=False).to_dict()["accumulation_steps"] == 4
    s["layout"]["data_parallel"] = "fsdp_full_shard"
    assert clustersim.simulate(s, baseline=False).to_dict()["layout"]["data_parallel"] == \
        "fsdp_full_shard"


def test_copies_text_and_dicts_are_the_same_scenario():
    s = clustersim.load_scenario(BASE)
    t = s.copy()
    t.training.micro_batch = 2
    assert s.training.micro_batch == 8  # the copy is independent
    assert s.to_yaml() == open(BASE).read()  # unedited: the file's text
    expected = clustersim.simulate(t, baseline=False).to_dict()
    again = clustersim.load_scenario_text(t.to_yaml(), BASE)  # edited: the tree written out
    assert "micro_batch: 2" in t.to_yaml()
    assert clustersim.simulate(again, baseline=False).to_dict() == expected
    from_dict = clustersim.load_scenario(t.to_dict())
    assert from_dict.source == "<dict>"
    assert clustersim.simulate(from_dict, baseline=False).to_dict() == expected


def test_missing_keys_and_sections():
    s = clustersim.load_scenario(BASE)
    assert not hasattr(s.layout, "tp")  # the file leaves tp at its default
    with pytest.raises(AttributeError, match="layout.tp"):
        s.layout.tp
    with pytest.raises(KeyError):
        s["network"]
    assert s.get("network") is None and "layout" in s
    assert set(s.keys()) == {"name", "stack", "model", "cluster", "layout", "training"}
    s.network = {"fidelity": "flow"}
    assert s.network.fidelity == "flow"
    assert clustersim.simulate(s, baseline=False).to_dict()["network"]["fidelity"] == "flow"
    with pytest.raises(TypeError):
        s.layout.dp = object()


def test_unknown_key_is_the_readers_error():
    s = clustersim.load_scenario(BASE)
    s.layout.tensor_parallel = 2
    with pytest.raises(clustersim.ScenarioError, match=re.escape(f"{BASE}: layout")):
        s.validate()


def test_missing_file():
    with pytest.raises(clustersim.ScenarioError, match="nowhere.yaml: cannot open scenario file"):
        clustersim.load_scenario("nowhere.yaml")
