"""docs/user-guide/python.md's sweep runs as written and draws its picture."""
import os
import re

import pytest

import clustersim

REPO = os.getcwd()


def test_sweep_example(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    text = open("docs/user-guide/python.md").read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "savefig" in b]
    assert len(blocks) == 1
    os.symlink(os.path.join(REPO, "scenarios"), tmp_path / "scenarios")
    monkeypatch.chdir(tmp_path)
    names = {}
    exec(compile(blocks[0], "python.md", "exec"), names)
    png = (tmp_path / "tp-microbatch-sweep.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    rows = names["rows"]
    assert [(tp, mb) for tp, mb, _, _ in rows] == [(t, m) for t in (1, 2, 4) for m in (1, 2, 4, 8)]
    # tp 1 at micro-batch 8 is the shipped scenario unchanged.
    shipped = clustersim.simulate("scenarios/gpt2-large-8xh100-ddp.yaml", baseline=False)
    assert rows[3][2] == shipped.tokens_per_s
