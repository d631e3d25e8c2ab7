"""What a run of the fast engine costs besides simulating (issue 12): a
second run in a new process loads the compiled kernel from numba's on-disk
cache instead of compiling it again, and the fast engine builds and imports
nothing of the SimPy engine's (its sampler of actual keys, SimPy itself)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from model.rack import compile_rack
from model.scenario import Scenario
from sim import fast_kernel as K
from sim.config import SimConfig
from sim.run import FastSimulator, SimpySimulator, run_config

_SMALL = SimConfig(n_clients=8, station_probs=np.array([0.5, 0.5]),
                   service_mean_us=np.array([5.0, 6.0]), send_us=1.0, miss_rtt_us=2.0)


def _fresh_process(code: str) -> dict:
    """Run ``code`` in a new interpreter with this session's cache directory;
    it prints one JSON object."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_the_kernel_from_the_disk_cache():
    run_config(_SMALL, 0.001)          # compiled here (or loaded): on disk now either way
    assert os.path.isdir(K.cache_dir())
    stats = _fresh_process("""
        import json
        import numpy as np
        from sim import fast_kernel as K
        from sim.config import SimConfig
        from sim.run import run_config
        cfg = SimConfig(n_clients=8, station_probs=np.array([0.5, 0.5]),
                        service_mean_us=np.array([5.0, 6.0]), send_us=1.0, miss_rtt_us=2.0)
        run_config(cfg, 0.001)
        s = K.run_chunk.stats
        print(json.dumps({"hits": sum(s.cache_hits.values()),
                          "misses": sum(s.cache_misses.values()), "path": s.cache_path}))
    """)
    assert stats["hits"] >= 1 and stats["misses"] == 0
    assert stats["path"].startswith(K.cache_dir())


def test_the_fast_engine_builds_nothing_of_the_simpy_engine(profile):
    spec = compile_rack(Scenario.default().updated({"servers.count": 4, "clients.threads": 64}),
                        profile)
    cfg, _ = FastSimulator(0.01, 1).config(spec)
    assert cfg.keyspace is None                     # the sampler of actual keys: SimPy's only
    assert SimpySimulator(0.01, 1).config(spec)[0].keyspace is not None
    loaded = _fresh_process("""
        import json, sys
        from model.rack import compile_rack
        from model.scenario import Scenario
        from runio.inputs import load_profile
        from sim.run import FastSimulator
        sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 64})
        FastSimulator(0.01, 1).solve(compile_rack(sc, load_profile("tofino-testbed")))
        print(json.dumps(sorted(m for m in sys.modules if m == "simpy" or "engine_simpy" in m)))
    """)
    assert loaded == []


def test_a_cold_cache_is_announced(tmp_path, monkeypatch, capsys):
    # the first run of a checkout compiles for about 30 s: said before the bar
    # starts (issue 44), and not once the compiled code is there
    from runio.progress import note_compiling
    for engine, what in (("sim", "the simulator's kernel"), ("analytic", "the analytic solver")):
        cold = tmp_path / engine
        cold.mkdir()
        note_compiling(what, str(cold))
        err = capsys.readouterr().err
        assert "compiling" in err and what in err
        (cold / "sub").mkdir()
        (cold / "sub" / "f.run-1.py311.nbi").write_bytes(b"")
        note_compiling(what, str(cold))
        assert capsys.readouterr().err == ""
