"""The user's scenario and profile files, read and written.

The domain builds a :class:`~model.scenario.Scenario` or a
:class:`~model.profile.Profile` from TOML text; these functions get that
text from a path (checked, decoded, errors naming the file and the option
that gave it) or write a profile back atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

from model.profile import Profile
from model.workload_fit import Obs, observations
from model.scenario import Scenario

from .safe_io import read_text, write_text


def load_scenario(path: str | os.PathLike) -> Scenario:
    """A scenario file; an error names the file, the line and the key."""
    return Scenario.from_toml_text(read_text(path, "scenario file", field="--scenario"), str(path))


def load_profile(name_or_path: str | os.PathLike) -> Profile:
    """A profile TOML file by path, or an embedded profile by name."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return Profile.from_toml_text(read_text(path, "profile file", field="--profile"), str(path))
    return Profile.embedded(str(name_or_path))


def save_profile(profile: Profile, path: str | os.PathLike) -> None:
    """Write ``profile`` as TOML, atomically (the old file stays until the new one is whole)."""
    write_text(path, profile.totoml_value())


def read_observations(paths, *, partition: str = "range") -> list[Obs]:
    """Workload observations from FarReach runs/breakdown CSV files, each
    checked and decoded as every input is (a folder, a pipe, bad bytes)."""
    return observations(((str(src), read_text(src, "runs CSV", field="--runs")) for src in paths),
                        partition=partition)
