"""plotly.js inside every page that draws charts: one file that travels.

A report is one HTML file that renders offline wherever it is moved (issue
44). The full plotly.js (4.8 MB, what the ``plotly`` Python package ships)
would make every page 5 MB, so a page carries plotly.js's *cartesian*
partial bundle (scatter, bar, heatmap, box, histogram, contour, pie: every
trace the reports draw; 1.3 MB) gzipped (0.46 MB) and base64-encoded in a
``<script type="application/octet-stream">`` element; ``static/report.js``
inflates it with the browser's own ``DecompressionStream`` (Chromium 80+,
Firefox 113+, Safari 16.4+) before drawing. A page is about 0.6-0.7 MB.

The bundle is ``plotly.js-cartesian-dist-min`` from npm, vendored as
``static/plotly-cartesian.min.js.gz`` with its licence (MIT,
``static/plotly-LICENSE.txt``); ``scripts/vendor_plotly.sh`` fetches and
packs it again (the version is named there and in :data:`PLOTLY_VERSION`).
"""

from __future__ import annotations

import base64
from functools import lru_cache
from importlib import resources

from markupsafe import Markup

PLOTLY_VERSION = "3.1.0"
BUNDLE = "plotly-cartesian.min.js.gz"
#: the element a page's bundle sits in; also how a page that needs it is recognised
ELEMENT_ID = "kvperf-plotly-gz"


@lru_cache(maxsize=1)
def _bundle_b64() -> str:
    data = resources.files("reports").joinpath("static", BUNDLE).read_bytes()
    return base64.b64encode(data).decode("ascii")


def script_tag() -> Markup:
    """The gzipped plotly.js bundle as an inert script element (base64 text)."""
    return Markup(f'<script type="application/octet-stream" id="{ELEMENT_ID}" '
                  f'data-version="{PLOTLY_VERSION}">{_bundle_b64()}</script>')


def needs_plotly(html_text: str) -> bool:
    return f'id="{ELEMENT_ID}"' in html_text
