"""The pieces a report page is made of, as plain dicts for the template.

A page is a list of *sections*; a section is ``{"id", "title", "intro",
"blocks", "collapsed"}`` and its blocks are ``kpis``, ``figure``, ``table``,
``text``, ``callout`` or ``grid`` (rendered by ``templates/blocks.html``).
``collapsed`` sections hold the raw details (tables, no figures) and start
closed; builders mark them, :func:`order` puts them last.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

from markupsafe import Markup

from .figures import fit_layout

Section = dict[str, Any]


def section(id_: str, title: str, blocks: list, intro: str = "", *,
            collapsed: bool = False) -> Section:
    return {"id": id_, "title": title, "intro": intro, "blocks": blocks, "collapsed": collapsed}


def split(sections: Sequence[Section]) -> tuple[list[Section], list[Section]]:
    """(open sections, collapsed ones), each in the given order; empty ones dropped."""
    sections = [s for s in sections if s and s.get("blocks")]
    return ([s for s in sections if not s.get("collapsed")],
            [s for s in sections if s.get("collapsed")])


def order(sections: Sequence[Section]) -> list[Section]:
    """Open sections in their given order, then the collapsed (raw detail) ones."""
    shown, raw = split(sections)
    return shown + raw


def kpi(label: str, value: str, note: str = "", tone: str = "") -> dict:
    if len(value) > 18:
        tone = (tone + " long").strip()
    return {"label": label, "value": value, "note": note, "tone": tone}


#: a table of more rows than this travels gzipped in the page (a 2,000-row
#: sweep's table is 0.5 MB of HTML, 40 kB gzipped) and is built by report.js
PACKED_ROWS = 200


def table(columns: list[str], rows: list[list[Any]], *, caption: str = "",
          numeric: list[bool] | None = None, row_classes: list[str] | None = None,
          sortable: bool = True) -> dict:
    numeric = numeric or [False] * len(columns)
    row_classes = row_classes or [""] * len(rows)
    out = {"kind": "table", "columns": columns, "rows": rows, "caption": caption,
           "numeric": numeric, "row_classes": row_classes, "sortable": sortable}
    if len(rows) > PACKED_ROWS:
        import base64
        import gzip
        body = json.dumps({"rows": [[str(c) for c in r] for r in rows], "classes": row_classes,
                           "numeric": numeric}, separators=(",", ":"))
        out["rows_gz"] = base64.b64encode(gzip.compress(body.encode(), 9, mtime=0)).decode()
        out["rows"] = []
    return out


def grid(blocks: list) -> dict:
    return {"kind": "grid", "blocks": [b for b in blocks if b is not None]}


def text(t: str) -> dict:
    return {"kind": "text", "text": t}


def callout(t: str) -> dict:
    return {"kind": "callout", "text": t}


def error_pct(v: float | None, signed: bool = False) -> str:
    """A percentage error (already in %), one decimal."""
    if v is None:
        return "–"
    return f"{v:+.1f} %" if signed else f"{v:.1f} %"


class Figures:
    """Numbers figures on a page so their element ids are unique."""

    def __init__(self):
        self.n = 0

    def block(self, fig: dict | None, caption: str = "") -> dict | None:
        if fig is None:
            return None
        self.n += 1
        fit_layout(fig)
        return {"kind": "figure", "id": f"fig-{self.n}", "json": script_json(clean(fig)),
                "caption": caption}


def count_figures(blocks) -> int:
    n = 0
    for b in blocks:
        if b is None:
            continue
        if b["kind"] == "figure":
            n += 1
        elif b["kind"] == "grid":
            n += count_figures(b["blocks"])
    return n


def script_json(obj: Any) -> Markup:
    """JSON safe inside <script>: no '<', '>' or '&' can close the element."""
    t = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_json_default)
    t = t.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(t.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _json_default(o: Any):
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def clean(obj: Any) -> Any:
    """NaN/inf -> None, so the figure JSON is strict."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj
