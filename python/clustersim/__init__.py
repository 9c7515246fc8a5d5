"""clustersim from Python: load and edit scenarios, simulate them, plan layouts, run the
validation suite and import Megatron-LM and Hugging Face set-ups (docs/user-guide/python.md).

Every figure comes from the same C++ library the ``clustersim`` command runs: ``simulate(s)``
gives the report ``clustersim simulate --json`` writes (``Report.to_dict()`` holds the same keys
and values), and a scenario is checked by the same reader as a scenario file, with the same
messages. Simulations release the GIL and share no state, so threads may run several at once.
numpy, pandas and matplotlib are optional: ``to_pandas()`` needs pandas, nothing else does.
"""

import copy as _copy
import os as _os

from . import _clustersim as _cs

Error = _cs.Error                  # a refusal the simulator explains (a ValueError)
ScenarioError = _cs.ScenarioError  # the scenario reader's (an Error, so a ValueError)
Scenario = _cs.Scenario
Section = _cs.Section
for _public in (Error, ScenarioError, Scenario, Section):
    _public.__module__ = __name__  # clustersim.ScenarioError in tracebacks, not _clustersim's

__all__ = ["Error", "ScenarioError", "Scenario", "Section", "Columns", "Record", "Report",
           "PlanResult", "Draft", "load_scenario", "load_scenario_text", "simulate", "plan",
           "validate_suite", "import_hf", "import_megatron"]


def load_scenario(source):
    """A scenario from a YAML file (a path) or from a dict with a scenario file's keys.

    Raises ScenarioError with the reader's message. Attributes read and set the YAML keys
    (``s.layout.tp = 4``); each simulation reads the edited document again, so a bad value is
    refused then, with the message the same value in a file gets (naming the source and the key:
    the line would be that of the edited text).
    """
    if isinstance(source, (dict, Section)) or hasattr(source, "keys"):
        return _cs._load_tree(source, "<dict>")
    return _cs._load_file(_os.fspath(source))


def load_scenario_text(text, source="<text>"):
    """A scenario from YAML text; `source` names it in messages, and relative paths in it (an
    hf_config, a profile) are taken from source's folder."""
    return _cs._load_text(text, source)


class Columns(dict):
    """Columns of equal length (name -> list): ``np.asarray(c["bytes"])`` or ``c.to_pandas()``."""

    def to_pandas(self):
        import pandas  # optional: only this needs it
        return pandas.DataFrame(dict(self))


class Record:
    """A dict's keys as attributes (read-only), with ``to_dict()`` giving the dict back."""

    def __init__(self, values):
        self._values = values

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self._values)

    def to_dict(self):
        return _copy.deepcopy(self._values)

    def __repr__(self):
        return f"{type(self).__name__}({self._values!r})"


def _columns(rows, keys):
    return Columns({k: [row[k] for row in rows] for k in keys})


class Report:
    """One simulated step: the figures of ``clustersim simulate``'s report.

    ``to_dict()`` is the JSON report (docs/schemas/report.schema.json) as Python values; the
    attributes below name its most used figures; ``ranks`` and ``per_rank`` give the per-rank
    breakdown, ``memory_timeline`` every allocation and free of the step.
    """

    def __init__(self, simulation):
        self._simulation = simulation
        self._report = simulation.report()
        self._timeline = None

    step_time_s = property(lambda self: self._report["step_time_s"])
    tokens_per_s = property(lambda self: self._report["tokens_per_s"])
    samples_per_s = property(lambda self: self._report["samples_per_s"])
    mfu = property(lambda self: self._report["mfu"])
    # Absent (None) for a one-GPU scenario or with baseline=False.
    speedup = property(lambda self: self._report.get("speedup"))
    scaling_efficiency = property(lambda self: self._report.get("scaling_efficiency"))
    peak_memory_bytes = property(lambda self: self._report["memory"]["peak_bytes"])
    memory_capacity_bytes = property(lambda self: self._report["memory"]["capacity_bytes"])
    fits = property(lambda self: self._report["memory"]["fits"])
    scenario = property(lambda self: self._report["scenario"])
    layout = property(lambda self: Record(self._report["layout"]))
    suggestions = property(lambda self: [Record(s) for s in self._report["suggestions"]])

    @property
    def ranks(self):
        """One Record per simulated rank (rank, stage, compute_s, ..., memory_at_peak)."""
        return [Record(r) for r in self._report["ranks"]]

    @property
    def per_rank(self):
        """The per-rank figures as columns (memory_at_peak left out: a dict per rank)."""
        rows = self._report["ranks"]
        keys = [k for k in (rows[0] if rows else {}) if k != "memory_at_peak"]
        return _columns(rows, keys)

    @property
    def memory_timeline(self):
        """Columns time_s, rank, category, bytes (the rank's total after the change) and
        category_bytes (the category's total after it), in time order per rank."""
        if self._timeline is None:
            self._timeline = Columns(self._simulation.memory_timeline())
        return self._timeline

    def to_dict(self):
        return _copy.deepcopy(self._report)

    def to_pandas(self):
        """The per-rank figures as a pandas DataFrame (needs pandas)."""
        return self.per_rank.to_pandas()

    def __repr__(self):
        return (f"<clustersim.Report {self.scenario}: step {self.step_time_s:.6g} s, "
                f"{self.tokens_per_s:.6g} tokens/s, peak {self.peak_memory_bytes} B, "
                f"{'fits' if self.fits else 'does not fit'}>")


def simulate(scenario, fidelity=None, profile=None, baseline=True, ranks="automatic"):
    """Simulate one optimizer step of `scenario` (a Scenario, a path or a dict), as
    ``clustersim simulate`` does.

    fidelity: None keeps the scenario's network model, else "analytic" or "flow".
    profile: None uses the GPU's shipped profile where there is one (the command's default), a
    path a calibrated profile, False datasheet figures (--no-profile).
    baseline: False skips the single-GPU twin that speedup is measured against.
    ranks: "automatic", "all" or "representative".
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    no_profile = profile is False
    path = "" if profile is None or profile is False else _os.fspath(profile)
    return Report(_cs._simulate(scenario, fidelity or "", path, no_profile, baseline, ranks))


class PlanResult(list):
    """The layouts that fit, best first (Records with the keys of ``clustersim plan --json``'s
    rows: layout, tp, pp, dp, ..., step_time_s, tokens_per_s, mfu, peak_memory_bytes, fits), and
    the search's counts as attributes: considered, valid, pruned, simulated, out_of_memory,
    failed, not_simulated (why nothing was simulated, or ""), evaluations (every simulated
    layout) and pareto (the throughput against memory frontier, leanest first)."""

    def __init__(self, result):
        self.evaluations = [Record(row) for row in result.pop("evaluations")]
        super().__init__(self.evaluations[i] for i in result.pop("ranked"))
        self.pareto = [self.evaluations[i] for i in result.pop("pareto")]
        self.__dict__.update(result)

    def to_pandas(self):
        """The ranked layouts as a pandas DataFrame (needs pandas)."""
        import pandas
        return pandas.DataFrame([c.to_dict() for c in self])


def plan(scenario=None, *, model=None, cluster=None, gpus=None, global_batch=None, seq=None,
         precision=None, attention=None, stack=None, objective="throughput", micro_batches=None,
         recompute=None, max_tp=None, max_cp=None, max_ep=None, detailed=None, simulate=None,
         threads=0, profile=None):
    """Search the layouts of a scenario, or of presets (model, cluster, gpus, global_batch,
    seq), as ``clustersim plan`` does; the other arguments are plan's flags (None: its default).
    Returns a PlanResult: the layouts that fit, best first by the objective."""
    options = dict(model=model, cluster=cluster, gpus=gpus, global_batch=global_batch, seq=seq,
                   precision=precision, attention=attention, stack=stack, objective=objective,
                   micro_batches=micro_batches, recompute=recompute, max_tp=max_tp,
                   max_cp=max_cp, max_ep=max_ep, detailed=detailed, simulate=simulate,
                   threads=threads, no_profile=profile is False,
                   profile=None if profile is None or profile is False else _os.fspath(profile))
    if scenario is not None and not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    return PlanResult(_cs._plan(scenario, options))


def validate_suite(path="validate/suites", use_profiles=True, threads=0):
    """Run the validation suite (a folder of suite files, or one) as
    ``clustersim validate --suite`` does: one Record per source with its error figures in percent
    (mape, median, worst, bias), its bounds, passed, and every row (rows, as dicts)."""
    return [Record(s) for s in _cs._validate_suite(_os.fspath(path), use_profiles, threads)]


def import_hf(path):
    """A Hugging Face config.json as ``clustersim import hf`` reads it: a Record with
    architecture, parameters, active_parameters, mtp_parameters, notes, model (the scenario's
    model block, ``{"hf_config": absolute path}``: ``s.model = import_hf(p).model``) and dimensions (the
    same model by its dimensions, the keys a scenario's model block takes)."""
    values = _cs._import_hf(_os.fspath(path))
    # Absolute: a scenario reads hf_config relative to its own folder, wherever that is.
    values["model"] = {"hf_config": _os.path.abspath(path)}
    return Record(values)


class Draft:
    """An imported scenario: ``yaml`` (the draft text ``clustersim import`` prints), ``warnings``
    and ``scenario`` (the draft read as a scenario; raises ScenarioError if the reader refuses
    it)."""

    def __init__(self, yaml, warnings, source):
        self.yaml, self.warnings, self.source = yaml, warnings, source

    @property
    def scenario(self):
        return load_scenario_text(self.yaml, self.source)


def import_megatron(script=None, args=(), gpus=None, cluster="dgx_h100", name=""):
    """A scenario from Megatron-LM arguments, as ``clustersim import megatron`` makes it: those of
    a launch script (`script`, read, never run) followed by `args` (a list of argument tokens,
    which win). Returns a Draft."""
    path = "" if script is None else _os.fspath(script)
    result = _cs._import_megatron(path, list(args), gpus, cluster, name)
    return Draft(result["yaml"], result["warnings"], path or "<megatron arguments>")
