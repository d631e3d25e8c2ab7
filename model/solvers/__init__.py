"""Solvers of the compiled rack (:class:`model.rack.RackSpec`).

All return the same :class:`model.prediction.Prediction`:

* :class:`model.solvers.analytic.AnalyticSolver` -- mean values by a damped
  fixed point over the closed-network recursion (milliseconds);
* :class:`sim.run.FastSimulator` -- the discrete-event simulator on the
  compiled engine (seconds);
* :class:`sim.run.SimpySimulator` -- the same rules on SimPy, sampling actual
  YCSB records (minutes; the readable reference).

The simulators define what each mechanism means; parity tests hold the
analytic solver to them (tests/parity).
"""

from .analytic import AnalyticSolver

__all__ = ["AnalyticSolver", "predict"]


def predict(scenario, profile):
    """The analytic prediction of a scenario under a profile (compile, then solve)."""
    from ..rack import compile_rack
    return AnalyticSolver().solve(compile_rack(scenario, profile))
