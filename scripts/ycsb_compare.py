"""Print the model against the YCSB-jar fixtures (docs/workload.md, section 8).

    python scripts/ycsb_compare.py

Reads tests/model/fixtures/ycsb_zipfian_100M.json (written by
scripts/ycsb_fixture.sh) and prints, for the default 100M-record YCSB A
workload: the hit ratio of a 10K-key cache, and the largest per-server share
at 4/16/32 servers under range, range-even and hash partitioning, without and
with the cache: the jar's counts, this model, and the former model. The
former model applied this repository's load generator to every workload
(`% records`, its own key layout, the top 32 key bits split evenly); its
numbers are this model's for `generator = "kvperf"` (:func:`former`).
"""

import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model import keys, workload as W  # noqa: E402
from model.scenario import Scenario, Switch  # noqa: E402
from model.workload_blocks import stock_fold  # noqa: E402


def former(workload, n: int, partition: str, cache: bool):
    """What the former model gave: the kvperf generator and key layout, whose
    ``range`` (and ``range-even``) split the populated top 32 key bits evenly."""
    spec = W.stock_spec(workload, generator="kvperf", layout="kvperf")
    sw = Switch(cache=cache, cache_keys=10_000,
                partition="hash" if partition == "hash" else "range-even")
    return W.evaluate(workload, sw, n, spec)


def main() -> None:
    fx = json.loads((ROOT / "tests/model/fixtures/ycsb_zipfian_100M.json").read_text())
    d = fx["draws"]
    listed = {r[0]: r[1] for r in fx["top_keys"]}
    base = Scenario.default()
    spec = W.stock_spec(base.workload)
    recs = stock_fold(spec)[0][:10_000]
    hit_jar = sum(listed.get(int(r), 0) for r in recs) / d
    r1 = W.evaluate_scenario(base.updated({"servers.count": 1}))
    legacy1 = former(base.workload, 1, "range", True)
    print(f"draws {d:,} (YCSB 0.17 jar), 95 % interval of a jar fraction p: ±1.96 sqrt(p(1-p)/draws)")
    print(f"hit ratio, 10K cached keys: jar {hit_jar:.4f} (its own top 10K: "
          f"{sum(sorted(listed.values(), reverse=True)[:10_000]) / d:.4f}), "
          f"model {r1.hit_ratio:.4f} ± {r1.tolerance:.1e}, former {legacy1.hit_ratio:.4f}")
    print()
    print(f"{'servers':>7} {'partition':<11} {'cache':<5} {'jar':>7} {'model':>7} {'former':>7}")
    for n in (4, 16, 32):
        for part in ("range", "range-even", "hash"):
            total = np.asarray(fx["per_server"][str(n)][part], float)
            srv = keys.servers_of(recs, "farreach", n, part)
            cached_cnt = np.bincount(srv, weights=[listed.get(int(r), 0) for r in recs], minlength=n)
            for cache in (False, True):
                sc = base.updated({"servers.count": n, "switch.partition": part, "switch.cache": cache})
                res = W.evaluate_scenario(sc)
                emp = (total - (cached_cnt if cache else 0)) / d
                old = former(base.workload, n, part, cache)
                print(f"{n:>7} {part:<11} {'on' if cache else 'off':<5} {emp.max():7.4f} "
                      f"{(res.shares if cache else res.shares_nocache).max():7.4f} "
                      f"{(old.shares if cache else old.shares_nocache).max():7.4f}")


if __name__ == "__main__":
    main()
