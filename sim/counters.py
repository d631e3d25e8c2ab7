"""What the simulators count: one schema and one latency histogram for both engines.

Counters are reset at every chunk (normally one simulated second) and summed
by :func:`sim.run.run_config`. Global counters are one float each; station
counters are one float per worker. The compiled kernel indexes them by the
constants below (numba freezes module-level integers at compile time), and
the SimPy engine fills the same arrays.
"""

from __future__ import annotations

import math

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
)
STATION = (
    "arr",          # packets that reached the worker's socket
    "drop",         # ... dropped because the receive buffer was full
    "compl",        # services completed
    "busy",         # busy time, us (service, WAL block, slowdown and stop included)
    "block",        # WAL-switch and slowdown delay, us
    "stall",        # write-stop time, us
    "writes",       # writes applied
)

(G_DONE, G_LAT, G_LAT2, G_HITS, G_RETRIED, G_STALE, G_RESENDS, G_WIRE, G_ISSUED, G_SWITCHES,
 G_FLUSHES, G_COMPACTIONS, G_OPEN_DONE, G_OPEN_RESP) = range(len(GLOBAL))
C_ARR, C_DROP, C_COMPL, C_BUSY, C_BLOCK, C_STALL, C_WRITES = range(len(STATION))
G_N, C_N = len(GLOBAL), len(STATION)

# Latency histogram: 20 buckets per decade from 0.1 us to 10^8 us (bucket k
# covers [10^(-1 + k/20), 10^(-1 + (k+1)/20)); the last one takes the rest).
HIST_PER_DECADE = 20
HIST_LO_DECADE = -1
HIST_BINS = 9 * HIST_PER_DECADE + 1


def hist_edges_us() -> np.ndarray:
    """Lower edges of the latency histogram buckets (us), plus the last upper edge."""
    return 10.0 ** (HIST_LO_DECADE + np.arange(HIST_BINS + 1) / HIST_PER_DECADE)


def hist_bin(lat: float) -> int:
    """Bucket of a latency (us); numba-compatible."""
    if lat <= 0.0:
        return 0
    b = int(math.floor(math.log10(lat) * HIST_PER_DECADE)) - HIST_LO_DECADE * HIST_PER_DECADE
    if b < 0:
        return 0
    if b >= HIST_BINS:
        return HIST_BINS - 1
    return b


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
