"""Morphling: a 3-replica KV store compared over its read paths (docs/domain.md section 4).

Both implementations are closed loops: every client thread/connection has one
read outstanding, spends a fixed client + network delay per read, and queues
at the stations that serve it (C: one serving thread; Go: the client
machines and the server nodes' core pools).

C implementation (``morphling_c.csv``, profile ``morphling-c``)
    * unreplicated reads: one server thread does ``server_us`` (~36 us, the
      M19 note) of CPU per read, so throughput levels off at 1/server_us
      (~28-29 Kops) however many client threads there are.
    * guidance reads take a shorter client path (``guidance_net_us``) and are
      served by ``guidance_replicas`` replicas (1 by default: the notes say
      throughput levels off near 29 Kops for both paths).
    * ``unreplicated-local`` (all replicas on one host) uses the same numbers.

Go implementation (``morphling_go*.csv``, profile ``morphling-go``)
    * clients = 2 x conns_per_client (two client machines) = ops x latency.
    * who serves a read (:func:`model.systems.pools.read_path_stations`):
      unreplicated -- the server's core pool (``read_us`` on ``server_cores``);
      Morphling -- one of the serving replicas' pools (the read skips the log)
      plus a guidance delay; Raft -- the leader's pool for the read and one
      exchange with each follower (the entry out, the ack back: each exchange
      a receive and a send like the read's own, so the leader does
      ``replicas`` x ``read_us`` per Raft read), each follower's pool its side
      of the exchange, plus a quorum delay. Each read also costs its client
      machine CPU (``client_cpu_us``).
    * the two ceilings the notes state set the two CPU costs: Morphling reads
      peak at about 44 Kops where the client machines limit them (22 Kops a
      machine: ``client_cpu_us`` = 1 / 22 Kops), unreplicated reads at about
      40 Kops where the one server's pool limits them (``read_us`` =
      ``server_cores`` / 40 Kops). Raft's ceiling follows from its messages:
      ``server_cores`` / (3 ``read_us``) = 13.3 Kops.
    * hops are pure delays (2, Raft 4), plus a wake-up when the receiving
      node's threads are parked, which fades as exp(-rate x spin_us).
    * ``netstack_ms``: the per-request network-stack time measured by adding a
      1 ms sleep to the processing loop (610 ops/s, not 1000):
      :func:`sleep_loop_ops` reproduces that note.
    See docs/systems.md for the evidence behind each piece.
"""

from __future__ import annotations

import math
from typing import Any


from model.blocks import (any_replica_stations, bottleneck, closed_loop, closed_loop_scv,
                          wakeup_delay)
from model.errors import InputError
from model.profile import Profile
from model.uncertainty import with_intervals
from model.registry import RunKind, register
from model.rows import choice, number

from .base import ParamSpec, System, register_system
from .pools import read_path_stations

C_PARAMS = (
    ParamSpec("server_us", "us", 36.0, 20.0, 60.0,
              "serial CPU per read at the serving replica thread"),
    ParamSpec("net_us", "us", 240.0, 20.0, 2000.0,
              "client + network delay per unreplicated read (everything but the server thread)"),
    ParamSpec("guidance_net_us", "us", 150.0, 20.0, 2000.0,
              "client + network delay per guidance read"),
    ParamSpec("guidance_replicas", "replicas", 1.0, 1.0, 3.0,
              "replicas whose threads serve guidance reads (assumption: 1, the notes "
              "report one ~29 Kops ceiling)", fit=False),
)

GO_PARAMS = (
    ParamSpec("hop_us", "us", 110.0, 20.0, 1000.0,
              "one network traversal of a message (wire + both kernel stacks + Go netpoller "
              "wake-up): a pure delay; a read crosses 2 hops, a Raft read 4"),
    ParamSpec("wake_us", "us", 40.0, 0.0, 1000.0,
              "extra delay per hop when the receiving node's threads are parked (an idle "
              "Go runtime must wake a thread: futex + scheduler); vanishes under load"),
    ParamSpec("spin_us", "us", 50.0, 1.0, 5000.0,
              "window after a node's last message in which its threads are still awake: "
              "a hop pays wake_us with probability exp(-reads/us x spin_us)"),
    ParamSpec("client_cpu_us", "us", 2.0 / 44e3 * 1e6, 0.5, 500.0,
              "client-machine CPU per read (Go client: marshal, send, receive, unmarshal), "
              "one core-equivalent per machine: from the notes, whose Morphling reads peaked "
              "at about 22 Kops per client machine (44 Kops on two; DOMAIN.md section 4) "
              "where the serving replicas were not the limit: 1 / 22 Kops", fit=False),
    ParamSpec("client_cores", "cores", 1.0, 1.0, 64.0,
              "cores of one client machine that run its connections' reads (assumption: the "
              "load generator's connections are served by one core-equivalent)", fit=False),
    ParamSpec("read_us", "us", 2.0 / 40e3 * 1e6, 0.5, 200.0,
              "server CPU per unreplicated read (receive, look up, reply) on the node's pool: "
              "from the notes, whose unreplicated reads peaked at about 40 Kops (DOMAIN.md "
              "section 4), the one server's ceiling, server_cores / 40 Kops", fit=False),
    ParamSpec("morphling_extra_us", "us", 15.0, 0.0, 500.0,
              "latency a Morphling read adds to an unreplicated one (its guidance check), "
              "a delay that does not occupy the serving loop"),
    ParamSpec("morphling_replicas", "replicas", 2.0, 1.0, 3.0,
              "replicas whose processing loops serve Morphling reads (an assumption: 2 "
              "gives the 55-60 Kops plateau of the public benchmark; docs/systems.md)", fit=False),
    ParamSpec("quorum_us", "us", 100.0, 0.0, 2000.0,
              "latency a Raft read adds beyond its 2 extra hops: the followers' handling of the "
              "heartbeat and the leader's commit check, a delay off the serving loops"),
    ParamSpec("server_cores", "cores", 2.0, 1.0, 64.0,
              "cores of a server node that run its goroutines' reads in parallel (assumption: "
              "2, the fewest that let one server do the 33-34 Kops unreplicated runs at ~36 us "
              "a read; docs/systems.md)", fit=False),
    ParamSpec("replicas", "replicas", 3.0, 1.0, 9.0, "replicas (leader + followers)", fit=False),
    ParamSpec("loop_scv", "ratio", 0.0, 0.0, 1.0,
              "squared coefficient of variation of a serving loop's (and a client machine's) "
              "time per read: 0, a fixed code path per read, so a read arriving at a busy loop "
              "waits half a read for the one in service, not a whole one as with exponential "
              "service (assumption; docs/systems.md)", fit=False),
    ParamSpec("netstack_ms", "ms", 0.639, 0.0, 5.0,
              "network-stack time per request of the 1 ms sleep experiment: 1/(610 ops/s) - 1 ms "
              "(docs/systems.md)", fit=False),
)

C_MODES = {"unreplicated": "unreplicated", "unreplicated-local": "unreplicated",
           "guidance": "guidance"}
GO_MODES = {"raft": "raft", "morphling": "morphling", "unreplicated": "unreplicated"}


# --------------------------------------------------------------------------
# C
# --------------------------------------------------------------------------

def c_throughput(mode: str, threads: int, p: Profile) -> float:
    """Reads per us for the C implementation."""
    s = p["server_us"]
    if mode == "guidance":
        r = max(1, int(round(p["guidance_replicas"])))
        return closed_loop(threads, p["guidance_net_us"], any_replica_stations(s, r)).throughput
    return closed_loop(threads, p["net_us"], [s]).throughput


def _c_row(row, profile: Profile) -> dict[str, Any]:
    mode = choice(row, "read_mode", C_MODES)
    n = int(number(row, "client_threads", integer=True, minimum=1))
    number(row, "replicas", 3, integer=True, minimum=1)
    return {"pred_kops": c_throughput(mode, n, profile) * 1e3}


# --------------------------------------------------------------------------
# Go
# --------------------------------------------------------------------------

def go_network(mode: str, machines: int, p: Profile) -> tuple[float, list[float], list[int]]:
    """(pure delay us, station demands us, station cores) of one Go read.

    Delay: the hops the read's messages cross (2; Raft 4: client -> leader ->
    followers -> leader -> client) plus the mode's own delay (Morphling's
    guidance check, Raft's quorum handling). Stations
    (:func:`model.systems.pools.read_path_stations`): the client machines
    (each carries 1/machines of the reads), then the server nodes' core pools
    (``server_cores`` each): the one server's (unreplicated), the serving
    replicas' (Morphling reads skip the log), or the leader's pool plus each
    node's serial Raft log loop (Raft)."""
    return _go_path(mode, machines, p)[:3]


def _go_path(mode: str, machines: int, p: Profile):
    m = max(1, int(machines))
    cc = max(1, int(round(p["client_cores"])))
    sc = max(1, int(round(p.get("server_cores", 1.0))))
    if mode == "unreplicated":
        path = read_path_stations("single", p["read_us"], sc)
    elif mode == "morphling":
        path = read_path_stations("any", p["read_us"], sc,
                                  serving=max(1, int(round(p["morphling_replicas"]))))
    else:
        # a Raft read: the leader handles the client's exchange and one with
        # each follower (the entry out, the ack back), each a receive and a
        # send through the same netpoller and syscalls as a read's: a message
        # costs half a read's exchange, on the node's pool
        path = read_path_stations("log", p["read_us"], sc,
                                  replicas=max(1, int(round(p["replicas"]))),
                                  msg=p["read_us"] / 2.0)
    demands = [p["client_cpu_us"] / m] * m + list(path.demands)
    cores = [cc] * m + list(path.cores)
    names = [f"client machine {i + 1}" for i in range(m)] + list(path.names)
    hops = 4 if mode == "raft" else 2
    delay = hops * p["hop_us"] + {"morphling": p["morphling_extra_us"],
                                  "raft": p["quorum_us"]}.get(mode, 0.0)
    return delay, demands, cores, names


def go_solve(mode: str, clients: int, p: Profile, machines: int = 2) -> tuple[float, float]:
    """(throughput ops/us, mean latency us) for N Go clients on ``machines`` machines.

    Raft waits for the first of its followers' acks (a quorum of 2 of 3 with
    the leader's own vote); the closed loop counts every follower as a
    station, which is exact for the load and slightly pessimistic for the
    latency of the fastest ack (a follower's pool is lightly loaded: one
    exchange per read against the leader's three)."""
    z, d, c = go_network(mode, machines, p)
    hops = 4 if mode == "raft" else 2

    scv = p.get("loop_scv", 1.0)

    def loop(x: float):
        return closed_loop_scv(clients, z + hops * wakeup_delay(p["wake_us"], x, p["spin_us"]),
                               d, c, scv)

    # the wake-up delay falls as the read rate rises: X(x) is increasing in x
    # and bounded by the loop without wake-ups, so g(x) = X(x) - x has one root
    # between the loop with every wake-up paid and the one with none
    lo, hi = loop(0.0).throughput, closed_loop_scv(clients, z, d, c, scv).throughput

    def g(x: float) -> float:
        return loop(x).throughput - x

    if g(hi) >= 0:               # rounding at the no-wake-up bound
        cl = loop(hi)
    elif g(lo) <= 0:
        cl = loop(lo)
    else:
        # scipy.optimize takes 0.3 s to import: every '--runs' command pays it
        # when imported with the run kinds, so only the controller rows do
        from scipy.optimize import brentq
        cl = loop(brentq(g, lo, hi, xtol=1e-14, rtol=1e-10))
    return cl.throughput, cl.cycle


def go_capacity(mode: str, p: Profile, machines: int = 2) -> tuple[float, str]:
    """(ceiling ops/us, the resource that sets it): the largest demand per core."""
    z, d, c, names = _go_path(mode, machines, p)
    b = bottleneck(z, d, c)
    return b.capacity, names[b.index]


def sleep_loop_ops(sleep_ms: float, p: Profile) -> float:
    """Ops/s of a serial processing loop that sleeps ``sleep_ms`` per request:
    1 / (sleep + network-stack time). 1 ms -> ~610 ops/s (docs/domain.md section 4)."""
    return 1e3 / (sleep_ms + p["netstack_ms"])


def _go_row(row, profile: Profile) -> dict[str, Any]:
    mode = choice(row, "read_mode", GO_MODES)
    cn = int(number(row, "conns_per_client", integer=True, minimum=1))
    machines = int(number(row, "client_machines", 2, integer=True, minimum=1))
    x, lat = go_solve(mode, cn * machines, profile, machines)
    return {"pred_ops": x * 1e6, "pred_latency_ns": lat * 1e3}


def _go_control_row(row, profile: Profile) -> dict[str, Any]:
    mode = choice(row, "read_mode", GO_MODES)
    step = number(row, "step", None if "clients_by_littles_law" not in row else 0.0,
                  minimum=0)
    n = number(row, "clients_by_littles_law", 0.0, minimum=0)
    clients = int(round(n)) if n and n >= 1 else int(round(2 * step))
    if clients < 1:
        raise InputError("need step >= 1 or clients_by_littles_law >= 1", field="step")
    x, lat = go_solve(mode, clients, profile)
    return {"pred_ops": x * 1e6, "pred_latency_us": lat}


# --------------------------------------------------------------------------
# kinds, curves, systems
# --------------------------------------------------------------------------

C_KIND = register(RunKind(
    name="morphling_c",
    signature=frozenset({"read_mode", "client_threads", "groups", "replicas", "kops"}),
    profile="morphling-c", measured=("kops",),
    predict_row=with_intervals(_c_row, "morphling_c"),
    extra={"curve": {"by": ("read_mode", "groups", "replicas", "value_bytes"),
                     "order": "client_threads"}},
    description="Morphling (C) read throughput vs client threads"))

GO_KIND = register(RunKind(
    name="morphling_go",
    signature=frozenset({"read_mode", "conns_per_client", "client_machines", "latency_ns", "ops"}),
    profile="morphling-go", measured=("ops", "latency_ns"),
    predict_row=with_intervals(_go_row, "morphling_go"),
    extra={"curve": {"by": ("read_mode", "client_machines"), "order": "conns_per_client"}},
    description="Morphling (Go) fixed-connection series"))

GO_CONTROL_KIND = register(RunKind(
    name="morphling_go_control",
    signature=frozenset({"read_mode", "step", "ops", "latency_us", "clients_by_littles_law"}),
    profile="morphling-go", measured=("ops", "latency_us"),
    predict_row=with_intervals(_go_control_row, "morphling_go_control"),
    extra={"curve": {"by": ("series",), "order": "step"}},
    description="Morphling (Go) controller series stepping up clients"))


def _knee(z: float, d_total: float, d_max: float) -> float:
    """Balanced-bound knee N* = (Z + D) / D_max of a closed loop."""
    return (z + d_total) / d_max


def c_curves(p: Profile) -> list[dict[str, Any]]:
    rows = []
    for mode in ("unreplicated", "guidance"):
        z = p["net_us"] if mode == "unreplicated" else p["guidance_net_us"]
        r = 1 if mode == "unreplicated" else max(1, int(round(p["guidance_replicas"])))
        knee = _knee(z, p["server_us"], p["server_us"] / r)
        cap = r / p["server_us"] * 1e3
        for n in range(1, 65):
            k = c_throughput(mode, n, p) * 1e3
            rows.append({"series": mode, "x": n, "x_label": "client threads",
                         "y": k, "y_label": "kops", "kind": "predicted",
                         "flag": "saturation" if n == math.ceil(knee) else "",
                         "capacity_kops": cap})
    return rows


def go_curves(p: Profile) -> list[dict[str, Any]]:
    """Ops/s and latency vs clients (2 machines) per read path; the saturation
    flag sits at the balanced-bound knee N* = (Z + D) / D_max of the resource
    that sets the ceiling."""
    rows = []
    for mode in ("unreplicated", "morphling", "raft"):
        z, d, c = go_network(mode, 2, p)
        cap, who = go_capacity(mode, p)
        knee = math.ceil(bottleneck(z, d, c).knee)
        for n in range(1, 129):
            x, lat = go_solve(mode, n, p)
            rows.append({"series": mode, "x": n, "x_label": "clients (2 x conns_per_client)",
                         "y": x * 1e6, "y_label": "ops/s", "latency_us": lat,
                         "kind": "predicted", "flag": "saturation" if n == knee else "",
                         "capacity_ops": cap * 1e6, "bottleneck": who})
    return rows


MORPHLING_C = register_system(System(
    name="morphling-c", params=C_PARAMS, kinds=(C_KIND,), data_files=("morphling_c",),
    curves=c_curves, description="Morphling (C): unreplicated vs guidance reads",
    # M19's note: 35.2-36.9 us server processing per replica thread
    priors={"M19 server processing 36.05 us": lambda p: math.log(p["server_us"] / 36.05)}))

# What the notes state of the Go runs beyond the calibration rows
# (DOMAIN.md section 4; docs/systems.md "Morphling (Go)"): at 50 connections
# per client machine (two machines, 100 clients) the largest throughput the
# lab measured, Morphling reads about 44 Kops and unreplicated reads about
# 40 Kops. They set client_cpu_us and read_us (the two ceilings); the rows
# fit the rest. tests/systems/test_morphling_ceilings.py holds the model to them.
PEAK_CLIENTS = 100
NOTED_PEAKS_OPS = {"morphling": 44e3, "unreplicated": 40e3}

MORPHLING_GO = register_system(System(
    name="morphling-go", params=GO_PARAMS, kinds=(GO_KIND, GO_CONTROL_KIND),
    data_files=("morphling_go", "morphling_go_control"), curves=go_curves,
    description="Morphling (Go): Raft, Morphling and unreplicated reads"))
