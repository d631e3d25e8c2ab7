"""Solvers of the compiled rack (:class:`model.rack.RackSpec`).

All return the same :class:`model.prediction.Prediction`:

* :class:`model.solvers.analytic.AnalyticSolver` -- mean values, one root in
  throughput per rack (well under a millisecond, compiled);
* :class:`sim.run.FastSimulator` -- the discrete-event simulator on the
  compiled engine (seconds);
* :class:`sim.run.SimpySimulator` -- the same rules on SimPy, sampling actual
  YCSB records (minutes; the readable reference).

The simulators define what each mechanism means; parity tests hold the
analytic solver to them (tests/parity).
"""

from .analytic import AnalyticSolver

__all__ = ["AnalyticSolver", "predict", "predict_many"]


def predict(scenario, profile):
    """The analytic prediction of a scenario under a profile (compile, then solve)."""
    from ..rack import compile_rack
    return AnalyticSolver().solve(compile_rack(scenario, profile))


def predict_many(scenarios, profile, progress=None, starts=None):
    """The analytic predictions of many scenarios under one profile, solved as one batch.

    ``profile`` may also be a sequence of profiles, one per scenario (a fit's
    finite differences solve one row under many profiles at once).
    ``progress(done, total)`` hears of racks finished; ``starts[i]``: a guess
    of scenario i's throughput in MOPS (:func:`model.solvers.analytic.solve_many`)."""
    from ..rack import compile_rack
    from .analytic import solve_many
    scenarios = list(scenarios)
    profiles = profile if isinstance(profile, (list, tuple)) else [profile] * len(scenarios)
    if len(profiles) != len(scenarios):
        raise ValueError("one profile per scenario, or one profile for all")
    return solve_many([compile_rack(s, p) for s, p in zip(scenarios, profiles)],
                      progress=progress, starts=starts)
