"""Predicting the pairs' rows: the analytic solver in one batch, the fast
simulator over worker processes, and the held-out profiles (each pair
predicted by a profile refitted without its rows and every other row of
their configurations, one fit per distinct set of held-out rows).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from model.errors import InputError

from .knob_pairs import Pair, Run

#: ``progress(n)``: n more racks finished
Progress = Callable[[int], None]


def predict_analytic(scenarios: Sequence[Any], profile: Any,
                     progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """Analytic predictions of ``scenarios`` under one profile: each distinct
    rack solved once, all of them in one batch (:func:`model.solvers.predict_many`),
    smallest racks first as batch prediction orders them."""
    from runio.row_prediction import rack_size
    from model.solvers import predict_many
    distinct = sorted(dict.fromkeys(scenarios), key=rack_size)
    preds = predict_many(distinct, profile, progress=progress) if distinct else []
    solved = dict(zip(distinct, preds))
    return [solved[s] for s in scenarios]


def simulate_rack(task: tuple) -> tuple[int, float | None, bool]:
    """(task number, simulated throughput in MOPS, interrupted) of one rack."""
    from model.rack import compile_rack
    from sim.run import FastSimulator, interrupted_after
    n, scenario, profile, seconds, seed = task
    pred = FastSimulator(seconds, seed, partial=True).solve(compile_rack(scenario, profile))
    if interrupted_after(pred) is not None:
        return n, None, True
    return n, float(pred.throughput_mops), False


def _pool_map(fn: Callable[[tuple], tuple], tasks: Sequence[tuple], jobs: int) -> Iterator[tuple]:
    """``fn(task)`` for every task, yielded as each finishes: in this process
    (``jobs`` 1, or one task), else by ``jobs`` worker processes that ignore
    Ctrl-C and never outlive the call. ``fn`` returns its task number first."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield fn(t)
        return
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    from runio.exits import RunFailed
    from runio.workers import solver_worker, worker_pool
    with worker_pool(min(jobs, len(tasks)), initializer=solver_worker) as pool:
        pending = {pool.submit(fn, t) for t in tasks}
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for fut in done:
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    raise RunFailed(f"a worker process of --jobs {jobs} ended abruptly "
                                    "(killed, or out of memory?); run again with --jobs 1"
                                    ) from None


def predict_sim(items: Sequence[tuple[Any, Any]], seconds: float, seed: int, jobs: int = 1,
                progress: Progress | None = None) -> tuple[dict[int, float], bool]:
    """Simulated throughput (MOPS) of each distinct ``(scenario, profile)``
    (``seconds`` simulated seconds each, the fast engine): ``{item index:
    MOPS}`` and whether Ctrl-C stopped the runs (the finished ones are kept).
    ``progress(n)`` hears of each rack finished."""
    tasks = [(i, sc, prof, seconds, seed) for i, (sc, prof) in enumerate(items)]
    # the largest racks first, so that the last ones to finish are short
    from runio.row_prediction import rack_size
    tasks.sort(key=lambda t: rack_size(t[1]), reverse=True)
    out: dict[int, float] = {}
    try:
        for n, mops, stopped in _pool_map(simulate_rack, tasks, jobs):
            if stopped:                   # Ctrl-C inside a run in this process
                return out, True
            out[n] = mops
            if progress is not None:
                progress(1)
    except KeyboardInterrupt:
        return out, True
    return out, False


# ---------------------------------------------------------------------------
# held out
# ---------------------------------------------------------------------------

def holdout_folds(pairs: Sequence[Pair], runs: Sequence[Run]) -> tuple[list[tuple[int, ...]],
                                                                        list[int]]:
    """The distinct sets of held-out rows (indices into ``runs``) and, per
    pair, which set it is predicted under. A pair holds out its two rows and
    every row of the same configuration as either (same kind and knobs)."""
    by_config: dict[tuple, list[int]] = {}
    for r in runs:
        by_config.setdefault(r.config, []).append(r.index)
    folds: dict[tuple[int, ...], int] = {}
    of_pair = []
    for p in pairs:
        held = tuple(sorted(set(by_config[p.a.config]) | set(by_config[p.b.config])))
        of_pair.append(folds.setdefault(held, len(folds)))
    return list(folds), of_pair


def training_rows(runs: Sequence[Run], held: Sequence[int]) -> list[dict[str, str]]:
    """The rows a refit without ``held`` fits on (refused when none is left)."""
    drop = set(held)
    train = [r.row for r in runs if r.index not in drop]
    if not train:
        names = ", ".join(runs[i].id for i in held)
        raise InputError(f"holding out {names} leaves no row to fit on; give more rows",
                         field="--holdout")
    return train


def fit_without(runs: Sequence[Run], held: Sequence[int], make: Callable[[], Any]) -> Any:
    """The profile the fitter makes from every row but ``held``, and its warnings."""
    fitter = make().fit(training_rows(runs, held))
    return fitter.profile_, list(getattr(fitter, "warnings_", ()))
