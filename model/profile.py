"""Calibrated numbers for one testbed: the profile.

A :class:`Profile` maps parameter names to :class:`Param` values, each with
its unit, where it came from (provenance) and, when fitted, its standard
error. Profiles are TOML files::

    [meta]
    name = "tofino-testbed"
    fitted_by = "python -m calibrate fit --kind farreach ..."

    [params.recv_floor_us]
    value = 1.6
    unit = "us"
    source = "fit: farreach_runs.csv (29 rows)"
    stderr = 0.05

Two optional tables carry what prediction intervals need
(:mod:`model.uncertainty`); profiles without them load as before::

    [uncertainty]                 # covariance of the fitted parameters, log space
    params = ["server_us", "net_us"]
    log_covariance = [[0.0006, 0.0001], [0.0001, 0.0012]]

    [noise]                       # run-to-run scatter per measured column, log-sd
    kops = 0.05
    "morphling_go.ops" = 0.08     # kind.column wins over column

Embedded profiles ship in ``model/profiles/`` and are found by name.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError
from .toml_text import locate_in_toml, parse_toml, toml_value


@dataclass(frozen=True)
class Param:
    value: float
    unit: str
    source: str
    stderr: float | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    params: Mapping[str, Param]
    meta: Mapping[str, Any] = field(default_factory=dict)
    # {"params": [names], "log_covariance": [[...]]} or None; see model.uncertainty
    uncertainty: Mapping[str, Any] | None = None
    noise: Mapping[str, float] = field(default_factory=dict)
    source: str = ""            # the file it was read from, for error messages
    # its TOML text when read from one: a value found bad later (when a rack is
    # compiled) is located in it without reading the file again
    text: str = field(default="", compare=False, repr=False)

    def __getitem__(self, key: str) -> float:
        try:
            return self.params[key].value
        except KeyError:
            raise InputError(f"profile '{self.name}' has no parameter '{key}'; "
                             f"it has: {', '.join(sorted(self.params))}", field=key) from None

    def get(self, key: str, default: float) -> float:
        p = self.params.get(key)
        return default if p is None else p.value

    def __contains__(self, key: str) -> bool:
        return key in self.params

    def with_values(self, values: Mapping[str, float], source: str) -> "Profile":
        """A copy with some values replaced (units kept), e.g. during fitting.

        The copy has no [uncertainty] or [noise]: they describe the fitted values."""
        params = dict(self.params)
        for k, v in values.items():
            old = params.get(k)
            params[k] = Param(float(v), old.unit if old else "", source,
                              None)
        return Profile(self.name, params, self.meta, source=self.source)

    # ---- TOML -----------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str) -> "Profile":
        meta = data.get("meta", {})
        if not isinstance(meta, Mapping):
            raise InputError("expected a table ([meta])", source=source, field="meta")
        meta = dict(meta)
        raw = data.get("params")
        if not isinstance(raw, Mapping) or not raw:
            raise InputError("a profile needs a [params] table", source=source, field="params")
        params = {}
        for key, p in raw.items():
            if not isinstance(p, Mapping) or "value" not in p:
                raise InputError("expected a table with value, unit and source",
                                 source=source, field=f"params.{key}")
            v = p["value"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(f"value must be a finite number, got {v!r}",
                                 source=source, field=f"params.{key}.value")
            for req in ("unit", "source"):
                if not isinstance(p.get(req), str):
                    raise InputError(f"missing or non-string '{req}'",
                                     source=source, field=f"params.{key}.{req}")
            extra = set(p) - {"value", "unit", "source", "stderr"}
            if extra:
                raise InputError(f"unknown keys {sorted(extra)}; allowed: value, unit, source, stderr",
                                 source=source, field=f"params.{key}")
            se = p.get("stderr")
            if se is not None and (isinstance(se, bool) or not isinstance(se, (int, float))
                                   or not (math.isfinite(se) and se >= 0)):
                raise InputError(f"stderr must be a finite number >= 0, got {se!r}",
                                 source=source, field=f"params.{key}.stderr")
            params[key] = Param(float(v), p["unit"], p["source"],
                                None if se is None else float(se))
        unc, noise = _uncertainty(data, params, source), _noise(data, source)
        name = meta.get("name", Path(source).stem)
        if not isinstance(name, str) or not name:
            raise InputError(f"expected a non-empty string, got {name!r}", source=source,
                             field="meta.name")
        return cls(name, params, meta, unc, noise, source)

    @classmethod
    def from_toml_text(cls, text: str, source: str) -> "Profile":
        """A profile from its TOML text; an error names the source and the line."""
        data = parse_toml(text, source)
        try:
            return dataclasses.replace(cls.from_mapping(data, source=source), text=text)
        except InputError as exc:
            raise locate_in_toml(exc, text, source) from None

    @classmethod
    def embedded(cls, name: str) -> "Profile":
        """An embedded profile (``model/profiles/<name>.toml``, package data)."""
        res = resources.files("model").joinpath("profiles").joinpath(f"{name}.toml")
        if not res.is_file():
            raise InputError(f"no embedded profile '{name}'; embedded: "
                             f"{', '.join(embedded_profiles())}", field="--profile")
        return cls.from_toml_text(res.read_text(), f"<embedded {name}>")

    def totoml_value(self) -> str:
        out = ["[meta]"]
        for k, v in self.meta.items():
            out.append(f"{k} = {toml_value(v)}")
        for k in sorted(self.params):
            p = self.params[k]
            out.append(f"\n[params.{k}]")
            out.append(f"value = {p.value!r}")
            out.append(f"unit = {toml_value(p.unit)}")
            out.append(f"source = {toml_value(p.source)}")
            if p.stderr is not None:
                out.append(f"stderr = {float(p.stderr)!r}")
        if self.uncertainty:
            out.append("\n[uncertainty]")
            out.append(f"params = {toml_value(list(self.uncertainty['params']))}")
            rows = ",\n  ".join(toml_value([float(x) for x in r])
                                for r in self.uncertainty["log_covariance"])
            out.append(f"log_covariance = [\n  {rows},\n]")
        if self.noise:
            out.append("\n[noise]")
            for k in sorted(self.noise):
                out.append(f"{toml_value(k)} = {float(self.noise[k])!r}")
        return "\n".join(out) + "\n"



def _uncertainty(data: Mapping[str, Any], params: Mapping[str, Param],
                 source: str) -> dict[str, Any] | None:
    """The optional [uncertainty] table, checked: known positive parameters and a
    square, symmetric covariance matrix of finite numbers."""
    u = data.get("uncertainty")
    if u is None:
        return None
    if not isinstance(u, Mapping) or set(u) != {"params", "log_covariance"}:
        raise InputError("expected params = [names] and log_covariance = [[...]]",
                         source=source, field="uncertainty")
    names = u["params"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError("expected a list of parameter names", source=source,
                         field="uncertainty.params")
    for n in names:
        if n not in params or params[n].value <= 0:
            raise InputError(f"'{n}' is not a positive parameter of this profile",
                             source=source, field="uncertainty.params")
    cov = u["log_covariance"]
    k = len(names)
    ok = (isinstance(cov, list) and len(cov) == k and all(
        isinstance(r, list) and len(r) == k and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            for x in r) for r in cov))
    if not ok or any(abs(cov[i][j] - cov[j][i]) > 1e-9 * (1 + abs(cov[i][j]))
                     for i in range(k) for j in range(k)) or any(cov[i][i] < 0 for i in range(k)):
        raise InputError(f"expected a symmetric {k} x {k} matrix of finite numbers with a "
                         "non-negative diagonal", source=source, field="uncertainty.log_covariance")
    return {"params": list(names), "log_covariance": [[float(x) for x in r] for r in cov]}


def _noise(data: Mapping[str, Any], source: str) -> dict[str, float]:
    n = data.get("noise", {})
    if not isinstance(n, Mapping):
        raise InputError("expected a table of column = log-sd", source=source, field="noise")
    out = {}
    for k, v in n.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InputError(f"expected a finite number >= 0, got {v!r}", source=source,
                             field=f"noise.{k}")
        out[k] = float(v)
    return out


def embedded_profiles() -> list[str]:
    d = resources.files("model").joinpath("profiles")
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".toml"))

