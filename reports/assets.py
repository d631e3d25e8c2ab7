"""plotly.js, written once per output folder instead of into every page.

plotly.js is 4.8 MB; inlined, it made every report a 5 MB file. A page now
loads ``plotly.min.js`` from its own folder (a relative ``<script src>``,
which works from ``file:`` and needs no network), and :func:`install_beside`
puts the copy shipped with the installed ``plotly`` package there when the
page is written. Pages in one folder share the copy; a stale copy (from
another plotly version) is replaced, so every page in the folder draws with
the plotly.js it was written for, or a newer one.

The plotly package ships only the full bundle (no ``basic`` / ``cartesian``
partial bundles), so the full one is what is written.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup

PLOTLY_JS = "plotly.min.js"

# How a page includes plotly.js; also how write() recognises a page that needs it.
SCRIPT_TAG = f'<script src="{PLOTLY_JS}"></script>'


def script_tag() -> Markup:
    return Markup(SCRIPT_TAG)


def needs_plotly(html_text: str) -> bool:
    return SCRIPT_TAG in html_text


@lru_cache(maxsize=1)
def _plotly_bytes() -> bytes:
    from plotly.offline import get_plotlyjs
    return get_plotlyjs().encode("utf-8")


def install_beside(page: str | Path) -> Path:
    """Write ``plotly.min.js`` next to ``page`` unless an identical copy is there."""
    target = Path(page).parent / PLOTLY_JS
    data = _plotly_bytes()
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return target
    except OSError:
        pass
    # Write a temporary file and rename it, so a page being opened (or another
    # process writing the same folder) never sees half a script.
    fd, tmp = tempfile.mkstemp(prefix=".plotly-", suffix=".js", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
