"""Shared fixtures for the simulator tests."""

from pathlib import Path

import pytest

from model.profile import Profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def profile() -> Profile:
    # The priors ship with the repo and keep every parameter the model reads;
    # the fitted profile may be regenerated at any time.
    return Profile.load(str(ROOT / "calibrate" / "priors" / "farreach.toml"))
