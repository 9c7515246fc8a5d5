"""Shared by the Python module's tests (tests/cmake/python.cmake runs them with Debian's python3,
PYTHONPATH=build/python, from the repository root, CLUSTERSIM_CLI naming the clustersim program)."""
import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("CLUSTERSIM_CLI", "build/cli/clustersim")
    if not os.path.exists(path):
        pytest.skip(f"no clustersim program at {path} (set CLUSTERSIM_CLI)")
    return path


def run_cli(cli, *args):
    """The command's exit status, standard output and standard error."""
    p = subprocess.run([cli, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cli_json(cli, tmp_path, *args):
    """`clustersim ARGS --json FILE`, read back."""
    out = tmp_path / "out.json"
    rc, _, err = run_cli(cli, *args, "--json", str(out))
    assert rc == 0, err
    return json.loads(out.read_text())
