"""Measured runs in and out, local runs on the native server, fitting and validation.

The package turns measurements into calibrated :class:`model.profile.Profile`
files and checks profiles against measurements it did not see::

    python -m calibrate run --plan local.toml --out runs.csv      # native runs on this machine
    python -m calibrate ingest --stats client0.out --server-log server.log --out runs.csv
    python -m calibrate fit --runs runs.csv --out my.toml           # fitter chosen by the runs' kind
    python -m calibrate validate --profile my.toml --runs holdout.csv --max-error 15

Modules: :mod:`calibrate.runs_io` (runs CSVs, safe appends),
:mod:`calibrate.farreach_logs` (FarReach's own output formats),
:mod:`runio.local_runs` (the ``local_runs`` run kind),
:mod:`calibrate.plan` and :mod:`calibrate.local_runner` (design of
experiments over the native server), :mod:`calibrate.fitters` (kind ->
fitter registry), :mod:`calibrate.local_fit` (the local fitter),
:mod:`calibrate.validate` (error reports) and :mod:`calibrate.parallel`
(process pool or Dask cluster). See docs/calibration.md.
"""

from __future__ import annotations

__all__ = ["__version__"]


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("kvperf")
        except PackageNotFoundError:
            return "0.1.0"
    except ImportError:  # pragma: no cover
        return "0.1.0"


def __getattr__(name: str) -> str:
    # read on first use: ``python -m calibrate`` imports this package before
    # its entry point can handle Ctrl-C (runio.launch), and the package
    # metadata takes a twentieth of a second to read
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'calibrate' has no attribute {name!r}")
