"""What the simulators count: one schema and one latency histogram for both engines.

Counters are reset at every chunk (normally one simulated second) and summed
by :func:`sim.run.run_config`. The times (``busy``, ``block``, ``stall``,
``client_busy``) are those spent within the chunk: what spans a boundary the
run goes on past is split there (the engines' ``carry_over``), so no chunk
holds more of a worker's time than its length. Global counters are one
float each; station counters are one float per worker. The compiled kernel indexes them by the
constants below (numba freezes module-level integers at compile time), and
the SimPy engine fills the same arrays.
"""

from __future__ import annotations

import bisect

import numpy as np

GLOBAL = (
    "done",         # client requests completed
    "lat",          # sum of their latencies, us
    "lat2",         # sum of squared latencies, us^2
    "hits",         # completed by the switch cache
    "retried",      # completed by a resend (every earlier attempt lost or too late)
    "stale",        # replies that completed nothing (duplicates, late replies)
    "resends",      # packets sent again after a timeout (the notes' false positives)
    "wire",         # request packets lost on the wire
    "issued",       # client requests started
    "switches",     # memtable switches
    "flushes",      # flush jobs completed
    "compactions",  # compaction jobs completed
    "open_done",    # open-class packets served (write-backs, or an open network's requests)
    "open_resp",    # their summed response times, us
    "client_busy",  # busy time of the client machines' cores, us (model.rack.clients)
    "client_res",   # time client threads spent at the client cores (waiting and busy), us
)
STATION = (
    "arr",          # packets that reached the worker's socket
    "drop",         # ... dropped because the receive buffer was full
    "compl",        # services completed
    "busy",         # busy time, us (service, WAL block, slowdown, stop and commit included)
    "block",        # WAL-switch and slowdown delay, us
    "stall",        # write-stop time, us
    "writes",       # writes applied
    "commit",       # time writes spent on the machine's commit path (waiting and committing), us
)

(G_DONE, G_LAT, G_LAT2, G_HITS, G_RETRIED, G_STALE, G_RESENDS, G_WIRE, G_ISSUED, G_SWITCHES,
 G_FLUSHES, G_COMPACTIONS, G_OPEN_DONE, G_OPEN_RESP, G_CLIENT_BUSY,
 G_CLIENT_RES) = range(len(GLOBAL))
C_ARR, C_DROP, C_COMPL, C_BUSY, C_BLOCK, C_STALL, C_WRITES, C_COMMIT = range(len(STATION))
G_N, C_N = len(GLOBAL), len(STATION)

# Latency histogram: 20 buckets per decade from 0.1 us to 10^8 us (bucket k
# covers [10^(-1 + k/20), 10^(-1 + (k+1)/20)); the last one takes the rest).
HIST_PER_DECADE = 20
HIST_LO_DECADE = -1
HIST_BINS = 9 * HIST_PER_DECADE + 1


def hist_edges_us() -> np.ndarray:
    """Lower edges of the latency histogram buckets (us), plus the last upper edge."""
    return 10.0 ** (HIST_LO_DECADE + np.arange(HIST_BINS + 1) / HIST_PER_DECADE)


_EDGE_LIST = [float(x) for x in hist_edges_us()]    # for bisect, in plain Python


def hist_bin(lat: float) -> int:
    """Bucket of a latency (us): the k with ``edge_k <= lat < edge_(k+1)``
    (:func:`hist_edges_us`); 0 below the second edge (zero and NaN included),
    the last bucket from its edge on. The compiled kernel bins with
    :func:`sim.fast_kernel.hist_bin`, tested equal to this."""
    if not lat >= _EDGE_LIST[1]:
        return 0
    return min(bisect.bisect_right(_EDGE_LIST, lat) - 1, HIST_BINS - 1)


# For the compiled binning: a float's binary exponent and its top mantissa
# bits pick a cell of 1/2^CELL_BITS of an octave (0.047 buckets), and a cell
# holds at most one bucket edge, so the cell's first bucket and one
# comparison with the next edge give the bucket without a logarithm.
CELL_BITS = 7
CELL_E0 = -5                         # binary exponent of the first cell row: 2^-5 us < 0.1 us
CELL_ROWS = 34                       # up to 2^29 us > 10^8 us


def _cell_table() -> np.ndarray:
    e = CELL_E0 + np.arange(CELL_ROWS)[:, None]
    lo = np.ldexp(1.0 + np.arange(2 ** CELL_BITS)[None, :] / 2 ** CELL_BITS, e)   # cell's low end
    k = np.searchsorted(hist_edges_us(), lo.ravel(), side="right") - 1
    return np.clip(k, 0, HIST_BINS - 1).astype(np.int16)


HIST_CELLS = _cell_table()
# the lower edges, then infinity: the last bucket has no upper edge
HIST_EDGES_PAD = np.concatenate((hist_edges_us()[:HIST_BINS], [np.inf]))


def new_chunk(stations: int):
    """(global counters, station counters, histogram), zeroed."""
    return np.zeros(G_N), np.zeros((stations, C_N)), np.zeros(HIST_BINS, dtype=np.int64)


def as_dict(G: np.ndarray, C: np.ndarray, hist: np.ndarray) -> dict:
    """A chunk's counters by name (copies)."""
    out = {k: float(G[i]) for i, k in enumerate(GLOBAL)}
    for j, k in enumerate(STATION):
        out[k] = C[:, j].copy()
    out["hist"] = hist.copy()
    return out
