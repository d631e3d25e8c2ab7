"""How the fast engine's kernel is compiled: numba's cache directory, the
mechanisms' functions compiled into it, and the LLVM intrinsics it is fast with.

Every kernel module (``sim/fast_kernel*.py``) imports this one before it
makes a compiled function: numba takes its cache directory when a cached
function is made, so it must be set first.
"""

from __future__ import annotations

from pathlib import Path

from model.compiled_cache import compiled_cache_dir
from model.rack import clients as _cl, lsm_rules as _rules, network as _nw, placement as _pl, \
    service as _svc
# RocksDB's rules (model.rack.lsm_rules), registered for numba once, where the
# analytic solver registers them (importing the solvers first also lets them
# take their own cache directory before this module sets the kernel's)
from model.solvers.mechanisms import LSM_RULES as _LSM_RULES  # noqa: F401

from . import write_path as _wp


def kernel_sources() -> list[Path]:
    """Every source the kernel is compiled from: its own modules (every
    ``sim/fast_kernel*.py``, found by name so that a new one is never left
    out), the write path and the mechanisms it compiles in and the
    counters' indices."""
    here = Path(__file__).resolve().parent
    return [*sorted(here.glob("fast_kernel*.py")), here / "write_path.py",
            *(Path(m.__file__) for m in (_rules, _svc, _cl, _nw, _pl)),
            here / "counters.py"]


def cache_dir() -> str:
    """Where compiled code is kept: ``$NUMBA_CACHE_DIR``, else
    ``$KVPERF_CACHE_DIR/numba-<source digest>`` (default ``~/.cache/kvperf``).
    Keyed by every source of :func:`kernel_sources`, because numba's own
    cache only notices changes to the file of the function it compiled."""
    return compiled_cache_dir("numba", kernel_sources())


import numba  # noqa: E402  (after cache_dir is defined, before any cached function is made)

numba.config.CACHE_DIR = cache_dir()

from llvmlite import ir as _ir  # noqa: E402
from numba import njit, types as _nbt  # noqa: E402
from numba.core import cgutils as _cgutils  # noqa: E402
from numba.extending import intrinsic, register_jitable  # noqa: E402

# The mechanisms' per-event functions and the write path, compiled into the loop.
for _f in (_svc.stretch, _svc.stretched, _svc.draw_service, _cl.reply_completes, _nw.admits,
           _pl.draw_station, _wp.stop_changed, _wp.jobs_to, _wp.next_job, _wp.job_fires):
    register_jitable(_f)
# ... and a write's start, inlined where the loop calls it (once a write: a call
# of a dozen arguments cost the default rack about 8 % of its speed). Not as
# register_jitable(inline="always"): numba runs its dead-code elimination after
# inlining such an overload, and that does not see an array taken out of the
# loop's groups (sim.fast_kernel_state) as one of the arguments', so it drops
# the stores to it. njit's inlining runs no such pass.
write_start = njit(cache=True, inline="always")(_wp.write_start)

INF = 1e300


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (a bit cast)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(64))
    return _nbt.int64(_nbt.float64), codegen


def _unowned_value(context, builder, aryty, value):
    """The array ``value`` of type ``aryty`` with no meminfo and no parent."""
    src = context.make_array(aryty)(context, builder, value)
    out = context.make_array(aryty)(context, builder)
    for name in ("nitems", "itemsize", "data", "shape", "strides"):
        setattr(out, name, getattr(src, name))
    out.meminfo = _cgutils.get_null_value(out.meminfo.type)
    out.parent = _cgutils.get_null_value(out.parent.type)
    return out._getvalue()


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
        return _unowned_value(context, builder, sig.args[0], args[0])
    return arr(arr), codegen


@intrinsic
def _unowned_all(typingctx, tup):
    """A tuple (or named tuple) of arrays with each of them :func:`_unowned`:
    the loop hands its groups of arrays (:mod:`sim.fast_kernel_state`) to the
    per-event rules, and every array taken out of one would be counted."""
    if not isinstance(tup, _nbt.BaseTuple) or \
            not all(isinstance(t, _nbt.Array) for t in tup.types):
        return None

    def codegen(context, builder, sig, args):
        out = args[0]
        for i, aryty in enumerate(sig.args[0].types):
            arr = _unowned_value(context, builder, aryty, builder.extract_value(args[0], i))
            out = builder.insert_value(out, arr, i)
        return out
    return tup(tup), codegen


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
