"""Result objects of the notebook API: a prediction with its scenario, as data and frames."""

from __future__ import annotations

import math
from typing import Any

from model.prediction import Prediction
from model.profile import Profile
from model.scenario import Scenario


class _ReadThrough:
    """A result with the scenario and profile it came from, whose wrapped
    object's fields read through (``_INNER`` names the attribute holding it)."""
    _INNER = ""

    def __init__(self, inner: Any, scenario: Scenario, profile: Profile):
        setattr(self, self._INNER, inner)
        self.scenario = scenario
        self.profile = profile

    def __getattr__(self, name: str) -> Any:
        if name == self._INNER:              # not yet set (copy, unpickling)
            raise AttributeError(name)
        return getattr(getattr(self, self._INNER), name)

    @property
    def notes(self) -> list[str]:
        """Where the answer is for other values than the scenario gives (a
        timeout below the profile's timer floor): the command line's NOTE
        lines (:mod:`runio.notes`); empty when it answers what was asked."""
        from runio.notes import scenario_notes
        return scenario_notes([self.scenario], self.profile)


class PredictionResult(_ReadThrough):
    """A :class:`model.prediction.Prediction` with the scenario and profile it came
    from. Every field of the prediction reads through (``throughput_mops``,
    ``servers``, ``bottleneck``, ``details``, ...)."""
    _INNER = "prediction"
    prediction: Prediction

    def __repr__(self) -> str:
        p = self.prediction
        return (f"<PredictionResult {self.scenario.name!r} ({p.engine}): "
                f"{p.throughput_mops:.4f} MOPS; {p.bottleneck.text()}>")

    def summary(self) -> dict[str, Any]:
        """The headline numbers (units in the names)."""
        from cli.sweep import summary_row
        row = summary_row(self.prediction)
        for k in ("throughput_lo_mops", "throughput_hi_mops"):
            row.pop(k, None)
        return {"scenario": self.scenario.name, "engine": self.prediction.engine,
                "profile": self.profile.name, **row}

    def to_dict(self) -> dict[str, Any]:
        """The prediction as JSON-ready data (docs/contracts.md), plus the scenario."""
        from cli.main import prediction_json
        d = prediction_json(self.prediction)
        d["scenario"] = self.scenario.to_dict()
        d["profile"] = self.profile.name
        return d

    def to_frame(self):
        """One row per worker: share (with and without the cache), utilisation,
        wait and process time (pandas)."""
        import pandas as pd
        rows = [{"server": i, "share": s.share, "share_nocache": s.share_nocache,
                 "utilization": s.utilization,
                 "wait_us": s.wait_us if math.isfinite(s.wait_us) else math.nan,
                 "process_us": s.process_us} for i, s in enumerate(self.prediction.servers)]
        return pd.DataFrame(rows).set_index("server")

    def timeline_frame(self):
        """A simulation's per-second timeline (pandas); empty for the analytic model."""
        import pandas as pd
        return pd.DataFrame(self.prediction.details.get("timeline") or [])

    def text(self) -> str:
        """The table ``python -m sim predict`` prints."""
        from cli.main import format_table
        return format_table(self.prediction, self.scenario, self.profile)

    def write(self, path: str) -> str:
        """An HTML report of this prediction (as ``--html``)."""
        from reports import build_report, profile_dict
        from cli.main import prediction_json
        d = prediction_json(self.prediction)
        timeline = d.get("details", {}).get("timeline")
        build_report(path, prediction=d, scenario=self.scenario.to_dict(),
                     profile=profile_dict(self.profile), timeline=timeline or None,
                     title=f"{'Simulation' if timeline else 'Prediction'}: {self.scenario.name}")
        return path


class RotationResult(_ReadThrough):
    """A server-rotation measurement (:class:`model.rotation.Rotation`) with the
    scenario and profile it came from; its fields read through
    (``throughput_mops``, ``normalized_x``, ``partition_mops``, ...)."""
    _INNER = "rotation"

    def __repr__(self) -> str:
        r = self.rotation
        return (f"<RotationResult {self.scenario.name!r} ({self.engine}): {r.throughput_mops:.4f} "
                f"MOPS aggregate over {r.servers} partitions; bottleneck partition {r.bottleneck}>")

    def to_dict(self) -> dict[str, Any]:
        """As ``python -m sim predict --measure rotation --json`` (docs/contracts.md)."""
        d = self.rotation.to_dict()
        d.update({"scenario": self.scenario.to_dict(), "profile": self.profile.name})
        return d

    def to_frame(self):
        """One row per partition: its throughput and its server replies (MOPS)."""
        import pandas as pd
        r = self.rotation
        return pd.DataFrame({"partition": range(r.servers), "throughput_mops": r.partition_mops,
                             "server_mops": r.partition_server_mops,
                             "bottleneck": [i == r.bottleneck for i in range(r.servers)]}
                            ).set_index("partition")

    def write(self, path: str) -> str:
        """Its HTML report (as ``--html``)."""
        from reports import profile_dict
        from reports.rotation import write_rotation_report
        write_rotation_report(self.rotation.to_dict(), self.scenario.to_dict(),
                              profile_dict(self.profile), path)
        return path
