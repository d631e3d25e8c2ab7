"""Where the workload model keeps what it computed beyond one process: nowhere, unless told.

The model computes and remembers in memory (the ``functools`` caches of
:mod:`model.workload_blocks` and :mod:`model.workload_summary`); it reads and
writes no files. An entry point may install a *store* that keeps the costly
results between processes (:func:`set_store`, re-exported as
``model.workload.set_store``); :mod:`runio.workload_cache` is the on-disk one
(``runio.workload_cache.install()``). Without a store every process computes
afresh, with the same numbers.

A store is any object with two methods:

``load(prefix, key) -> dict | None``
    the arrays saved under ``(prefix, key)``, or None (never saved, unreadable);
``save(prefix, key, arrays, *, compress=True)``
    keep ``arrays`` (a dict of numpy arrays) under ``(prefix, key)``.
    ``compress`` is a hint: False for dense arrays that compression only slows.

``prefix`` names the kind of entry (``"fold"``, ``"headkeys"``,
``"workload"``); ``key`` is a tuple of values with a stable ``repr`` (specs,
numbers, strings). The model treats arrays a store returns as read-only.
A store invalidates what an older model wrote (the disk store keys entries
on the source of the workload modules).
"""

from __future__ import annotations

_store = None


def set_store(store):
    """Install ``store`` (None: keep nothing beyond memory); returns the one it replaces.

    Install it before the first evaluation: what is already remembered in
    memory is not asked of the store again."""
    global _store
    previous, _store = _store, store
    return previous


def get_store():
    """The installed store, or None."""
    return _store


def load(prefix: str, key: tuple) -> dict | None:
    return None if _store is None else _store.load(prefix, key)


def save(prefix: str, key: tuple, arrays: dict, *, compress: bool = True) -> None:
    if _store is not None:
        _store.save(prefix, key, arrays, compress=compress)
