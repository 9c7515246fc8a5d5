"""Every file the module reads passes the size bound the command's reader applies (issue 34): the
same C++ reads, so /dev/zero or an oversized file is refused with the message `clustersim`
prints (without its "error: "), raised as clustersim.Error, instead of being read until memory
runs out. Bounds: YAML files (scenarios, profiles, suites) 4 MiB, other text inputs (Hugging Face
configs, launch scripts) 64 MiB: common/text_file.h."""
import os

import pytest

import clustersim
from conftest import run_cli

BASE = "scenarios/gpt2-large-2xh100-ddp.yaml"
YAML_BOUND = 4 << 20
TEXT_BOUND = 64 << 20


def oversized(tmp_path, name, size):
    """A sparse file one byte past `size` (reads as zeros; takes no disk)."""
    path = tmp_path / name
    with open(path, "wb") as f:
        f.truncate(size + 1)
    return str(path)


# (what is read, the call, the command that reads the same file, the bound's message)
READERS = [
    ("scenario", lambda p: clustersim.load_scenario(p), ["simulate", "FILE"],
     "scenario file is larger than 4 MiB", YAML_BOUND),
    ("profile", lambda p: clustersim.simulate(BASE, profile=p), ["simulate", BASE, "--profile", "FILE"],
     "profile is larger than 4 MiB", YAML_BOUND),
    ("plan profile", lambda p: clustersim.plan(clustersim.load_scenario(BASE), profile=p),
     ["plan", BASE, "--profile", "FILE"], "profile is larger than 4 MiB", YAML_BOUND),
    ("suite", lambda p: clustersim.validate_suite(p), ["validate", "--suite", "FILE"],
     "suite file is larger than 4 MiB", YAML_BOUND),
    ("hf config", lambda p: clustersim.import_hf(p), ["import", "hf", "FILE"],
     "Hugging Face config file is larger than 64 MiB", TEXT_BOUND),
    ("launch script", lambda p: clustersim.import_megatron(script=p),
     ["import", "megatron", "--file", "FILE"], "launch script is larger than 64 MiB", TEXT_BOUND),
]


# The suite reader takes only a regular file or a folder (as `validate --suite`): not /dev/zero.
DEV_ZERO = [r for r in READERS if r[0] != "suite"]


@pytest.mark.parametrize("what,call,command,message,bound", DEV_ZERO, ids=[r[0] for r in DEV_ZERO])
def test_dev_zero_is_refused_as_the_command_refuses_it(cli, what, call, command, message, bound):
    with pytest.raises(clustersim.Error) as e:
        call("/dev/zero")
    assert str(e.value).startswith(f"/dev/zero: {message}; not read")
    rc, _, err = run_cli(cli, *[("/dev/zero" if a == "FILE" else a) for a in command])
    assert rc == 1 and err.strip() == f"error: {e.value}"


@pytest.mark.parametrize("what,call,command,message,bound", READERS, ids=[r[0] for r in READERS])
def test_a_file_one_byte_over_the_bound_is_refused(cli, tmp_path, what, call, command, message,
                                                   bound):
    path = oversized(tmp_path, "big.yaml", bound)
    with pytest.raises(clustersim.Error) as e:
        call(path)
    assert str(e.value).startswith(f"{path}: {message}; not read")
    rc, _, err = run_cli(cli, *[(path if a == "FILE" else a) for a in command])
    assert rc == 1 and err.strip() == f"error: {e.value}"


def test_the_scenario_bound_is_the_scenario_readers_error():
    # A refusal of the file is a ScenarioError, as every other problem with a scenario file is.
    with pytest.raises(clustersim.ScenarioError, match="scenario file is larger than 4 MiB"):
        clustersim.load_scenario("/dev/zero")
