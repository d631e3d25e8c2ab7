"""How predict --runs cuts a plan into pieces (runio.plan_pieces)."""

from __future__ import annotations

from types import SimpleNamespace

from runio import plan_pieces as pp


class _Rack:
    def __init__(self, clients: int, tag: str):
        self.clients = SimpleNamespace(threads=clients)
        self.key = (clients, tag)

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, _Rack) and self.key == other.key


def test_pieces_keep_the_order_and_every_row_once():
    needs = [[_Rack(100, str(i)), _Rack(100, "base")] for i in range(10)]
    pieces = pp.pieces(list(range(10)), needs, step=4, solves=19)
    assert pieces == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_rows_of_large_populations_are_cut_before_the_padded_size_passes_the_budget():
    """A full-range plan's last rows (10^5-10^6 clients) padded 512 racks to
    the largest population: 12 GB. Such rows now go a few at a time, and a
    row that alone passes the budget still gets its own piece."""
    n = [1_000] * 6 + [200_000] * 4 + [5_000_000]
    needs = [[_Rack(c, str(i))] for i, c in enumerate(n)]
    pieces = pp.pieces(list(range(len(n))), needs, step=256, solves=19)
    assert [i for p in pieces for i in p] == list(range(len(n)))
    assert pieces[0] == [0, 1, 2, 3, 4, 5]
    assert pieces[-1] == [10]
    for p in pieces[:-1]:
        racks = {s for i in p for s in needs[i]}
        assert len(racks) * 19 * max(n[i] for i in p) <= pp.PIECE_CELLS
    # a shared rack (a NoCache baseline) counts once
    shared = _Rack(200_000, "base")
    needs2 = [[_Rack(200_000, str(i)), shared] for i in range(3)]
    # 4 distinct racks x 19 solves x 200,000 = 15.2M cells, within 2^24
    assert pp.pieces([0, 1, 2], needs2, 256, 19) == [[0, 1, 2]]
    needs3 = needs2 + [[_Rack(200_000, "3"), shared]]      # a fifth rack: 19M, cut
    assert pp.pieces([0, 1, 2, 3], needs3, 256, 19) == [[0, 1, 2], [3]]


class _SizedRack(_Rack):
    def __init__(self, clients: int, servers: int, tag: str):
        super().__init__(clients, tag)
        self.servers = SimpleNamespace(count=servers)


def test_worker_pieces_are_of_about_equal_work_not_equal_rows():
    """For worker processes a plan (sorted small racks first) is cut into runs
    of about equal estimated cost: fewer rows where the racks are large, every
    row once and in order, none shorter than MIN_PARALLEL_ROWS."""
    sizes = [(32, 1)] * 300 + [(256, 8)] * 300 + [(1024, 64)] * 300
    needs = [[_SizedRack(c, s, str(i))] for i, (c, s) in enumerate(sizes)]
    parts = pp.balanced(list(range(900)), needs, 4)
    assert [i for p in parts for i in p] == list(range(900))
    assert len(parts) == 4
    assert all(len(p) >= pp.MIN_PARALLEL_ROWS for p in parts)
    cost = [sum(pp.row_cost(needs[i]) for i in p) for p in parts]
    total = sum(cost)
    # each near a quarter (within one row of the largest racks, a few rows' worth)
    assert max(cost) - min(cost) < 0.1 * total
    assert len(parts[0]) > 2 * len(parts[-1])      # the small racks' run holds more rows
    # a short plan: no run below MIN_PARALLEL_ROWS, so fewer runs
    few = pp.balanced(list(range(150)), needs[:150], 4)
    assert len(few) == 2 and all(len(p) >= pp.MIN_PARALLEL_ROWS for p in few)


def test_even_pieces_have_no_small_rest():
    """A run longer than a piece is cut into equal pieces, not full ones and a
    small rest (each piece costs the solver's fixed steps)."""
    part = list(range(100))
    pieces = pp.even(part, 40)
    assert [len(p) for p in pieces] == [34, 34, 32]
    assert [i for p in pieces for i in p] == part
    assert pp.even(part, 100) == [part] and pp.even(part, 1000) == [part]
