"""``python -m reports.systems --out DIR``: one HTML page per reference system.

The command's entry only. The pages are computed in
:mod:`calibrate.systems_pages` (each shows a cross-validation, which refits
the system's profile: calibration's work) and rendered by
:mod:`reports.system_page`. The command keeps its name here, where users
know it; :func:`main` hands over to
calibrate, imported on call so that importing :mod:`reports` never imports
calibrate (calibrate imports reports to render).
"""

from __future__ import annotations

import sys
from types import ModuleType

__all__ = ["main"]


def _system_pages() -> ModuleType:
    # The one import of calibrate from reports: this command's pages need
    # the cross-validation's refits, and `python -m reports.systems` is
    # where users run it.
    from calibrate import systems_pages
    return systems_pages


def main(argv: list[str] | None = None) -> int:
    """:func:`calibrate.systems_pages.main`."""
    from runio.exits import run_command
    loaded: list[ModuleType] = []
    # loading calibrate takes a second or two: a Ctrl-C then ends like one
    # during the work (exit 130, no traceback)
    code = run_command(lambda: loaded.append(_system_pages()))
    return loaded[0].main(argv) if loaded else code


if __name__ == "__main__":
    sys.exit(main())   # run_command clears CPython's Ctrl-C exit mark (exit 130)
