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

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("reports.systems:main")

from types import ModuleType

__all__ = ["main"]


def _system_pages() -> ModuleType:
    # The one import of calibrate from reports: this command's pages need
    # the cross-validation's refits, and `python -m reports.systems` is
    # where users run it.
    from calibrate import systems_pages
    return systems_pages


def main(argv: list[str] | None = None) -> int:
    """:func:`calibrate.systems_pages.main` (a Ctrl-C while calibrate loads, a
    second or two, ends as one during the work: :mod:`runio.launch`)."""
    return _system_pages().main(argv)
