"""Plans: validation errors name the key; designs expand as documented."""

import pytest

from calibrate.plan import expand, load_plan, plan_from_mapping
from model.errors import InputError


def test_default_plan_is_small_and_valid():
    plan = load_plan(None)
    points = expand(plan, cores=2)
    assert plan.name == "default" and 8 <= len(points) <= 40
    assert len({p["config_hash"] for p in points}) == len(points)
    # every run is bounded in time: the plan finishes in a few minutes
    assert sum(p["duration_s"] + p["warmup_s"] for p in points) < 180


@pytest.mark.parametrize("data, field", [
    ({"factors": {"clients": [1, "many"]}}, "factors.clients[1]"),
    ({"factors": {"clientz": [1]}}, "factors.clientz"),
    ({"base": {"wal": "maybe"}, "factors": {"clients": [1]}}, "base.wal"),
    ({"design": "random", "factors": {"clients": [1]}}, "design"),
    ({"points": [{"read_ratio": 1.5}], "design": "points"}, "points[0].read_ratio"),
    ({"factors": {"workers": []}}, "factors.workers"),
    ({"repeats": 0, "factors": {"clients": [1]}}, "repeats"),
    ({"colour": 1}, "colour"),
])
def test_plan_errors_name_the_key(data, field):
    with pytest.raises(InputError) as ei:
        plan_from_mapping(data, "p.toml")
    assert ei.value.field == field and ei.value.source == "p.toml"


def test_flushnum_maxnum_checked_per_point():
    plan = plan_from_mapping({"factors": {"flushnum": [1, 3]}}, "p.toml")
    with pytest.raises(InputError) as ei:
        expand(plan)
    assert ei.value.field == "flushnum" and "flushnum=3" in str(ei.value)


def test_grid_and_oat_and_repeats():
    grid = plan_from_mapping({"design": "grid", "factors": {"clients": [1, 2, 4],
                                                           "workers": [1, 2]}})
    assert len(expand(grid)) == 6
    oat = plan_from_mapping({"design": "oat", "repeats": 2,
                             "factors": {"clients": [1, 8], "workers": [2, 3]}})
    pts = expand(oat)
    # base (clients=8, workers=2) appears once per repeat despite being in both factors
    assert len(pts) == 2 * 3          # base, clients=1, workers=3
    assert [p["id"] for p in pts][:2] == ["plan-001", "plan-002"]
    assert {p["repeat"] for p in pts} == {0, 1}


def test_random_order_is_seeded_and_interleaves_plans():
    a = plan_from_mapping({"name": "a", "order": "random", "seed": 3,
                           "factors": {"clients": [1, 2, 4, 8, 16, 32]}})
    b = plan_from_mapping({"name": "b", "design": "points", "points": [{"workers": 1},
                                                                       {"workers": 3}]})
    from calibrate.plan import expand_all
    one = [p["id"] for p in expand(a)]
    assert one == [p["id"] for p in expand(a)]                 # seeded: same order every time
    assert one != sorted(one) and sorted(one) == [f"a-{i:03d}" for i in range(1, 7)]
    both = [p["id"] for p in expand_all([a, b])]
    assert sorted(both) == sorted(one + ["b-001", "b-002"])
    assert both[-2:] != ["b-001", "b-002"]                       # b is interleaved with a
    with pytest.raises(InputError) as ei:
        plan_from_mapping({"order": "sideways", "factors": {"clients": [1]}})
    assert ei.value.field == "order"
