"""Parallel sweeps and fits: a local process pool, and a Dask cluster (LocalCluster)."""

import csv

import pytest

from calibrate.local_fit import LocalFitter
from calibrate.local_runner import run_plan
from calibrate.parallel import pmap
from calibrate.plan import expand, plan_from_mapping
from calibrate.validate import validate

from .conftest import synthetic_rows
from .test_resume import FakeRunner


def _square(x):
    return x * x


def test_pmap_process_pool_keeps_order():
    assert pmap(_square, list(range(20)), n_jobs=2) == [x * x for x in range(20)]
    assert pmap(_square, [3], n_jobs=2) == [9]
    assert pmap(_square, []) == []


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as c:
        yield c


def test_pmap_on_dask(cluster):
    assert pmap(_square, list(range(10)), cluster=cluster) == [x * x for x in range(10)]
    # the same call by scheduler address, as --cluster ADDRESS does
    assert pmap(_square, [2, 4], cluster=cluster.scheduler_address) == [4, 16]


def test_plan_on_dask_appends_every_run(cluster, tmp_path):
    points = expand(plan_from_mapping({"name": "d", "factors": {"clients": [1, 2, 4]}}), cores=2)
    out = tmp_path / "runs.csv"
    counts = run_plan(points, str(out), FakeRunner(), cluster=cluster, progress=False)
    assert counts["ran"] == len(points) == 4
    with open(out, newline="") as fh:
        got = sorted(r["config_hash"] for r in csv.DictReader(fh))
    assert got == sorted(p["config_hash"] for p in points)


def test_validate_and_bootstrap_on_dask(cluster, tmp_path, priors, small_points):
    from runio.local_runs import COLUMNS
    from calibrate.runs_io import RunsWriter
    rows = synthetic_rows(priors, small_points[:6], noise=0.02, seed=5)
    path = tmp_path / "runs.csv"
    with RunsWriter(path, COLUMNS) as w:
        for r in rows:
            w.append({k: v for k, v in r.items() if not k.startswith("__")})
    serial = validate(priors, [str(path)], n_jobs=1)
    remote = validate(priors, [str(path)], cluster=cluster)
    assert [r["pred_mops"] for r in remote.rows] == [r["pred_mops"] for r in serial.rows]
    fit = LocalFitter(free=["base_us", "recv_floor_us"], bootstrap=3, cluster=cluster,
                      max_nfev=10).fit(rows)
    assert fit.uncertainty_method_ == "bootstrap (3 refits)"
    assert all(s >= 0 for s in fit.stderr_.values())
