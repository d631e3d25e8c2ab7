"""NOTE lines: where the toolkit answers something other than what was asked.

An option the command ignores (``--seconds`` without ``--engine sim``), a
value the model raises or lowers (a timeout below the profile's timer
floor): the answer is still given, and one ``NOTE:`` line on stderr says how
it differs from the question. Never silently.

Every such line goes through :func:`note`. A command's notes are held until
its inputs are all checked -- a refused command says only its error --, then
printed together: when its first progress bar starts
(:func:`runio.progress.bar`) or when it ends (:func:`runio.exits.run_command`),
whichever comes first. :func:`scenario_notes` finds the values a rack
description changes.
"""

from __future__ import annotations

import sys
from typing import Iterable

_pending: list[str] = []


def note(text: str) -> None:
    """Say (once per command) how the answer differs from what was asked."""
    if text not in _pending:
        _pending.append(text)


def flush() -> list[str]:
    """Print the notes held so far on stderr (``NOTE: ...``); returns them."""
    out = list(_pending)
    _pending.clear()
    for text in out:
        print(f"NOTE: {text}", file=sys.stderr, flush=True)
    return out


def discard() -> None:
    """Drop the notes held (the command was refused, or starts afresh)."""
    _pending.clear()


def scenario_notes(scenarios: Iterable, profile, what: str = "") -> list[str]:
    """Where the model answers for other values than the scenarios give: a
    client timeout below the profile's timer floor is waited as the floor
    (``model.rack.clients``, as the client's kernel timer does). ``what``
    names the scenarios in the text (``"rows 2, 5"``)."""
    from model.errors import InputError
    from model.rack.clients import compile_clients
    from model.rack.params import ProfileReader
    if "timer_floor_ms" not in profile.params:
        return []
    clamped = []
    for sc in scenarios:
        try:
            waited_ms = compile_clients(sc, ProfileReader(profile)).timeout_us / 1e3
        except (InputError, AttributeError):       # not a rack, or a profile of another system
            continue
        if waited_ms > float(sc.clients.timeout_ms):
            clamped.append((float(sc.clients.timeout_ms), waited_ms))
    if not clamped:
        return []
    asked = ", ".join(sorted({f"{a:g}" for a, _ in clamped}, key=float))
    floor = clamped[0][1]
    return [f"clients.timeout_ms = {asked} ms{' (' + what + ')' if what else ''} is below the "
            f"profile's timer floor: the model waits {floor:.3g} ms, as the client's kernel timer "
            f"does (timer_floor_ms of profile '{profile.name}'; docs/model.md)"]
