"""Predicting many rows of a run kind at once (batch, validate, cross-validation).

A kind with a rack form (:class:`model.registry.RackForm`) is predicted in
batches: the racks every row needs are collected and deduplicated (rows that
share a configuration, and the NoCache baseline of every FarReach row with
the same settings, are solved once), then solved together at the profile's
centre and at each interval sigma point (:mod:`model.intervals`) by
:func:`model.solvers.predict_many`. Other kinds go row by row through their
``predict_row``. Either way the result of a row is ``{"pred_<col>": value,
"pred_<col>_lo"/"_hi": ...}``, and an error names the file, line and field.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from model.errors import InputError
from model.intervals import columns_with_intervals, sigma_profiles, solve_grid
from model.profile import Profile
from model.registry import KINDS, RunKind

__all__ = ["predict_kind_rows", "rack_predict_row", "row_racks", "rack_size"]

Progress = Callable[[int, int], None]


def predict_kind_rows(kind: RunKind, rows: Sequence[dict], profile: Profile,
                      source: str | None = None, intervals: bool = True,
                      progress: Progress | None = None,
                      solved: dict | None = None,
                      needs: Sequence[list] | None = None) -> list[dict[str, Any]]:
    """``pred_`` columns of every row, in order. ``progress(done, total)`` is
    called as work completes (racks solved, or rows for row-by-row kinds).

    ``solved`` (rack scenario -> its predictions at the centre and each sigma
    point) carries racks across calls: a caller that solves a long file in
    pieces solves a rack shared by several pieces (a NoCache baseline) once.
    It is read and filled in here. ``needs``: the racks of each row, as
    :func:`row_racks` gave them (a caller that checked the rows first need
    not build their scenarios twice)."""
    if kind.rack is None:
        out = []
        for i, row in enumerate(rows):
            out.append(_located(lambda: kind.predict_row(row, profile), row, source))
            if progress is not None:
                progress(i + 1, len(rows))
        return out
    form = kind.rack
    # Every row's racks first: a bad row fails before any solving.
    if needs is None:
        needs = [_located(lambda: form.scenarios(row), row, source) for row in rows]
    solved = {} if solved is None else solved
    todo = [s for s in dict.fromkeys(s for ss in needs for s in ss) if s not in solved]
    # Racks of like size batch together: a batch pads every rack to its
    # largest server count and client population, and a 16-server rack
    # beside a 3,911-server one paid for 3,911 stations at every step.
    todo.sort(key=rack_size)
    points = sigma_profiles(profile)[0] if intervals else []
    from model.solvers import predict_many
    grid = solve_grid(todo, [profile, *points], predict_many, progress)
    for i, s in enumerate(todo):
        solved[s] = [g[i] for g in grid]
    out = []
    for row, ss in zip(rows, needs):
        at = [[solved[s][j] for s in ss] for j in range(1 + len(points))]
        centre = _with_latency(_located(lambda: form.columns(row, at[0]), row, source), at[0])
        if intervals:
            others = [_with_latency(form.columns(row, a), a) for a in at[1:]]
            out.append(columns_with_intervals(centre, others, profile, kind.name))
        else:
            out.append({f"pred_{c}": v for c, v in centre.items()})
        jumps = [p for p in at[0] if p.details.get("jump")]
        if jumps:
            out[-1][NOTE] = ("the rack sits where its load balance jumps (a flush or resend "
                             "cliff): the figures are those at the jump; the simulator "
                             "alternates between the two sides (python -m sim simulate)")
    return out


def _with_latency(cols: dict[str, Any], preds: list) -> dict[str, Any]:
    """A rack row's columns plus its own rack's client latency, mean and
    percentiles (predicted whether or not the row measured them; a kind
    that measures them under these names keeps its own)."""
    from model.prediction import latency_columns
    return {**cols, **{k: v for k, v in latency_columns(preds[0]).items() if k not in cols}} \
        if preds else cols


#: the column that flags a row whose answer sits at a jump of the load balance
NOTE = "pred_note"


def rack_size(sc) -> tuple:
    """Sort key of a rack scenario: servers, then clients, by order of magnitude."""
    try:
        servers, clients = int(sc.servers.count), int(sc.clients.threads)
    except AttributeError:                  # not a rack scenario: keep the order
        return (0, 0)
    return (max(servers, 1).bit_length(), max(clients, 1).bit_length(), servers, clients)


def row_racks(kind: RunKind, rows: Sequence[dict], source: str | None = None) -> list[list]:
    """The rack scenarios each row needs (none for a kind without a rack form).

    Raises the first bad row's error (file, line, column) before any solving,
    for callers that solve a long file in pieces (batch prediction in chunks)."""
    if kind.rack is None:
        return [[] for _ in rows]
    return [_located(lambda: kind.rack.scenarios(row), row, source) for row in rows]


def rack_predict_row(kind_name: str) -> Callable[[dict, Profile], dict[str, Any]]:
    """A ``predict_row`` for a rack kind: the one-row case of :func:`predict_kind_rows`."""
    def predict_row(row, profile):
        return predict_kind_rows(KINDS[kind_name], [row], profile)[0]
    return predict_row


def _located(fn, row, source):
    try:
        return fn()
    except InputError as exc:
        line = row.get("__line__")
        raise exc.located(source=source or row.get("__source__"),
                          line=int(line) if line and str(line).isdigit() else None) from None
