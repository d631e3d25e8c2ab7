"""How a plan's rows are cut into pieces for solving: batch prediction's schedule.

The analytic solver solves a piece's racks in one batch, padded to the
piece's largest population, so a piece is bounded in rows and in padded
cells (:func:`pieces`). For worker processes a plan sorted small racks first
is cut into runs of about equal estimated cost (:func:`balanced`, the cost
model :func:`row_cost`), each run into even pieces (:func:`even`). Every row
appears once, in order. ``needs[i]`` lists the scenarios (racks) row ``i``
solves; a rack shared by rows (a NoCache baseline) counts once.
"""

from __future__ import annotations

import math

from model.profile import Profile


#: a piece solved in parallel has at least this many rows (fewer: the solver's
#: fixed cost per step outweighs the second core)
MIN_PARALLEL_ROWS = 64


#: A piece's racks x solves x largest population at most this: the solver
#: pads every rack of a batch to its largest population (the throughput
#: history X(1..N) of each), and 512 racks of up to 941,799 clients took
#: 12 GB in a full-range plan without intervals. 2^24 keeps each such array
#: near 128 MB.
PIECE_CELLS = 1 << 24


def solves_per_rack(profile: Profile, intervals: bool) -> int:
    """Solves per rack: the centre, and each sigma point with intervals."""
    from model.intervals import sigma_profiles
    return 1 + (len(sigma_profiles(profile)[0]) if intervals else 0)


def rows_per_piece(solves: int, needs: list[list]) -> int:
    """Rows whose racks fill about one block of :func:`model.intervals.solve_grid`
    (512 rack solves over the centre and the sigma points)."""
    per_row = max(1.0, sum(map(len, needs)) / max(len(needs), 1))
    return max(1, int(512 / solves / per_row))


def pieces(order: list[int], needs: list[list], step: int, solves: int) -> list[list[int]]:
    """``order`` cut into pieces of at most ``step`` rows, and fewer where
    their racks' padded populations pass :data:`PIECE_CELLS` (one row at
    least)."""
    pieces: list[list[int]] = []
    part: list[int] = []
    racks: set = set()
    top = 0
    for i in order:
        more = racks | set(needs[i])
        big = max([top] + [_clients(s) for s in needs[i]])
        if part and (len(part) >= step or len(more) * solves * big > PIECE_CELLS):
            pieces.append(part)
            part, more, big = [], set(needs[i]), max([0] + [_clients(s) for s in needs[i]])
        part.append(i)
        racks, top = more, big
    if part:
        pieces.append(part)
    return pieces


#: a row's estimated solving cost, (1 + clients / COST_CLIENTS) x (1 +
#: servers / COST_SERVERS): fitted (rms log error 0.32) to the time per row
#: of each servers x clients group of the 1,000-row plan of
#: benchmarks/bench_predict.py in one process, 0.9 ms at 1 server and 32
#: clients to 21 ms at 64 servers and 1,024 (more clients: more steps and
#: packet loss; more servers: more stations).
COST_CLIENTS, COST_SERVERS = 45.0, 60.0


def row_cost(scenarios: list) -> float:
    """Estimated cost of solving a row's racks (:data:`COST_CLIENTS`)."""
    worst = 1.0
    for sc in scenarios:
        try:
            c, s = int(sc.clients.threads), int(sc.servers.count)
        except AttributeError:                  # not a rack scenario
            continue
        worst = max(worst, (1.0 + c / COST_CLIENTS) * (1.0 + s / COST_SERVERS))
    return worst


def even(part: list[int], step: int) -> list[list[int]]:
    """``part`` cut into the fewest pieces of at most ``step`` rows, of about
    equal size (not full pieces and a small rest)."""
    n = max(1, math.ceil(len(part) / max(step, 1)))
    size = math.ceil(len(part) / n)
    return [part[i:i + size] for i in range(0, len(part), size)]


def balanced(order: list[int], needs: list[list], parts: int) -> list[list[int]]:
    """``order`` cut into ``parts`` runs of about equal estimated cost
    (:func:`row_cost`), each of at least :data:`MIN_PARALLEL_ROWS` rows."""
    cost = [row_cost(needs[i]) for i in order]
    total = sum(cost)
    parts = max(1, min(parts, len(order) // MIN_PARALLEL_ROWS))
    out: list[list[int]] = [[]]
    acc = 0.0
    for i, c in zip(order, cost):
        if (acc >= total * len(out) / parts and len(out) < parts
                and len(out[-1]) >= MIN_PARALLEL_ROWS):
            out.append([])
        out[-1].append(i)
        acc += c
    return out


def _clients(sc) -> int:
    try:
        return int(sc.clients.threads)
    except AttributeError:                  # not a rack scenario
        return 0
