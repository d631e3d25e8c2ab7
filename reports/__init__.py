"""HTML reports: predictions, sweeps, validations and simulator timelines.

One call writes one self-contained HTML page (CSS, data and a gzipped
plotly.js inlined, :mod:`reports.assets`; about 0.6-0.7 MB): it opens
offline wherever it is moved and makes no network request::

    import reports
    reports.write_prediction_report(pred.to_dict(), scenario.to_dict(), profile_dict, "p.html")
    reports.write_sweep_report(rows, "sweep.html", title="memtable sweep")
    reports.write_validation_report(rows, "val.html", title="holdout")
    reports.write_timeline_report(timeline_rows, pred.to_dict(), "run.html")
    reports.build_report("all.html", prediction=..., sweep=..., validation=..., timeline=...)

Inputs are plain data: a ``Prediction.to_dict()``, a ``Scenario.to_dict()``,
a profile as ``{"name", "meta", "params": {k: {value, unit, source, stderr}}}``
(:func:`profile_dict` converts a :class:`model.profile.Profile`), and rows
as ``list[dict]`` keyed by CSV column (numbers as numbers, empty as None).
Bad input raises :class:`model.errors.InputError`.

From the shell: ``python -m reports build --out report.html --sweep s.csv ...``
and ``python -m reports check report.html`` (headless Chromium check); see
:mod:`reports.cli`.
"""

from __future__ import annotations

__all__ = ["build_report", "write_prediction_report", "write_sweep_report",
           "write_validation_report", "write_timeline_report", "profile_dict"]


def __getattr__(name: str):
    # loaded on first use: ``python -m reports`` imports this package before
    # its entry point can handle Ctrl-C (runio.launch), and the pages'
    # imports take a tenth of a second
    if name in __all__:
        from . import page
        return getattr(page, name)
    raise AttributeError(f"module 'reports' has no attribute {name!r}")
