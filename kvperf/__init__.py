"""kvperf for notebooks: one import, the questions a researcher asks.

::

    import kvperf

    sc = kvperf.load_scenario(servers=32, memtable_mb=16)     # the embedded rack, changed
    p = kvperf.predict(sc)                                     # analytic model, milliseconds
    p.throughput_mops, p.bottleneck.text()
    p.to_frame()                                               # per-server table (pandas)

    s = kvperf.sweep({"servers": [16, 32], "storage.memtable_mb": [16, 256]})
    s.to_frame()                                               # one row per configuration

    ex = kvperf.explain(sc)                                    # why the gain falls short
    ex.to_frame()                                              # the waterfall's bars

    t = kvperf.tune({"storage.memtable_mb": (16, 256), "clients.timeout_ms": (100, 5000)})
    t.best_values, t.gain_pct

    sim = kvperf.simulate(sc, seconds=5)                       # discrete-event simulator
    sim.timeline_frame()

    r = kvperf.rotation(servers=128)                           # as FarReach's server rotation
    r.throughput_mops, r.to_frame()                            # measures it

Every result has ``to_dict()`` (plain JSON-ready data) and ``to_frame()``
(a :class:`pandas.DataFrame`). Scenarios and profiles can be given as
objects, file paths, embedded names or (scenarios) mappings; ``None`` means
the embedded default. Bad input raises :class:`InputError` naming the key
or the parameter, as the command line does: every parameter is checked
before any work by the same argument layer as the command line's options
(:mod:`runio.arguments`). The full reference is docs/api.md.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.profile import Profile
from model.scenario import Scenario

from .results import PredictionResult, RotationResult
import runio
from runio import inputs as _files
from runio.arguments import ARGS, checked

__all__ = ["load_scenario", "load_profile", "predict", "predict_many", "simulate", "sweep",
           "sweep_plan", "rotation", "RotationResult",
           "explain", "tune", "Scenario", "Profile", "InputError", "PredictionResult",
           "DEFAULT_PROFILE"]

DEFAULT_PROFILE = "tofino-testbed"


runio.install()        # workload files read, workload results kept on disk between sessions


@checked(source=ARGS["scenario"])
def load_scenario(source: Scenario | str | Mapping[str, Any] | None = None,
                  changes: Mapping[str, Any] | None = None, **keys: Any) -> Scenario:
    """A scenario: the embedded default (``None``), a TOML file path, a mapping
    shaped like the TOML (``{"servers": {"count": 32}}``) or a Scenario; then
    ``changes`` (``{"storage.memtable_mb": 16}``) and keyword changes by bare
    name or alias (``servers=32``, ``memtable_mb=16``, ``clients=512``)."""
    if source is None:
        sc = Scenario.default()
    elif isinstance(source, Scenario):
        sc = source
    elif isinstance(source, Mapping):
        sc = Scenario.from_mapping(source, source="<mapping>")
    elif isinstance(source, (str, os.PathLike)):
        sc = _files.load_scenario(source)
    else:
        raise InputError(f"expected a Scenario, a TOML path or a mapping, got "
                         f"{type(source).__name__}", field="scenario")
    all_changes = dict(changes or {})
    all_changes.update(keys)
    return sc.updated(all_changes, source="load_scenario") if all_changes else sc


@checked(source=ARGS["profile"])
def load_profile(source: Profile | str | None = None) -> Profile:
    """A calibrated profile: an embedded name (default ``tofino-testbed``), a
    TOML file path, or a Profile."""
    if isinstance(source, Profile):
        return source
    return _files.load_profile(DEFAULT_PROFILE if source is None else source)


@checked()
def predict(scenario: Scenario | str | Mapping | None = None, profile: Profile | str | None = None,
            *, intervals: bool = True, **keys: Any) -> PredictionResult:
    """The analytic prediction (``keys``: changes as in :func:`load_scenario`),
    with the 90 % throughput interval ``python -m sim predict`` prints
    (``details["throughput_interval"]``) unless ``intervals=False`` (about 9x
    less solving)."""
    from model.intervals import predict_one
    sc = load_scenario(scenario, keys)
    prof = load_profile(profile)
    return PredictionResult(predict_one(sc, prof, intervals=intervals), sc, prof)


@checked()
def predict_many(scenarios: Sequence[Scenario | str | Mapping],
                 profile: Profile | str | None = None) -> list[PredictionResult]:
    """Analytic predictions of many scenarios, solved as one batch."""
    from model.solvers import predict_many as _many
    scs = [load_scenario(s) for s in scenarios]
    prof = load_profile(profile)
    return [PredictionResult(p, s, prof) for p, s in zip(_many(scs, prof), scs)]


@checked()
def rotation(scenario: Scenario | str | Mapping | None = None, profile: Profile | str | None = None,
             *, intervals: bool = True, **keys: Any) -> RotationResult:
    """The rack measured as FarReach's server rotation measures it (its
    static-pattern experiments; docs/model.md, "Server rotation"): the
    analytic model on every rotation's rack, aggregated as FarReach's
    statistics script does, with a 90 % interval unless ``intervals=False``."""
    from model.rotation import predict_rotation
    sc = load_scenario(scenario, keys)
    prof = load_profile(profile)
    return RotationResult(predict_rotation(sc, prof, intervals=intervals), sc, prof)


@checked()
def simulate(scenario: Scenario | str | Mapping | None = None, profile: Profile | str | None = None,
             *, seconds: float = 10.0, seed: int = 1, engine: str = "fast",
             progress: bool = False, **keys: Any) -> PredictionResult:
    """A discrete-event simulation (``engine`` ``fast`` or ``simpy``); the result
    also has :meth:`PredictionResult.timeline_frame`."""
    from sim.run import simulate as _simulate
    sc = load_scenario(scenario, keys)
    prof = load_profile(profile)
    return PredictionResult(_simulate(sc, prof, seconds=seconds, seed=seed, engine=engine,
                                      progress=progress), sc, prof)


@checked()
def sweep(values: Mapping[str, Sequence[Any]], scenario: Scenario | str | Mapping | None = None,
          profile: Profile | str | None = None, *, zip: bool = False, baseline: int = 1,
          intervals: bool = True):
    """Every combination (or, with ``zip=True``, the i-th values together) of
    ``values`` (``{key: [v1, v2, ...]}``), solved as one batch; a
    :class:`cli.sweep.SweepResult` (``rows``, ``to_frame()``, ``table()``,
    ``write("x.html")``). ``baseline`` is the 1-based row compared against;
    ``intervals=False`` skips the 90 % throughput intervals (about 17x less solving)."""
    from cli.sweep import parse_axes, run_sweep
    axes = parse_axes(values, source="sweep")
    return run_sweep(load_scenario(scenario), load_profile(profile), axes, zip_=zip,
                     baseline=baseline, intervals=intervals)


@checked()
def sweep_plan(path: str, scenario: Scenario | str | Mapping | None = None,
               profile: Profile | str | None = None, *, baseline: int = 1,
               intervals: bool = True):
    """:func:`sweep` over the rows of a plan CSV (a column per scenario key, an
    optional ``id`` column, an empty cell for the base value), as
    ``python -m sim sweep --plan`` reads it."""
    from cli.sweep import read_plan, run_plan
    return run_plan(read_plan(path, load_scenario(scenario)), load_profile(profile),
                    baseline=baseline, intervals=intervals)


@checked()
def explain(scenario: Scenario | str | Mapping | None = None, profile: Profile | str | None = None,
            *, shapley: bool = False, **keys: Any):
    """Why the cache's runtime gain falls short of its normalized gain: a
    :class:`model.explain.Explanation` (``waterfall()``, ``sentences()``,
    ``to_frame()``)."""
    from model.explain import explain as _explain
    return _explain(load_scenario(scenario, keys), load_profile(profile), shapley=shapley)


@checked()
def tune(vary: Mapping[str, Any], scenario: Scenario | str | Mapping | None = None,
         profile: Profile | str | None = None, *, objective: str = "throughput",
         max_latency_us: float | None = None, latency_stat: str = "mean",
         generations: int = 12, seed: int = 1, explain: bool = True):
    """The best configuration within ``vary`` (``{key: (lo, hi)}`` for a numeric
    range, ``{key: [v1, v2, ...]}`` for a set of values) by the analytic model;
    a :class:`cli.tune.TuneResult` (``best_values``, ``gain_pct``,
    ``explanation``, ``to_frame()``, ``pareto``: throughput against p99).
    ``latency_stat``: the latency the objective and bound read (``mean``,
    ``p50``, ``p95``, ``p99``)."""
    from cli.tune import parse_dimensions, tune as _tune
    dims = parse_dimensions(vary, source="tune")
    return _tune(load_scenario(scenario), load_profile(profile), dims, objective=objective,
                 max_latency_us=max_latency_us, latency_stat=latency_stat,
                 generations=generations, seed=seed, explain_result=explain)
