"""The declared scenario space, sampled (:mod:`model.scenario_space`, re-exported
here for the tests and the soak, which have always imported it from here)."""

from model.scenario_space import (DIMENSIONS, FAST, FULL, P_DEFAULT,  # noqa: F401
                                  WORKLOAD_PROFILES, declared, random_scenarios,
                                  scenario_from_unit)

__all__ = ["DIMENSIONS", "FAST", "FULL", "P_DEFAULT", "WORKLOAD_PROFILES", "declared",
           "random_scenarios", "scenario_from_unit"]
