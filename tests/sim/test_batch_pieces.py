"""How predict --runs cuts a plan into pieces (sim.batch._pieces)."""

from __future__ import annotations

from types import SimpleNamespace

from sim import batch


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
    pieces = batch._pieces(list(range(10)), needs, step=4, solves=19)
    assert pieces == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_rows_of_large_populations_are_cut_before_the_padded_size_passes_the_budget():
    """A full-range plan's last rows (10^5-10^6 clients) padded 512 racks to
    the largest population: 12 GB. Such rows now go a few at a time, and a
    row that alone passes the budget still gets its own piece."""
    n = [1_000] * 6 + [200_000] * 4 + [5_000_000]
    needs = [[_Rack(c, str(i))] for i, c in enumerate(n)]
    pieces = batch._pieces(list(range(len(n))), needs, step=256, solves=19)
    assert [i for p in pieces for i in p] == list(range(len(n)))
    assert pieces[0] == [0, 1, 2, 3, 4, 5]
    assert pieces[-1] == [10]
    for p in pieces[:-1]:
        racks = {s for i in p for s in needs[i]}
        assert len(racks) * 19 * max(n[i] for i in p) <= batch.PIECE_CELLS
    # a shared rack (a NoCache baseline) counts once
    shared = _Rack(200_000, "base")
    needs2 = [[_Rack(200_000, str(i)), shared] for i in range(3)]
    # 4 distinct racks x 19 solves x 200,000 = 15.2M cells, within 2^24
    assert batch._pieces([0, 1, 2], needs2, 256, 19) == [[0, 1, 2]]
    needs3 = needs2 + [[_Rack(200_000, "3"), shared]]      # a fifth rack: 19M, cut
    assert batch._pieces([0, 1, 2, 3], needs3, 256, 19) == [[0, 1, 2], [3]]
