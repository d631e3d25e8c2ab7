"""Every command's first instruction: signals handled before the heavy imports.

``python -m sim`` (and every other command) starts here, importing nothing
but the standard library, so that a signal at any moment ends the command
the same way (docs/contracts.md, "Exit codes"):

* **Before the command runs** (its imports, a second or so) and **after it
  returned**: Ctrl-C (SIGINT) exits 130 and SIGTERM 143 at once -- nothing
  has been written yet, or all of it has -- with one word on stderr and no
  traceback (a ``KeyboardInterrupt`` raised inside an import would print
  one, and leave the exit status at -2).
* **While the command runs**: Ctrl-C raises ``KeyboardInterrupt``, so that
  the command writes what it finished, marked partial, and exits 130
  (:func:`runio.exits.run_command`); SIGTERM raises :class:`Terminated`
  (exit 143), so that every ``finally`` runs: temporary files are removed and
  worker processes stopped. A second SIGTERM while that cleanup runs is
  ignored. Where an exception would be dropped or changed instead of
  ending the command (an import: a compiled module's initialisation turns
  it into an ImportError; a ``__del__``; a callback from llvmlite while
  numba compiles or loads a compiled function; a worker process being
  forked), the signal is raised again 50 ms later.
* **Worker processes** forked by the command's main thread are in its
  process group and end with it: they ignore Ctrl-C (the terminal sends it
  to the whole group; the command stops them), take SIGTERM's default (to
  die when the command stops them), and on Linux are sent SIGTERM by the
  kernel when the command dies, even by SIGKILL (``PR_SET_PDEATHSIG``).
  Whatever worker is left when the command returns is ended
  (:func:`end_children`).

The process leaves through :func:`os._exit` with the command's exit code,
once every ``atexit`` hook has run: CPython restores the default SIGINT
action while it tears down its modules, and a Ctrl-C in that window would
end the process by the signal.
"""

from __future__ import annotations

import os
import signal
import sys

# only what Python has loaded at start-up, and signal: a Ctrl-C during a
# slower import here would come before the handlers (typing alone takes
# 5-10 ms); the annotations are not evaluated

#: exit codes of the signals a command handles (128 + the signal's number)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
_WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}

# the phase of the command: "start" (imports, parsing of the entry), "work"
# (its main function), "stopping" (SIGTERM raised, cleanup running), "done"
_phase = "start"
_code: int | None = None            # the exit code, once the command returned
_forked_from_main = False
_parent_pid = 0


class Terminated(SystemExit):
    """SIGTERM, raised as an exit so ``finally`` blocks and context managers run."""

    def __init__(self) -> None:
        super().__init__(EXIT_CODES[signal.SIGTERM])


def launch(target: str, argv: list[str] | None = None) -> NoReturn:
    """Run ``"module:function"`` as this process's command and exit with its code."""
    global _phase, _code
    for signum in EXIT_CODES:
        signal.signal(signum, _on_signal)
    import atexit
    import importlib
    os.register_at_fork(before=_before_fork, after_in_child=_in_child)
    atexit.register(_leave)            # registered first: runs after every other hook
    module, function = target.split(":")
    main = getattr(importlib.import_module(module), function)
    try:
        _phase = "work"
        code = main() if argv is None else main(argv)
        _phase = "done"
    except KeyboardInterrupt as exc:
        _phase = "done"
        print(str(exc) or "interrupted", file=sys.stderr)
        code = EXIT_CODES[signal.SIGINT]
    except SystemExit as exc:
        _phase = "done"
        code = exc.code
        if isinstance(exc, Terminated):
            print(_WORDS[signal.SIGTERM], file=sys.stderr)
    finally:
        _phase = "done"
        end_children()          # a bug's traceback too leaves no worker behind
    _code = code if isinstance(code, int) else (0 if code is None else 1)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
    sys.exit(_code)


def _on_signal(signum: int, frame) -> None:
    global _phase
    if _phase == "work":
        if _cannot_raise(frame):
            _again_soon(signum)
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        _phase = "stopping"
        end_children()          # a pool that waits for its tasks (a fitter's) waits no more
        raise Terminated()
    if _phase == "stopping":
        return                          # the cleanup of the first SIGTERM is running
    _exit_now(signum)


#: where an exception raised by a signal is dropped or changed: parts of the
#: file names of the frames (besides imports and ``__del__``)
_UNSAFE_FILES = (
    f"{os.sep}llvmlite{os.sep}",                  # numba compiling or loading: printed, run on
    f"multiprocessing{os.sep}popen_",             # a worker being started: left untracked
    f"logging{os.sep}__init__.py",                # its locks, taken and freed around a fork
)


def _cannot_raise(frame) -> bool:
    """Is the main thread where an exception would be dropped or changed: an
    import (a compiled module's initialisation turns it into an ImportError,
    which optional imports take for a missing module), a ``__del__``, a
    callback from llvmlite, a worker process being started (a fork's hooks
    print the exception and leave a lock held)?"""
    while frame is not None:
        code = frame.f_code
        if (code.co_name == "__del__" or code.co_filename.startswith("<frozen importlib")
                or any(f in code.co_filename for f in _UNSAFE_FILES)):
            return True
        frame = frame.f_back
    return False


def _again_soon(signum: int, delay_s: float = 0.05) -> None:
    """The signal, sent again in ``delay_s`` (when the main thread has left the
    place it could not be raised in)."""
    import threading
    t = threading.Timer(delay_s, os.kill, (os.getpid(), signum))
    t.daemon = True
    t.start()


def _exit_now(signum: int) -> NoReturn:
    """End at once: before the command ran, nothing was written; after, all was."""
    end_children()
    _flush()
    os.write(2, f"{_WORDS.get(signum, 'stopped')}\n".encode())
    os._exit(EXIT_CODES.get(signum, 128 + signum))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError, RuntimeError):
            pass                        # a closed pipe (| head), a reentrant call


def _leave() -> None:
    """The last exit hook: leave with the command's code (see the module docstring)."""
    if _code is not None and _phase != "child":
        _flush()
        os._exit(_code)


def end_children(timeout_s: float = 2.0) -> list[int]:
    """Stop every worker process this process started with :mod:`multiprocessing`
    (a process pool's workers) that is still running; returns their pids."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return []
    children = [p for p in mp.active_children() if p.is_alive()]
    for p in children:
        p.terminate()
    for p in children:
        p.join(timeout_s)
        if p.is_alive():
            p.kill()
            p.join(timeout_s)
    return [p.pid for p in children]


def _before_fork() -> None:
    global _forked_from_main, _parent_pid
    import threading
    _forked_from_main = threading.current_thread() is threading.main_thread()
    _parent_pid = os.getpid()


def _in_child() -> None:
    """A worker forked by the command: it leaves Ctrl-C to the command, dies on
    SIGTERM, and (Linux) dies with the command. Only for forks of the main
    thread: the kernel signals a child when the *thread* that forked it ends."""
    global _phase
    _phase = "child"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _forked_from_main:
        die_with_parent(_parent_pid)


def die_with_parent(parent_pid: int) -> None:
    """In a worker: the kernel sends it SIGTERM when its parent dies, even by
    SIGKILL (Linux; elsewhere nothing). Call it only in a worker started by
    the parent's main thread: the signal comes when the thread that started
    the worker ends."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:       # the parent died before the line above
        os._exit(EXIT_CODES[signal.SIGTERM])
