"""Morphling: a 3-replica KV store compared over its read paths (DOMAIN.md 4).

Both implementations are closed loops: every client thread/connection has one
read outstanding, spends a fixed client + network delay per read, and queues
at a single-threaded serving station.

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
    * unreplicated and Morphling reads: delay ``net_us`` + the server's serial
      per-read CPU (``unreplicated_us`` / ``morphling_us``).
    * Raft reads: the leader (``raft_leader_us`` of serial CPU) must hear from
      a quorum -- 1 of its 2 followers for 3 replicas -- before replying:
      a k-of-n fork-join wait (:func:`model.blocks.quorum_wait`) of one
      follower round trip ``raft_quorum_rtt_us`` plus follower queueing.
      Solved as a fixed point (the quorum wait depends on throughput).
    * ``netstack_ms``: the per-request network-stack time measured by adding a
      1 ms sleep to the processing loop (610 ops/s, not 1000):
      :func:`sleep_loop_ops` reproduces that note.
"""

from __future__ import annotations

import math
from typing import Any

from model.blocks import any_replica_stations, closed_loop, quorum_wait
from model.errors import InputError
from model.profile import Profile
from model.uncertainty import with_intervals
from model.runs import RunKind, choice, number, register

from .base import ParamSpec, System, register_system

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
    ParamSpec("net_us", "us", 200.0, 20.0, 2000.0,
              "client + network delay per read between a client and the server"),
    ParamSpec("msg_cpu_us", "us", 5.0, 0.5, 100.0,
              "serial server CPU per message handled (receive or send: kernel stack + "
              "Go netpoller wake-up); an unreplicated read is 2 messages, a Raft read "
              "2 + 2 per follower at the leader"),
    ParamSpec("morphling_extra_us", "us", 20.0, 0.0, 200.0,
              "serial server CPU a Morphling read adds to its 2 messages"),
    ParamSpec("raft_quorum_rtt_us", "us", 400.0, 10.0, 5000.0,
              "leader -> follower -> leader round trip of a Raft read (network + stacks)"),
    ParamSpec("replicas", "replicas", 3.0, 1.0, 9.0, "replicas (leader + followers)", fit=False),
    ParamSpec("netstack_ms", "ms", 0.639, 0.0, 5.0,
              "network-stack time per request in the serial loop: 1/(610 ops/s) - 1 ms "
              "(DOMAIN.md 4)", fit=False),
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

def go_demand(mode: str, p: Profile) -> float:
    """Serial server CPU per read (us): messages x per-message cost (+ extra)."""
    m = p["msg_cpu_us"]
    if mode == "unreplicated":
        return 2 * m
    if mode == "morphling":
        return 2 * m + p["morphling_extra_us"]
    followers = max(0, int(round(p["replicas"])) - 1)
    return (2 + 2 * followers) * m


def go_solve(mode: str, clients: int, p: Profile) -> tuple[float, float]:
    """(throughput ops/us, mean latency us) for N Go clients."""
    z = p["net_us"]
    d = go_demand(mode, p)
    if mode in ("unreplicated", "morphling"):
        cl = closed_loop(clients, z, [d])
        return cl.throughput, cl.cycle
    followers = max(0, int(round(p["replicas"])) - 1)
    follower_us = go_demand("unreplicated", p)     # a follower receives and answers
    k = (followers + 1) // 2   # majority of replicas, minus the leader's own vote
    x = 0.0
    for _ in range(30):
        # followers each handle every forked request; cap the load to stay stable
        lam = min(x, 0.95 / follower_us)
        zq = z + quorum_wait(followers, k, lam, follower_us, p["raft_quorum_rtt_us"])
        cl = closed_loop(clients, zq, [d])
        if abs(cl.throughput - x) <= 1e-9 + 1e-6 * x:
            break
        x = 0.5 * (x + cl.throughput)
    return cl.throughput, cl.cycle


def sleep_loop_ops(sleep_ms: float, p: Profile) -> float:
    """Ops/s of a serial processing loop that sleeps ``sleep_ms`` per request:
    1 / (sleep + network-stack time). 1 ms -> ~610 ops/s (DOMAIN.md 4)."""
    return 1e3 / (sleep_ms + p["netstack_ms"])


def _go_row(row, profile: Profile) -> dict[str, Any]:
    mode = choice(row, "read_mode", GO_MODES)
    cn = int(number(row, "conns_per_client", integer=True, minimum=1))
    machines = int(number(row, "client_machines", 2, integer=True, minimum=1))
    x, lat = go_solve(mode, cn * machines, profile)
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
    rows = []
    for mode in ("unreplicated", "morphling", "raft"):
        prev = None
        d = go_demand(mode, p)
        for n in range(1, 129):
            x, lat = go_solve(mode, n, p)
            flag = ""
            # saturation: the marginal client adds < 10 % of its solo share
            if prev is not None and x - prev[0] < 0.1 * (1.0 / (p["net_us"] + d)) and \
                    not any(r.get("flag") == "saturation" and r["series"] == mode for r in rows):
                flag = "saturation"
            rows.append({"series": mode, "x": n, "x_label": "clients (2 x conns_per_client)",
                         "y": x * 1e6, "y_label": "ops/s", "latency_us": lat,
                         "kind": "predicted", "flag": flag, "capacity_ops": 1e6 / d})
            prev = (x, lat)
    return rows


MORPHLING_C = register_system(System(
    name="morphling-c", params=C_PARAMS, kinds=(C_KIND,), data_files=("morphling_c",),
    curves=c_curves, description="Morphling (C): unreplicated vs guidance reads",
    # M19's note: 35.2-36.9 us server processing per replica thread
    priors={"M19 server processing 36.05 us": lambda p: math.log(p["server_us"] / 36.05)}))

MORPHLING_GO = register_system(System(
    name="morphling-go", params=GO_PARAMS, kinds=(GO_KIND, GO_CONTROL_KIND),
    data_files=("morphling_go", "morphling_go_control"), curves=go_curves,
    description="Morphling (Go): Raft, Morphling and unreplicated reads",
    # weak prior (log-sd 0.7): a kernel send/receive plus a goroutine wake-up
    # costs a few us; the data alone show no queueing for unreplicated reads
    priors={"per-message CPU ~5 us": lambda p: math.log(p["msg_cpu_us"] / 5.0) / 0.7}))
