"""Compiled event loop of the fast engine (numba).

The rules of the rack are not here: they are the per-event forms of the
mechanism modules (:mod:`model.rack.lsm`, :mod:`model.rack.service`,
:mod:`model.rack.clients`, :mod:`model.rack.network`,
:mod:`model.rack.placement`), compiled into this loop with numba's
``register_jitable``; the SimPy engine calls the same functions in Python.
This module only schedules events fast. The trick: almost every delay in
the rack is a *constant* (client send cost, network one-way times, the
timeout), and events are processed in time order, so each delay line is a
FIFO whose entries come out sorted:

* ``hit`` FIFO: a cache hit returns after ``send + hit_rtt``;
* ``arr`` FIFO: a miss reaches its worker ``send + rtt/2`` after sending;
* ``rsp`` FIFO: a reply reaches its client ``rtt/2`` after the worker is done;
* timers: every client has one armed deadline, in one of three doubly
  linked lists ordered by deadline: the first sends (staggered starts), send
  deadlines (t + send + timeout) and FarReach re-arms (t + timeout). Within
  a list a new deadline is the latest, so it is inserted from the tail. A
  thread at the client cores has no armed timer: it waits in a fourth list
  that is never scanned.

Service completions use a tournament tree over the worker slots (O(log
slots) per update, O(1) minimum). Background (flush/compaction) events are
rare; the next one is found by a scan, redone only when one changes. The
next event is the earliest of eight: the three FIFO heads, the tree's root,
the earliest timer, the next background, the next open arrival and the
earliest end of a client core's time.

Two shared resources with exponential holding times, both FIFO:

* the client cores (``P_CPU`` > 0, :mod:`model.rack.clients`): before each
  send (a new request's first attempt, a resend) a thread holds one of
  ``I_CCORES`` cores. Waiting threads are a FIFO ring of client ids, the
  cores' ends a binary heap (at most ``I_CCORES`` entries). When a core's
  time ends the thread sends exactly as it did at once before (the attempt,
  the draws of a new request, the timer, the FIFO pushes): core ends come
  in time order and the delays after the send are constants, so the FIFOs
  stay sorted. A request starts (its latency, ``issued``) when its thread
  asks for a core; its first attempt's reply can only come after it left
  (``NO_ATT``). Should a request complete while its thread waits for (or
  holds) a core to resend it, that core time serves the thread's next
  request instead: what a thread sends is settled when its core time ends.
* each machine's commit path (``P_TXN`` > 0, :mod:`model.rack.service`):
  a write whose drawn service ended holds its slot and waits for the
  machine's commit lock (``m_lock``, waiting slots linked through
  ``sl_next``); the write completes when its commit ends, and the lock
  passes to the next. Its slot's tree entry is the commit's end.

With ``P_CPU`` = 0 and ``P_TXN`` = 0 the loop takes its earlier path: the
same events, draws and counters, to the bit (tests/sim/test_kernel_pinned.py).

State lives in numpy arrays owned by :class:`sim.fast.FastEngine`; the
kernel runs one chunk (normally one simulated second) and returns, so
Python can update load-dependent service means, report progress and take
Ctrl-C between chunks. Time is counted when its interval ends (a worker's
busy time, a write stop, a client core's time), a block when its service
starts; :meth:`sim.fast.FastEngine.carry_over` splits what spans a chunk
boundary (each slot's block ends at ``sl_bend``). Random numbers come from
an inline xoshiro256+ generator whose state is one of those arrays between
chunks (:func:`seed_state`) and four local words during one.

The loop waits on each event's choice before the next, so what it costs is
mostly latency. What made it faster (each checked to leave every counter of
the reference racks equal to the bit): arrays that numba does not
reference-count (:func:`_unowned`), indices it need not wrap
(:func:`_nonneg`), state in locals rather than arrays (the generator, the
heads, a sending client's fields), glibc's logarithm inline (:func:`_log`)
and a service's draw begun before the event's own work (in
:func:`run_chunk`).

Compiled code is cached on disk (:func:`cache_dir`): a second run in a new
process does not compile again. The cache directory is keyed by the source
of this module and of the mechanisms it compiles in, because numba's own
cache only notices changes to this file.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from model.compiled_cache import compiled_cache_dir
from model.rack import clients as _cl, lsm as _lsm, network as _nw, placement as _pl, \
    service as _svc


def cache_dir() -> str:
    """Where compiled code is kept: ``$NUMBA_CACHE_DIR``, else
    ``$KVPERF_CACHE_DIR/numba-<source digest>`` (default ``~/.cache/kvperf``)."""
    return compiled_cache_dir("numba", (
        __file__, _lsm.__file__, _svc.__file__, _cl.__file__, _nw.__file__, _pl.__file__,
        Path(__file__).with_name("counters.py")))


import numba  # noqa: E402  (after cache_dir is defined, before any cached function is made)

numba.config.CACHE_DIR = cache_dir()

from llvmlite import ir as _ir  # noqa: E402
from numba import njit, types as _nbt  # noqa: E402
from numba.core import cgutils as _cgutils  # noqa: E402
from numba.extending import intrinsic, register_jitable  # noqa: E402

from . import counters as K  # noqa: E402

# The mechanisms' per-event functions, compiled into the loop.
for _f in (_lsm._flush_start, _lsm._disk_progress, _lsm.write_done,
           _lsm.bg_next, _lsm.bg_event, _svc.stretch, _svc.stretched, _svc.draw_service,
           _cl.reply_completes, _nw.admits, _pl.draw_station):
    register_jitable(_f)
register_jitable(inline="always")(_lsm.write_start)

INF = 1e300

# ---- float parameters (P) ----
P_SEND, P_HIT_RTT, P_HALF_RTT, P_TIMEOUT, P_LOSS, P_HIT, P_SHAPE, P_OPEN_RATE, P_CTX, \
    P_CORES, P_FIXED, P_CPU, P_TXN, P_NP = range(14)
# ---- int parameters (IP) ----
I_CLIENTS, I_ST, I_SLOTS, I_LSM, I_OPEN_WRITE, I_TREE, I_RETRY, I_CCORES, I_NP = range(9)
# ---- scalar int state (IS) ----
S_HIT_H, S_HIT_N, S_ARR_H, S_ARR_N, S_RSP_H, S_RSP_N, \
    S_BG_ST, S_BG_KIND, S_STATUS, S_CQ_H, S_CQ_N, S_CH_N, S_NS = range(13)
# ---- scalar float state (FS) ----
F_NOW, F_NEXT_OPEN, F_NEXT_BG, F_NF = range(4)
# ---- timer lists: the first sends (staggered starts), send deadlines, re-arms;
# and the parked: threads at the client cores, whose timer is not armed ----
T_START, T_SEND, T_REARM, T_PARK = range(4)
T_LISTS = 4
# ---- a client thread at the client cores (cl_cs) ----
CS_OUT, CS_RESEND, CS_NEW = 0, 1, 2      # not there; there for a resend; for a new request
#: cl_first of a request none of whose attempts has left yet: no reply is its
NO_ATT = 1 << 62
# ---- a machine's commit path (m_lock columns): held?, first and last waiting slot ----
L_HELD, L_HEAD, L_TAIL, L_N = range(4)
# ---- a worker slot (sl_busy) ----
SL_FREE, SL_SERVING, SL_STOPPED, SL_COMMIT = 0, 1, 2, 3

HIST_BINS = K.HIST_BINS
_CELLS = K.HIST_CELLS
_EDGES = K.HIST_EDGES_PAD
_CELL_BITS = K.CELL_BITS
_CELL_LO = (K.CELL_E0 + 1023) << K.CELL_BITS          # biased exponent and cell of the first row
_CELL_N = K.CELL_ROWS << K.CELL_BITS


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (a bit cast)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(64))
    return _nbt.int64(_nbt.float64), codegen


@intrinsic
def _unowned(typingctx, arr):
    """``arr`` as numba's array without a reference count (no meminfo): numba
    counts a reference on every copy of an array variable, which inlining a
    function that takes arrays makes, and in every call that passes one. Its
    pruning of the pairs fails on branchy code, and the atomic increments and
    decrements left in the loop were 43 % of the compiled code's samples
    (perf, default rack). The engine holds every array for the whole call, so
    none needs counting."""
    if not isinstance(arr, _nbt.Array):
        return None

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(src, name))
        out.meminfo = _cgutils.get_null_value(out.meminfo.type)
        out.parent = _cgutils.get_null_value(out.parent.type)
        return out._getvalue()
    return arr(arr), codegen


@intrinsic
def _nonneg(typingctx, i):
    """i, known to be >= 0, said so to LLVM (llvm.assume). Numba turns a
    negative index into one from the end of the array: a shift, a mask and a
    load of the array's length at every access with a signed index, which
    this lets the compiler drop (10 % faster, paired runs)."""
    def codegen(context, builder, sig, args):
        assume = builder.module.declare_intrinsic(
            "llvm.assume", (), _ir.FunctionType(_ir.VoidType(), [_ir.IntType(1)]))
        builder.call(assume, [builder.icmp_signed(">=", args[0], _ir.Constant(args[0].type, 0))])
        return args[0]
    return i(i), codegen


@njit(cache=True, inline="always")
def hist_bin(lat):
    """:func:`sim.counters.hist_bin`, compiled: the cell of the float's
    exponent and top mantissa bits, then one comparison with the next edge."""
    if not lat >= _EDGES[1]:
        return 0
    j = (_f64_bits(lat) >> (52 - _CELL_BITS)) - _CELL_LO
    if j >= _CELL_N:
        return HIST_BINS - 1
    k = _CELLS[j]
    return k + (1 if _EDGES[k + 1] <= lat else 0)


@njit(cache=True)
def seed(s):
    np.random.seed(s)


# ---- the kernel's own generator: xoshiro256+ (Blackman and Vigna 2018) ----
# Called inline, several times per request; numba's np.random functions are
# calls that fetch a thread-local Mersenne Twister each time (a quarter of
# the kernel's time). The state is four uint64 words, seeded by
# :func:`seed_state` with splitmix64. np.random (seeded by :func:`seed`)
# remains only for gamma service times (cv != 1).
_U53 = 1.0 / 9007199254740992.0          # 2^-53


def seed_state(s: int) -> np.ndarray:
    """xoshiro256+ state from an integer seed (splitmix64, as its authors advise)."""
    out = np.empty(4, dtype=np.uint64)
    x = int(s) & 0xFFFFFFFFFFFFFFFF
    for i in range(4):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        out[i] = z ^ (z >> 31)
    return out


@njit(cache=True, inline="always")
def _u01(st):
    """A uniform double in [0, 1) (the top 53 bits of xoshiro256+) and the
    generator's next state, a tuple of four uint64 words: the loop keeps it
    in registers (in an array, every draw loaded and stored it, and any store
    to another array forced it to be loaded again; 4 % faster)."""
    s0, s1, s2, s3 = st
    r = s0 + s3
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
    return np.float64(r >> np.uint64(11)) * _U53, (s0, s1, s2, s3)


# ---- the natural logarithm, inline: glibc's log (2.28 on, its FMA build) ----
# An exponential draw takes a logarithm, and waiting for it was the loop's
# longest stall (drawing without it ran 12 % faster). libm's log is a call,
# around which the loop's live registers are saved (inline: 3 % faster);
# inline, it is also begun ahead of need (run_chunk: 7 % more).
# This is glibc's algorithm (Szabolcs Nagy's sysdeps/ieee754/dbl-64/e_log.c,
# table e_log_data.c) with the fused multiply-adds where glibc's x86-64 FMA
# build has them, so every draw is the one libm gave before, to the bit
# (tests/sim/test_kernel_log.py).
@intrinsic
def _bits_f64(typingctx, i):
    """The float64 whose IEEE-754 bits are the int64 i (a bit cast)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.DoubleType())
    return _nbt.float64(_nbt.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: an instruction where the CPU has it)."""
    def codegen(context, builder, sig, args):
        f64 = _ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f64], _ir.FunctionType(f64, [f64] * 3))
        return builder.call(fn, args)
    return _nbt.float64(_nbt.float64, _nbt.float64, _nbt.float64), codegen


# log(x) = k ln2 + log(c) + log1p(z / c - 1) for x = 2^k z, z in one of 128
# subintervals of [0x1.6p-1, 0x1.6p0), c near its centre: (1/c, log(c)) each
_LOG_TAB = np.array([float.fromhex(h) for h in " ".join((
    "0x1.734f0c3e0de9fp+0 -0x1.7cc7f79e69000p-2 0x1.713786a2ce91fp+0 -0x1.76feec20d0000p-2",
    "0x1.6f26008fab5a0p+0 -0x1.713e31351e000p-2 0x1.6d1a61f138c7dp+0 -0x1.6b85b38287800p-2",
    "0x1.6b1490bc5b4d1p+0 -0x1.65d5590807800p-2 0x1.69147332f0cbap+0 -0x1.602d076180000p-2",
    "0x1.6719f18224223p+0 -0x1.5a8ca86909000p-2 0x1.6524f99a51ed9p+0 -0x1.54f4356035000p-2",
    "0x1.63356aa8f24c4p+0 -0x1.4f637c36b4000p-2 0x1.614b36b9ddc14p+0 -0x1.49da7fda85000p-2",
    "0x1.5f66452c65c4cp+0 -0x1.445923989a800p-2 0x1.5d867b5912c4fp+0 -0x1.3edf439b0b800p-2",
    "0x1.5babccb5b90dep+0 -0x1.396ce448f7000p-2 0x1.59d61f2d91a78p+0 -0x1.3401e17bda000p-2",
    "0x1.5805612465687p+0 -0x1.2e9e2ef468000p-2 0x1.56397cee76bd3p+0 -0x1.2941b3830e000p-2",
    "0x1.54725e2a77f93p+0 -0x1.23ec58cda8800p-2 0x1.52aff42064583p+0 -0x1.1e9e129279000p-2",
    "0x1.50f22dbb2bddfp+0 -0x1.1956d2b48f800p-2 0x1.4f38f4734ded7p+0 -0x1.141679ab9f800p-2",
    "0x1.4d843cfde2840p+0 -0x1.0edd094ef9800p-2 0x1.4bd3ec078a3c8p+0 -0x1.09aa518db1000p-2",
    "0x1.4a27fc3e0258ap+0 -0x1.047e65263b800p-2 0x1.4880524d48434p+0 -0x1.feb224586f000p-3",
    "0x1.46dce1b192d0bp+0 -0x1.f474a7517b000p-3 0x1.453d9d3391854p+0 -0x1.ea4443d103000p-3",
    "0x1.43a2744b4845ap+0 -0x1.e020d44e9b000p-3 0x1.420b54115f8fbp+0 -0x1.d60a22977f000p-3",
    "0x1.40782da3ef4b1p+0 -0x1.cc00104959000p-3 0x1.3ee8f5d57fe8fp+0 -0x1.c202956891000p-3",
    "0x1.3d5d9a00b4ce9p+0 -0x1.b81178d811000p-3 0x1.3bd60c010c12bp+0 -0x1.ae2c9ccd3d000p-3",
    "0x1.3a5242b75dab8p+0 -0x1.a45402e129000p-3 0x1.38d22cd9fd002p+0 -0x1.9a877681df000p-3",
    "0x1.3755bc5847a1cp+0 -0x1.90c6d69483000p-3 0x1.35dce49ad36e2p+0 -0x1.87120a645c000p-3",
    "0x1.34679984dd440p+0 -0x1.7d68fb4143000p-3 0x1.32f5cceffcb24p+0 -0x1.73cb83c627000p-3",
    "0x1.3187775a10d49p+0 -0x1.6a39a9b376000p-3 0x1.301c8373e3990p+0 -0x1.60b3154b7a000p-3",
    "0x1.2eb4ebb95f841p+0 -0x1.5737d76243000p-3 0x1.2d50a0219a9d1p+0 -0x1.4dc7b8fc23000p-3",
    "0x1.2bef9a8b7fd2ap+0 -0x1.4462c51d20000p-3 0x1.2a91c7a0c1babp+0 -0x1.3b08abc830000p-3",
    "0x1.293726014b530p+0 -0x1.31b996b490000p-3 0x1.27dfa5757a1f5p+0 -0x1.2875490a44000p-3",
    "0x1.268b39b1d3bbfp+0 -0x1.1f3b9f879a000p-3 0x1.2539d838ff5bdp+0 -0x1.160c8252ca000p-3",
    "0x1.23eb7aac9083bp+0 -0x1.0ce7f57f72000p-3 0x1.22a012ba940b6p+0 -0x1.03cdc49fea000p-3",
    "0x1.2157996cc4132p+0 -0x1.f57bdbc4b8000p-4 0x1.201201dd2fc9bp+0 -0x1.e370896404000p-4",
    "0x1.1ecf4494d480bp+0 -0x1.d17983ef94000p-4 0x1.1d8f5528f6569p+0 -0x1.bf9674ed8a000p-4",
    "0x1.1c52311577e7cp+0 -0x1.adc79202f6000p-4 0x1.1b17c74cb26e9p+0 -0x1.9c0c3e7288000p-4",
    "0x1.19e010c2c1ab6p+0 -0x1.8a646b372c000p-4 0x1.18ab07bb670bdp+0 -0x1.78d01b3ac0000p-4",
    "0x1.1778a25efbcb6p+0 -0x1.674f145380000p-4 0x1.1648d354c31dap+0 -0x1.55e0e6d878000p-4",
    "0x1.151b990275fddp+0 -0x1.4485cdea1e000p-4 0x1.13f0ea432d24cp+0 -0x1.333d94d6aa000p-4",
    "0x1.12c8b7210f9dap+0 -0x1.22079f8c56000p-4 0x1.11a3028ecb531p+0 -0x1.10e4698622000p-4",
    "0x1.107fbda8434afp+0 -0x1.ffa6c6ad20000p-5 0x1.0f5ee0f4e6bb3p+0 -0x1.dda8d4a774000p-5",
    "0x1.0e4065d2a9fcep+0 -0x1.bbcece4850000p-5 0x1.0d244632ca521p+0 -0x1.9a1894012c000p-5",
    "0x1.0c0a77ce2981ap+0 -0x1.788583302c000p-5 0x1.0af2f83c636d1p+0 -0x1.5715e67d68000p-5",
    "0x1.09ddb98a01339p+0 -0x1.35c8a49658000p-5 0x1.08cabaf52e7dfp+0 -0x1.149e364154000p-5",
    "0x1.07b9f2f4e28fbp+0 -0x1.e72c082eb8000p-6 0x1.06ab58c358f19p+0 -0x1.a55f152528000p-6",
    "0x1.059eea5ecf92cp+0 -0x1.63d62cf818000p-6 0x1.04949cdd12c90p+0 -0x1.228fb8caa0000p-6",
    "0x1.038c6c6f0ada9p+0 -0x1.c317b20f90000p-7 0x1.02865137932a9p+0 -0x1.419355daa0000p-7",
    "0x1.0182427ea7348p+0 -0x1.81203c2ec0000p-8 0x1.008040614b195p+0 -0x1.0040979240000p-9",
    "0x1.fe01ff726fa1ap-1 0x1.feff384900000p-9 0x1.fa11cc261ea74p-1 0x1.7dc41353d0000p-7",
    "0x1.f6310b081992ep-1 0x1.3cea3c4c28000p-6 0x1.f25f63ceeadcdp-1 0x1.b9fc114890000p-6",
    "0x1.ee9c8039113e7p-1 0x1.1b0d8ce110000p-5 0x1.eae8078cbb1abp-1 0x1.58a5bd001c000p-5",
    "0x1.e741aa29d0c9bp-1 0x1.95c8340d88000p-5 0x1.e3a91830a99b5p-1 0x1.d276aef578000p-5",
    "0x1.e01e009609a56p-1 0x1.07598e598c000p-4 0x1.dca01e577bb98p-1 0x1.253f5e30d2000p-4",
    "0x1.d92f20b7c9103p-1 0x1.42edd8b380000p-4 0x1.d5cac66fb5ccep-1 0x1.606598757c000p-4",
    "0x1.d272caa5ede9dp-1 0x1.7da76356a0000p-4 0x1.cf26e3e6b2ccdp-1 0x1.9ab434e1c6000p-4",
    "0x1.cbe6da2a77902p-1 0x1.b78c7bb0d6000p-4 0x1.c8b266d37086dp-1 0x1.d431332e72000p-4",
    "0x1.c5894bd5d5804p-1 0x1.f0a3171de6000p-4 0x1.c26b533bb9f8cp-1 0x1.067152b914000p-3",
    "0x1.bf583eeece73fp-1 0x1.147858292b000p-3 0x1.bc4fd75db96c1p-1 0x1.2266ecdca3000p-3",
    "0x1.b951e0c864a28p-1 0x1.303d7a6c55000p-3 0x1.b65e2c5ef3e2cp-1 0x1.3dfc33c331000p-3",
    "0x1.b374867c9888bp-1 0x1.4ba366b7a8000p-3 0x1.b094b211d304ap-1 0x1.5933928d1f000p-3",
    "0x1.adbe885f2ef7ep-1 0x1.66acd2418f000p-3 0x1.aaf1d31603da2p-1 0x1.740f8ec669000p-3",
    "0x1.a82e63fd358a7p-1 0x1.815c0f51af000p-3 0x1.a5740ef09738bp-1 0x1.8e92954f68000p-3",
    "0x1.a2c2a90ab4b27p-1 0x1.9bb3602f84000p-3 0x1.a01a01393f2d1p-1 0x1.a8bed1c2c0000p-3",
    "0x1.9d79f24db3c1bp-1 0x1.b5b515c01d000p-3 0x1.9ae2505c7b190p-1 0x1.c2967ccbcc000p-3",
    "0x1.9852ef297ce2fp-1 0x1.cf635d5486000p-3 0x1.95cbaeea44b75p-1 0x1.dc1bd3446c000p-3",
    "0x1.934c69de74838p-1 0x1.e8c01b8cfe000p-3 0x1.90d4f2f6752e6p-1 0x1.f5509c0179000p-3",
    "0x1.8e6528effd79dp-1 0x1.00e6c121fb800p-2 0x1.8bfce9fcc007cp-1 0x1.071b80e93d000p-2",
    "0x1.899c0dabec30ep-1 0x1.0d46b9e867000p-2 0x1.87427aa2317fbp-1 0x1.13687334bd000p-2",
    "0x1.84f00acb39a08p-1 0x1.1980d67234800p-2 0x1.82a49e8653e55p-1 0x1.1f8ffe0cc8000p-2",
    "0x1.8060195f40260p-1 0x1.2595fd7636800p-2 0x1.7e22563e0a329p-1 0x1.2b9300914a800p-2",
    "0x1.7beb377dcb5adp-1 0x1.3187210436000p-2 0x1.79baa679725c2p-1 0x1.377266dec1800p-2",
    "0x1.77907f2170657p-1 0x1.3d54ffbaf3000p-2 0x1.756cadbd6130cp-1 0x1.432eee32fe000p-2",
)).split()]).reshape(128, 2)
_LOG_INVC = _LOG_TAB[:, 0].copy()
_LOG_LOGC = _LOG_TAB[:, 1].copy()
_LN2_HI, _LN2_LO = float.fromhex("0x1.62e42fefa3800p-1"), float.fromhex("0x1.ef35793c76730p-45")
# log1p(r) - r on a subinterval, and log(x) near 1 (x - 1 within 1/16)
_A0, _A1, _A2, _A3, _A4 = (float.fromhex(h) for h in (
    "-0x1.0000000000001p-1", "0x1.555555551305bp-2", "-0x1.fffffffeb4590p-3",
    "0x1.999b324f10111p-3", "-0x1.55575e506c89fp-3"))
_B0, _B1, _B2, _B3, _B4, _B5, _B6, _B7, _B8, _B9, _B10 = (float.fromhex(h) for h in (
    "-0x1p-1", "0x1.5555555555577p-2", "-0x1.ffffffffffdcbp-3", "0x1.999999995dd0cp-3",
    "-0x1.55555556745a7p-3", "0x1.24924a344de30p-3", "-0x1.fffffa4423d65p-4",
    "0x1.c7184282ad6cap-4", "-0x1.999eb43b068ffp-4", "0x1.78182f7afd085p-4",
    "-0x1.5521375d145cdp-4"))
_LOG_OFF = 0x3FE6000000000000                  # bits of 0x1.6p-1, the subintervals' start
_NEAR1_LO = 0x3FEE000000000000                 # bits of 1 - 1/16 ...
_NEAR1_SPAN = 0x3FF1090000000000 - _NEAR1_LO   # ... to 1 + 0x1.09p-4
_ONE_BITS = 0x3FF0000000000000
_EXP_MASK = -(1 << 52)                         # 0xfff0000000000000 as an int64
_TWO27 = 134217728.0


@njit(cache=True, inline="always")
def _log_near1(x):
    """log(x) for x within about 1/16 of 1: a polynomial in r = x - 1, its
    leading terms split so that they are exact (glibc's 0.507 ulp path)."""
    r = x - 1.0
    r2 = r * r
    r3 = r * r2
    p = _fma(r, _B8, _B7)
    p = _fma(r2, _B9, p)
    p = _fma(r3, _B10, p)
    p = _fma(p, r3, _fma(r2, _B6, _fma(r, _B5, _B4)))
    p = _fma(p, r3, _fma(r2, _B3, _fma(r, _B2, _B1)))
    rhi = _fma(-_TWO27, r, _fma(r, _TWO27, r))        # r rounded to 26 bits
    rlo = r - rhi
    rhi2 = rhi * rhi
    hi = _fma(rhi2, _B0, r)                           # r - rhi^2 / 2
    lo = _fma(rhi2, _B0, r - hi)
    lo = _fma(_B0 * rlo, r + rhi, lo)
    return hi + _fma(p, r3, lo)


@njit(cache=True, inline="always")
def _log(x):
    """math.log(x) for a positive x, bit for bit glibc's (see above)."""
    ix = _f64_bits(x)
    if np.uint64(ix - _NEAR1_LO) < np.uint64(_NEAR1_SPAN):
        if ix == _ONE_BITS:
            return 0.0
        return _log_near1(x)
    if not (0x0010 <= (ix >> 48) < 0x7FF0):
        return math.log(x)          # zero, subnormal, negative, inf or nan: libm's
    tmp = ix - _LOG_OFF
    i = (tmp >> 45) & 0x7F
    k = tmp >> 52
    z = _bits_f64(ix - (tmp & _EXP_MASK))
    kd = float(k)
    w = _fma(kd, _LN2_HI, _LOG_LOGC[i])
    r = _fma(z, _LOG_INVC[i], -1.0)                    # z / c - 1
    hi = r + w
    lo = _fma(kd, _LN2_LO, w - hi + r)
    r2 = r * r
    p = _fma(_fma(r, _A4, _A3), r2, _fma(r, _A2, _A1))
    return _fma(r * r2, p, _fma(r2, _A0, lo)) + hi


@njit(cache=True, inline="always")
def _log_draw(st):
    """log(1 - u) for the generator's next uniform u (so -mean times it is an
    exponential draw: inverse CDF, 1 - u in (0, 1]), and the state after u."""
    u, st = _u01(st)
    return _log(1.0 - u), st


@njit(cache=True, inline="always")
def _exponential(st, mean):
    """An exponential draw of the given mean, and the generator's next state."""
    lg, st = _log_draw(st)
    return -mean * lg, st


@njit(cache=True, inline="always")
def _service(log_u, mean, shape, fixed):
    """:func:`model.rack.service.draw_service`: the fixed part plus an
    exponential (shape 1) of the rest from the kernel's generator, its draw's
    log term ``log_u`` given (:func:`_log_draw`), or a gamma. Returns the
    service time and whether it took that draw."""
    if shape == 1.0 and mean > fixed:
        return fixed + -(mean - fixed) * log_u, True
    return _svc.draw_service(mean, shape, fixed), False


@njit(cache=True, inline="always")
def _tree_set(tv, ti, size, i, v):
    """Slot i's service ends at v; returns the earliest end (the root)."""
    k = _nonneg(size + i)
    tv[k] = v
    k >>= 1
    while k >= 1:
        a = _nonneg(2 * k)
        b = _nonneg(a + 1)
        if tv[a] <= tv[b]:
            w = tv[a]
            j = ti[a]
        else:
            w = tv[b]
            j = ti[b]
        if w == tv[k] and j == ti[k]:
            break                  # the winner here is unchanged, so is every one above
        tv[k] = w
        ti[k] = j
        k >>= 1
    return tv[1]


@njit(cache=True)
def tree_init(tv, ti, size):
    for i in range(size):
        tv[size + i] = INF
        ti[size + i] = i
    for k in range(size - 1, 0, -1):
        a = 2 * k
        b = a + 1
        if tv[a] <= tv[b]:
            tv[k] = tv[a]
            ti[k] = ti[a]
        else:
            tv[k] = tv[b]
            ti[k] = ti[b]


def timer_lists(start: np.ndarray):
    """The client timers' four lists (first sends, send deadlines, FarReach
    re-arms, and the parked threads at the client cores) as ``(next, prev,
    deadline)`` over nodes 0..N+3: node c < N is
    client c (its deadline ``deadline[c]``), node N + T_START etc. is a list's
    sentinel, whose next is the list's head and prev its tail (itself when the
    list is empty) and whose deadline is -inf. Every client starts in the
    first list, in the order of its start time ``start`` (sorted)."""
    n = len(start)
    nodes = n + T_LISTS
    tl_next = np.arange(nodes, dtype=np.int64)
    tl_prev = np.arange(nodes, dtype=np.int64)
    s0 = n + T_START
    order = np.concatenate(([s0], np.arange(n), [s0]))     # s0 -> 0 -> ... -> n-1 -> s0
    tl_next[order[:-1]] = order[1:]
    tl_prev[order[1:]] = order[:-1]
    cl_dl = np.full(nodes, -np.inf)
    cl_dl[:n] = start
    return tl_next, tl_prev, cl_dl


@njit(cache=True, inline="always")
def _timer_set(c, dl, sentinel, cl_dl, tl_next, tl_prev):
    """Give client c the deadline dl in the timer list of node ``sentinel``
    (:func:`timer_lists`), out of the list it was in. Every list is ordered
    by deadline, inserting from its tail: a send's deadline (t + send +
    timeout) and a re-arm's (t + timeout) come in time order within their own
    list, so the walk back stops at once. (With one list for both, a re-arm
    walked back past every client that had sent within the last send time:
    with 371,005 clients and a 1.3 ms send, a 20 ms simulation did not end in
    15 minutes.) The sentinels make both ends ordinary nodes: no branch on
    a list's ends, and no head and tail array beside the links."""
    c = _nonneg(c)
    p = _nonneg(tl_prev[c])
    nx = _nonneg(tl_next[c])
    tl_next[p] = nx
    tl_prev[nx] = p
    cl_dl[c] = dl
    # walk back from the tail to the last deadline <= dl (a sentinel's is -inf)
    q = _nonneg(tl_prev[sentinel])
    while cl_dl[q] > dl:
        q = _nonneg(tl_prev[q])
    nq = _nonneg(tl_next[q])
    tl_next[q] = c
    tl_prev[c] = q
    tl_next[c] = nq
    tl_prev[nq] = c


@njit(cache=True, inline="always")
def _timer_head(n_cl, cl_dl, tl_next):
    """The earliest client timer: (deadline, client) of the first of the
    three lists' heads with the smallest deadline; (INF, -1) if none."""
    t = INF
    c = -1
    for lst in range(3):
        h = _nonneg(tl_next[n_cl + lst])
        if h < n_cl and cl_dl[h] < t:
            t = cl_dl[h]
            c = h
    return t, c


@njit(cache=True, inline="always")
def _earlier(ta, ka, tb, kb):
    """(time, kind) of the earlier of two sources, the first on a tie."""
    if tb < ta:
        return tb, kb
    return ta, ka


@njit(cache=True, inline="always")
def _heap_push(ht, hc, n, t, c):
    """Add (t, c) to the binary min-heap of n entries (ht times, hc ids); returns n + 1."""
    i = _nonneg(n)
    while i > 0:
        p = _nonneg((i - 1) >> 1)
        if ht[p] <= t:
            break
        ht[i] = ht[p]
        hc[i] = hc[p]
        i = p
    ht[i] = t
    hc[i] = c
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(ht, hc, n):
    """Remove the root of the binary min-heap of n > 0 entries; returns n - 1."""
    n -= 1
    if n == 0:
        return 0
    t = ht[_nonneg(n)]
    c = hc[_nonneg(n)]
    i = 0
    while True:
        a = _nonneg(2 * i + 1)
        if a >= n:
            break
        b = a + 1
        if b < n and ht[b] < ht[a]:
            a = b
        if ht[a] >= t:
            break
        ht[i] = ht[a]
        hc[i] = hc[a]
        i = a
    ht[i] = t
    hc[i] = c
    return n


@njit(cache=True)
def run_chunk(t_end, P, IP, IS, FS, G, C, hist,
              st_acc, st_alias, open_acc, open_alias, svc_mean, wfrac, st_c, st_slot0, st_buf, st_mach, wal_block,
              cl_att, cl_first, cl_cls, cl_write, cl_start, cl_dl, cl_started, tl_next, tl_prev,
              hit_t, hit_c, hit_a,
              arr_t, arr_c, arr_a, arr_s, arr_w,
              rsp_t, rsp_c, rsp_a,
              q_c, q_a, q_w, q_t, q_h, q_n,
              sl_st, sl_busy, sl_c, sl_a, sl_w, sl_arr, sl_start, sl_since, tv, ti,
              lp, ls, li, mach, m_busy, rs,
              cl_cs, cl_ask, cl_cstart, cq, ch_t, ch_c, sl_next, sl_cst, m_lock, sl_bend):
    # every array the loop hands to a function, not reference-counted
    tv = _unowned(tv)
    ti = _unowned(ti)
    cl_dl = _unowned(cl_dl)
    tl_next = _unowned(tl_next)
    tl_prev = _unowned(tl_prev)
    st_acc = _unowned(st_acc)
    st_alias = _unowned(st_alias)
    open_acc = _unowned(open_acc)
    open_alias = _unowned(open_alias)
    st_mach = _unowned(st_mach)
    wal_block = _unowned(wal_block)
    lp = _unowned(lp)
    ls = _unowned(ls)
    li = _unowned(li)
    mach = _unowned(mach)
    ch_t = _unowned(ch_t)
    ch_c = _unowned(ch_c)
    send = P[P_SEND]
    hit_rtt = P[P_HIT_RTT]
    half = P[P_HALF_RTT]
    timeout = P[P_TIMEOUT]
    loss = P[P_LOSS]
    hit_p = P[P_HIT]
    shape = P[P_SHAPE]
    open_rate = P[P_OPEN_RATE]
    ctx = P[P_CTX]
    cores = P[P_CORES]
    fixed = P[P_FIXED]
    cpu = P[P_CPU]
    txn = P[P_TXN]
    n_cl = IP[I_CLIENTS]
    cpu_on = cpu > 0.0 and n_cl > 0     # the client cores (else: every send at once)
    txn_on = txn > 0.0                  # the machines' commit paths
    ccores = IP[I_CCORES]
    cap_cq = cq.shape[0]
    lsm_on = IP[I_LSM] != 0
    open_write = IP[I_OPEN_WRITE]
    tsize = IP[I_TREE]
    retry = IP[I_RETRY]
    cap_hit = hit_t.shape[0]
    cap_arr = arr_t.shape[0]
    cap_rsp = rsp_t.shape[0]
    qcap = q_c.shape[1]
    go_sl = np.empty(IP[I_SLOTS] + 1, dtype=np.int64)   # slots that start (or retry) now
    go_t = np.empty(IP[I_SLOTS] + 1)
    # The scalar state lives in locals while the loop runs (in IS / FS, a store
    # to any other int64 or float64 array could alias it and force reloads);
    # it goes back to IS / FS when the loop ends.
    hit_h = IS[S_HIT_H]
    hit_n = IS[S_HIT_N]
    arr_h = IS[S_ARR_H]
    arr_n = IS[S_ARR_N]
    rsp_h = IS[S_RSP_H]
    rsp_n = IS[S_RSP_N]
    bg_st = IS[S_BG_ST]
    bg_kind = IS[S_BG_KIND]
    cq_h = IS[S_CQ_H]
    cq_n = IS[S_CQ_N]
    ch_n = IS[S_CH_N]
    next_open = FS[F_NEXT_OPEN]
    next_bg = FS[F_NEXT_BG]
    # each FIFO's head time (INF when empty), kept beside it so that picking
    # the next event is a chain of compares and selects, not of branches
    hit_nt = hit_t[hit_h] if hit_n > 0 else INF
    arr_nt = arr_t[arr_h] if arr_n > 0 else INF
    rsp_nt = rsp_t[rsp_h] if rsp_n > 0 else INF
    # likewise the earliest service end and the earliest client timer,
    # updated where the tree and the timer lists change
    tree_nt = tv[1]
    core_nt = ch_t[0] if ch_n > 0 else INF
    timer_nt, timer_c = _timer_head(n_cl, cl_dl, tl_next)
    rng = (rs[0], rs[1], rs[2], rs[3])      # the generator's state (_u01)
    ret = 0
    t = t_end
    # the chunk's global counters (G, zeroed by the caller), also as locals
    g_done = 0.0
    g_hits = 0.0
    g_retried = 0.0
    g_lat = 0.0
    g_lat2 = 0.0
    g_stale = 0.0
    g_open_done = 0.0
    g_open_resp = 0.0
    g_resends = 0.0
    g_flushes = 0.0
    g_compactions = 0.0
    g_issued = 0.0
    g_wire = 0.0
    g_switches = 0.0
    g_cbusy = 0.0
    g_cres = 0.0

    while True:
        # ---- pick the earliest event source ----
        # a tournament of the heads kept in locals (ties to the earlier
        # source), not a chain of compares: the loop waits on this choice
        t12, k12 = _earlier(hit_nt, 1, arr_nt, 2)
        t34, k34 = _earlier(rsp_nt, 3, tree_nt, 4)
        t78, k78 = _earlier(next_open, 7, core_nt, 8)
        t67, k67 = _earlier(next_bg, 6, t78, k78)
        ta, ka = _earlier(t12, k12, t34, k34)
        tb, kb = _earlier(timer_nt, 5, t67, k67)
        t, kind = _earlier(ta, ka, tb, kb)
        if not t < t_end:
            t = t_end
            kind = 0
        if kind == 0:
            break

        send_c = -1          # client that sends now (a new request or a resend)
        new_req = False
        ask_c = -1           # client that asks for a client core now (cpu_on)
        ask_new = False      # ... for a new request (else for a resend)
        arr_c_ = -2          # a packet reaching a worker: client (-1 open request, -3 write-back)
        arr_a_ = 0
        arr_s_ = 0
        arr_w_ = 0
        start_slot = -1      # a worker slot that starts the packet it now holds
        unstall_st = -1      # station whose stopped writers retry

        # The draw of a service that starts in this event, begun before the
        # event's own work: waiting for its logarithm was the loop's longest
        # stall. A packet arrival (2) or a completion (4) draws nothing before
        # its service starts, so the generator's next uniform is that draw's.
        # A commit's or a client core's time, when one starts, is always its
        # event's first draw, so it takes this one too (and a service after
        # it in the same event draws anew).
        ahead = kind == 2 or kind == 4
        log_ahead, rng_ahead = _log_draw(rng)

        if kind == 1 or kind == 3:       # a reply reaches its client (switch hit or worker)
            if kind == 1:
                k = _nonneg(hit_h)
                c = _nonneg(hit_c[k])
                a = hit_a[k]
                hit_h = k + 1 if k + 1 < cap_hit else 0
                hit_n -= 1
                hit_nt = hit_t[_nonneg(hit_h)] if hit_n > 0 else INF
            else:
                k = _nonneg(rsp_h)
                c = _nonneg(rsp_c[k])
                a = rsp_a[k]
                rsp_h = k + 1 if k + 1 < cap_rsp else 0
                rsp_n -= 1
                rsp_nt = rsp_t[_nonneg(rsp_h)] if rsp_n > 0 else INF
            if a >= cl_first[c] and _cl.reply_completes(retry, a, cl_att[c], cl_first[c]):
                lat = t - cl_start[c]
                g_done += 1.0
                if kind == 1:
                    g_hits += 1.0
                if a > cl_first[c]:
                    g_retried += 1.0
                g_lat += lat
                g_lat2 += lat * lat
                hist[hist_bin(lat)] += 1
                if not cpu_on:
                    send_c = c
                    new_req = True
                elif cl_cs[c] == CS_RESEND:
                    # it waits for (or holds) a core to resend: that core time
                    # now serves its next request, which starts here
                    g_issued += 1.0
                    cl_start[c] = t
                    cl_first[c] = NO_ATT
                    cl_cs[c] = CS_NEW
                else:
                    ask_c = c
                    ask_new = True
            else:
                g_stale += 1.0
                if retry == _cl.RETRY_FARREACH and cl_cs[c] == CS_OUT:
                    # the client's receive returned; its wait starts over
                    _timer_set(c, t + timeout, n_cl + T_REARM, cl_dl, tl_next, tl_prev)
                    timer_nt, timer_c = _timer_head(n_cl, cl_dl, tl_next)
        elif kind == 2:      # a miss reaches its worker's socket
            k = _nonneg(arr_h)
            arr_c_ = arr_c[k]
            arr_a_ = arr_a[k]
            arr_s_ = arr_s[k]
            arr_w_ = arr_w[k]
            arr_h = k + 1 if k + 1 < cap_arr else 0
            arr_n -= 1
            arr_nt = arr_t[_nonneg(arr_h)] if arr_n > 0 else INF
        elif kind == 4 and txn_on and sl_w[_nonneg(ti[1])] != 0 and \
                sl_busy[_nonneg(ti[1])] == SL_SERVING:
            # a write's service ended: it commits through its machine's commit
            # path, one commit at a time, first come first served; the worker
            # waits (its slot stays busy)
            sl = _nonneg(ti[1])
            m = _nonneg(st_mach[_nonneg(sl_st[sl])])
            sl_busy[sl] = SL_COMMIT
            sl_cst[sl] = t
            if m_lock[m, L_HELD] == 0:
                m_lock[m, L_HELD] = 1
                # the event's first draw: the one begun ahead
                rng = rng_ahead
                ahead = False
                tree_nt = _tree_set(tv, ti, tsize, sl, t - txn * log_ahead)
            else:
                sl_next[sl] = -1
                if m_lock[m, L_HEAD] < 0:
                    m_lock[m, L_HEAD] = sl
                else:
                    sl_next[_nonneg(m_lock[m, L_TAIL])] = sl
                m_lock[m, L_TAIL] = sl
                tree_nt = _tree_set(tv, ti, tsize, sl, INF)
        elif kind == 4:      # a worker finishes a request
            sl = _nonneg(ti[1])
            s = _nonneg(sl_st[sl])
            m = _nonneg(st_mach[s])
            if txn_on and sl_busy[sl] == SL_COMMIT:
                # its commit ended: the machine's next waiting commit starts
                C[s, K.C_COMMIT] += t - sl_cst[sl]
                nx = m_lock[m, L_HEAD]
                if nx >= 0:
                    nx = _nonneg(nx)
                    m_lock[m, L_HEAD] = sl_next[nx]
                    if sl_next[nx] < 0:
                        m_lock[m, L_TAIL] = -1
                    rng = rng_ahead          # the event's first draw: the one begun ahead
                    ahead = False
                    tree_nt = _tree_set(tv, ti, tsize, nx, t - txn * log_ahead)
                else:
                    m_lock[m, L_HELD] = 0
            C[s, K.C_COMPL] += 1.0
            C[s, K.C_BUSY] += t - sl_start[sl]
            if sl_w[sl] != 0:
                C[s, K.C_WRITES] += 1.0
                if lsm_on:
                    _lsm.write_done(s, lp, ls)
            c = sl_c[sl]
            if c >= 0:
                # the reply travels back: constant offset from departures -> FIFO
                if rsp_n >= cap_rsp:
                    ret = 3
                    break
                k = rsp_h + rsp_n
                if k >= cap_rsp:
                    k -= cap_rsp
                k = _nonneg(k)
                rsp_t[k] = t + half
                if rsp_n == 0:
                    rsp_nt = t + half
                rsp_c[k] = c
                rsp_a[k] = sl_a[sl]
                rsp_n += 1
            else:                    # open packet: a write-back, or an open network's request
                r = t - sl_arr[sl]
                g_open_done += 1.0
                g_open_resp += r
                if n_cl == 0:
                    g_done += 1.0
                    g_lat += r
                    g_lat2 += r * r
                    hist[hist_bin(r)] += 1
            m_busy[m] -= 1
            # next packet from the socket, if any
            if q_n[s] > 0:
                j = _nonneg(q_h[s])
                sl_c[sl] = q_c[s, j]
                sl_a[sl] = q_a[s, j]
                sl_w[sl] = q_w[s, j]
                sl_arr[sl] = q_t[s, j]
                q_h[s] = j + 1 if j + 1 < qcap else 0
                q_n[s] -= 1
                start_slot = sl
            else:
                sl_busy[sl] = 0
                tree_nt = _tree_set(tv, ti, tsize, sl, INF)
        elif kind == 5:      # a client's timer: its first send, or a resend after a timeout
            c = timer_c
            if cpu_on:           # first a client core (the resend is counted when it leaves)
                ask_c = c
                if cl_started[c] == 0:
                    cl_started[c] = 1
                    ask_new = True
            else:
                send_c = c
                if cl_started[c] == 0:
                    cl_started[c] = 1
                    new_req = True
                else:
                    g_resends += 1.0
        elif kind == 6:      # a background (flush / compaction) event
            s = bg_st
            bk = bg_kind
            if _lsm.bg_event(s, bk, t, lp, st_mach, ls, li, mach):
                g_flushes += 1.0
                unstall_st = s
            elif bk == _lsm.EV_COMPACTION:
                g_compactions += 1.0
            next_bg, bg_st, bg_kind = _lsm.bg_next(lp, st_mach, ls, li, mach)
        elif kind == 7:      # an open (Poisson) arrival
            arr_c_ = -1 if n_cl == 0 else -3
            arr_a_ = 0
            u, rng = _u01(rng)
            arr_s_ = _pl.draw_station(1.0, u, 0.0, open_acc, open_alias)
            arr_w_ = open_write
            gap, rng = _exponential(rng, 1.0 / open_rate)
            next_open = t + gap
        else:                # kind == 8: a client core's time ends; its thread sends
            c = _nonneg(ch_c[0])
            ch_n = _heap_pop(ch_t, ch_c, ch_n)
            g_cbusy += t - cl_cstart[c]
            g_cres += t - cl_ask[c]
            send_c = c
            new_req = cl_cs[c] == CS_NEW
            if not new_req:
                g_resends += 1.0
            cl_cs[c] = CS_OUT
            if cq_n > 0:         # the core goes to the longest-waiting thread
                c2 = _nonneg(cq[_nonneg(cq_h)])
                cq_h = cq_h + 1 if cq_h + 1 < cap_cq else 0
                cq_n -= 1
                rng = rng_ahead      # the event's first draw: the one begun ahead
                cl_cstart[c2] = t
                ch_n = _heap_push(ch_t, ch_c, ch_n, t - cpu * log_ahead, c2)
            core_nt = ch_t[0] if ch_n > 0 else INF

        # ---- a client asks for a client core (its new request, or a resend) ----
        if ask_c >= 0:
            c = _nonneg(ask_c)
            if ask_new:
                g_issued += 1.0
                cl_start[c] = t
                cl_first[c] = NO_ATT
                cl_cs[c] = CS_NEW
            else:
                cl_cs[c] = CS_RESEND
            cl_ask[c] = t
            # no timer runs while it is at the client cores
            _timer_set(c, INF, n_cl + T_PARK, cl_dl, tl_next, tl_prev)
            timer_nt, timer_c = _timer_head(n_cl, cl_dl, tl_next)
            if ch_n < ccores:
                # the event's first draw (a reply or a timer that asks draws
                # nothing else): the one begun ahead
                rng = rng_ahead
                cl_cstart[c] = t
                ch_n = _heap_push(ch_t, ch_c, ch_n, t - cpu * log_ahead, c)
                core_nt = ch_t[0]
            else:
                j = cq_h + cq_n
                if j >= cap_cq:
                    j -= cap_cq
                cq[_nonneg(j)] = c
                cq_n += 1

        # ---- a client sends (its new request's first attempt, or a resend) ----
        # (its fields in locals: each stored once, none loaded again after a
        # store to another array, which the compiler must assume may alias it)
        if send_c >= 0:
            c = _nonneg(send_c)
            att = cl_att[c] + 1
            cl_att[c] = att
            if new_req:
                if not cpu_on:       # (with the client cores: when it asked for one)
                    g_issued += 1.0
                    cl_start[c] = t
                cl_first[c] = att
                u_hit, rng = _u01(rng)
                u_st, rng = _u01(rng)
                cls = _pl.draw_station(u_hit, u_st, hit_p, st_acc, st_alias)
                wr = 0
                if cls >= 0:
                    u, rng = _u01(rng)
                    wr = 1 if u < wfrac[_nonneg(cls)] else 0
                cl_cls[c] = cls
                cl_write[c] = wr
            else:
                cls = cl_cls[c]
                wr = cl_write[c]
            tp = t + send
            _timer_set(c, tp + timeout, n_cl + T_SEND, cl_dl, tl_next, tl_prev)
            timer_nt, timer_c = _timer_head(n_cl, cl_dl, tl_next)
            lost = False
            if loss > 0.0:
                u, rng = _u01(rng)
                lost = u < loss
            if lost:
                g_wire += 1.0
            elif cls < 0:
                if hit_n >= cap_hit:
                    ret = 1
                    break
                k = hit_h + hit_n
                if k >= cap_hit:
                    k -= cap_hit
                k = _nonneg(k)
                hit_t[k] = tp + hit_rtt
                if hit_n == 0:
                    hit_nt = tp + hit_rtt
                hit_c[k] = c
                hit_a[k] = att
                hit_n += 1
            else:
                if arr_n >= cap_arr:
                    ret = 2
                    break
                k = arr_h + arr_n
                if k >= cap_arr:
                    k -= cap_arr
                k = _nonneg(k)
                arr_t[k] = tp + half
                if arr_n == 0:
                    arr_nt = tp + half
                arr_c[k] = c
                arr_a[k] = att
                arr_s[k] = cls
                arr_w[k] = wr
                arr_n += 1

        # ---- a packet reaches a worker's receive buffer ----
        if arr_c_ != -2:
            s = _nonneg(arr_s_)
            C[s, K.C_ARR] += 1.0
            free = -1
            s0 = _nonneg(st_slot0[s])
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[_nonneg(sl)] == 0:
                    free = sl
                    break
            if not _nw.admits(free >= 0, q_n[s], st_buf[s]):
                C[s, K.C_DROP] += 1.0      # buffer overflow: the client finds out by timeout
            elif free >= 0:
                sl_c[free] = arr_c_
                sl_a[free] = arr_a_
                sl_w[free] = arr_w_
                sl_arr[free] = t
                start_slot = free
            else:
                j = q_h[s] + q_n[s]
                if j >= qcap:
                    j -= qcap
                j = _nonneg(j)
                q_c[s, j] = arr_c_
                q_a[s, j] = arr_a_
                q_w[s, j] = arr_w_
                q_t[s, j] = t
                q_n[s] += 1

        # ---- stopped writers of a station whose flush just ended retry ----
        n_go = 0
        if unstall_st >= 0:
            s = unstall_st
            s0 = st_slot0[s]
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[sl] == 2:
                    C[s, K.C_STALL] += t - sl_since[sl]
                    sl_busy[sl] = 0
                    go_sl[n_go] = sl
                    go_t[n_go] = sl_start[sl]    # the stop counts as process time
                    n_go += 1
        if start_slot >= 0:
            go_sl[n_go] = start_slot
            go_t[n_go] = t
            n_go += 1

        # ---- worker slots start (or retry) the packet they hold ----
        for g in range(n_go):
            sl = _nonneg(go_sl[g])
            s = _nonneg(sl_st[sl])
            m = _nonneg(st_mach[s])
            sl_start[sl] = go_t[g]
            extra = 0.0
            if lsm_on and sl_w[sl] != 0:
                status, extra, switched, started = _lsm.write_start(s, m, t, lp, ls, li, mach,
                                                                     wal_block)
                if switched:
                    g_switches += 1.0
                if started:
                    next_bg, bg_st, bg_kind = _lsm.bg_next(lp, st_mach, ls, li, mach)
                if status == _lsm.STOP:
                    # the worker blocks until a flush of this instance completes
                    sl_busy[sl] = 2
                    sl_since[sl] = t
                    tree_nt = _tree_set(tv, ti, tsize, sl, INF)
                    continue
            if not ahead:            # the draw begun above is not the generator's next
                log_ahead, rng_ahead = _log_draw(rng)
            work, took = _service(log_ahead, svc_mean[s], shape, fixed)
            if took:
                rng = rng_ahead
                ahead = False
            m_busy[m] += 1
            if cores > 0.0:
                # busy workers (this one included) and running background jobs
                work = _svc.stretched(work, fixed,
                                      _svc.stretch(m_busy[m] + mach[m, _lsm.M_BG], cores, ctx))
            C[s, K.C_BLOCK] += extra
            sl_bend[sl] = t + extra      # (sim.fast.FastEngine.carry_over)
            sl_busy[sl] = 1
            tree_nt = _tree_set(tv, ti, tsize, sl, t + extra + work)

    IS[S_HIT_H] = hit_h
    IS[S_HIT_N] = hit_n
    IS[S_ARR_H] = arr_h
    IS[S_ARR_N] = arr_n
    IS[S_RSP_H] = rsp_h
    IS[S_RSP_N] = rsp_n
    IS[S_BG_ST] = bg_st
    IS[S_BG_KIND] = bg_kind
    IS[S_CQ_H] = cq_h
    IS[S_CQ_N] = cq_n
    IS[S_CH_N] = ch_n
    FS[F_NEXT_OPEN] = next_open
    FS[F_NEXT_BG] = next_bg
    FS[F_NOW] = t
    G[K.G_DONE] += g_done
    G[K.G_HITS] += g_hits
    G[K.G_RETRIED] += g_retried
    G[K.G_LAT] += g_lat
    G[K.G_LAT2] += g_lat2
    G[K.G_STALE] += g_stale
    G[K.G_OPEN_DONE] += g_open_done
    G[K.G_OPEN_RESP] += g_open_resp
    G[K.G_RESENDS] += g_resends
    G[K.G_FLUSHES] += g_flushes
    G[K.G_COMPACTIONS] += g_compactions
    G[K.G_ISSUED] += g_issued
    G[K.G_WIRE] += g_wire
    G[K.G_SWITCHES] += g_switches
    G[K.G_CLIENT_BUSY] += g_cbusy
    G[K.G_CLIENT_RES] += g_cres
    IS[S_STATUS] = ret
    rs[0], rs[1], rs[2], rs[3] = rng
    return ret
