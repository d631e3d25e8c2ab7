"""Shared conformance test: every registered fitter follows the estimator contract.

The contract (docs/contracts.md, scikit-learn conventions): ``__init__``
only stores its parameters (all with defaults), ``fit(rows)`` validates and
returns ``self``, fitted values end in ``_`` and include ``profile_`` (a
Profile) and ``residuals_``; bad input raises InputError. Fitters whose
module is not importable yet are skipped with the reason.
"""

import inspect
from pathlib import Path

import pytest

from calibrate.fitters import FitterUnavailable, fitter_for, registered, resolve, split_spec
from calibrate.runs_io import load_runs
from model.errors import InputError
from model.profile import Profile

from .conftest import synthetic_rows

# One entry per distinct fitter (class + fixed arguments), with the kinds it fits;
# fits use the first of its kinds alphabetically (for FarReach: the small breakdown rows).
_UNIQUE: dict = {}
for _kind, _spec in sorted(registered().items()):
    _path, _fixed = split_spec(_spec)
    _UNIQUE.setdefault((str(_path), tuple(sorted(_fixed.items()))), []).append(_kind)
ENTRIES = [(kinds, path, dict(fixed)) for (path, fixed), kinds in _UNIQUE.items()]
IDS = [f"{p.split(':')[-1]}[{','.join(k)}]" for k, p, _ in ENTRIES]


def _cls(spec):
    try:
        return resolve(spec)
    except FitterUnavailable as exc:
        pytest.skip(str(exc))


def _sample_kind(kinds):
    return sorted(kinds)[0]


def _rows(kind, priors, small_points):
    if kind == "local_runs":
        return synthetic_rows(priors, small_points[:4])
    path = Path("data") / f"{kind}.csv"
    if not path.exists():
        pytest.skip(f"no sample data for kind {kind}")
    _, rows = load_runs(str(path), kind)
    return rows[:6]


def _init_params(cls):
    sig = inspect.signature(cls.__init__)
    return {n: p for n, p in sig.parameters.items()
            if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@pytest.mark.parametrize("kinds, spec, fixed", ENTRIES, ids=IDS)
def test_init_only_stores_parameters(kinds, spec, fixed):
    cls = _cls(spec)
    params = _init_params(cls)
    missing = [n for n, p in params.items()
               if p.default is inspect.Parameter.empty and n not in fixed]
    assert not missing, f"{cls.__name__} parameters without defaults or registry values: {missing}"
    est = cls(**fixed)
    for n, p in params.items():
        assert hasattr(est, n), f"{cls.__name__}.__init__ does not store {n}"
        expect = fixed.get(n, p.default)
        assert getattr(est, n) is expect or getattr(est, n) == expect, n
    fitted = [a for a in vars(est) if a.endswith("_") and not a.startswith("__")]
    assert not fitted, f"{cls.__name__} has fitted attributes before fit: {fitted}"


def test_registry_covers_farreach_and_local_kinds():
    reg = registered()
    for kind in ("farreach_runs", "farreach_tuning", "farreach_breakdown"):
        assert reg[kind] == "calibrate.farreach:FarReachFitter"
    assert fitter_for("local_runs").__name__ == "LocalFitter"
    with pytest.raises(InputError):
        fitter_for("no_such_kind")


@pytest.mark.parametrize("kinds, spec, fixed", ENTRIES, ids=IDS)
def test_fit_returns_self_with_fitted_attributes(kinds, spec, fixed, priors, small_points,
                                                request):
    cls = _cls(spec)
    kind = _sample_kind(kinds)
    if kind != "local_runs":
        request.applymarker(pytest.mark.slow)
    rows = _rows(kind, priors, small_points)
    params = _init_params(cls)
    kwargs = dict(fixed)
    if "max_nfev" in params:
        kwargs["max_nfev"] = 3
    est = cls(**kwargs)
    before = {n: getattr(est, n) for n in params}
    assert est.fit(rows) is est
    assert isinstance(est.profile_, Profile) and est.profile_.params
    assert hasattr(est, "residuals_")
    assert {n: getattr(est, n) for n in params} == before, "fit changed an __init__ parameter"
    new = set(vars(est)) - set(params)
    assert all(a.endswith("_") or a.startswith("_") for a in new), sorted(new)
    with pytest.raises(InputError):
        cls(**kwargs).fit([])
