"""Shared fixtures for the simulator tests."""

from pathlib import Path

import pytest

from model.profile import Profile
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def profile() -> Profile:
    # The embedded testbed profile: the tests check mechanisms and laws, which
    # must hold for any calibrated profile.
    return load_profile("tofino-testbed")

