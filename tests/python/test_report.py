"""The Python report is the command line's: every shipped scenario simulated both ways gives the
same step time and peak memory, and the whole JSON report equals Report.to_dict()."""
import glob

import pytest

import clustersim
from conftest import cli_json

SCENARIOS = sorted(glob.glob("scenarios/*.yaml"))


def test_every_scenario_is_tested():
    assert len(SCENARIOS) >= 20  # the shipped set (scenarios/*.yaml) at the time of writing


@pytest.mark.parametrize("path", SCENARIOS)
def test_report_equals_cli_json(cli, tmp_path, path):
    expected = cli_json(cli, tmp_path, "simulate", path)
    report = clustersim.simulate(clustersim.load_scenario(path))
    assert report.step_time_s == expected["step_time_s"]
    assert report.peak_memory_bytes == expected["memory"]["peak_bytes"]
    assert report.to_dict() == expected
    # The same after an edit that changes nothing: the edited tree, written out as YAML and read
    # again, is the same scenario (custom clusters, hardware files and flow mappings included).
    s = clustersim.load_scenario(path)
    first = s.keys()[0]
    s[first] = s[first]
    assert clustersim.simulate(s).to_dict() == expected
