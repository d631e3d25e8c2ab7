"""What is random in a service (model.rack.service): the receive floor and the
gap are fixed, the process part gamma. Per event (both simulators) and in the
mean-value terms the analytic solver uses."""

import numpy as np
import pytest

from model.rack import compile_rack
from model.rack import service as svc
from model.scenario import Scenario
from sim.run import FastSimulator
from runio.inputs import load_profile


@pytest.mark.parametrize("shape", [1.0, 4.0, 0.5])
def test_a_service_is_its_fixed_part_plus_a_gamma_of_the_rest(shape):
    np.random.seed(4)
    mean, fixed, n = 12.0, 2.8, 40_000
    x = np.array([svc.draw_service(mean, shape, fixed) for _ in range(n)])
    assert x.min() >= fixed
    assert x.mean() == pytest.approx(mean, rel=5 * np.sqrt(1 / shape) * (mean - fixed) / mean / np.sqrt(n) + 1e-9)
    # the squared CV of the whole service is cv2 ((S - fixed) / S)^2
    scv = x.var() / x.mean() ** 2
    assert scv == pytest.approx(float(svc.service_scv(mean, fixed, 1.0 / shape)), rel=0.05)
    # a mean at or below the fixed part is that mean, with no random part
    assert svc.draw_service(2.0, shape, fixed) == 2.0


def test_the_residual_term_is_the_second_moment_over_twice_the_mean():
    S, d = 10.0, 3.0
    for cv2 in (0.25, 1.0, 2.0):
        second = d * d + 2 * d * (S - d) + (S - d) ** 2 * (1 + cv2)      # E[S^2]
        scv = svc.service_scv(S, d, cv2)
        assert float(svc.residual_us(S, scv)) == pytest.approx(second / (2 * S))
        # no fixed part: the residual of a gamma service
        scv0 = svc.service_scv(S, 0.0, cv2)
        assert float(svc.residual_us(S, scv0)) == pytest.approx((1.0 + cv2) * S / 2)


def test_a_lightly_loaded_simulated_worker_never_reports_a_negative_process_time():
    # 256 workers and 8 clients for 10 simulated ms: one or two completions
    # each. With the whole service one gamma draw, the least of them averaged
    # below the receive floor: -2.6, -1.0, -2.2 us at seeds 1-3 (the
    # simulator soak found -1.2 to -2.7 us in random racks).
    sc = Scenario.default().updated({"servers.count": 256, "clients.threads": 8,
                                     "switch.partition": "hash"})
    spec = compile_rack(sc, load_profile("tofino-testbed"))
    for seed in (1, 2, 3):
        p = FastSimulator(0.01, seed).solve(spec)
        assert min(s.process_us for s in p.servers) >= 0.0


def test_cpu_stretch_slows_the_process_part_only():
    # as the analytic mean has it: (cost x stretch) + receive floor and gap
    assert svc.stretched(10.0, 2.5, 3.0) == pytest.approx(2.5 + 7.5 * 3.0)
    assert svc.stretched(10.0, 0.0, 2.0) == pytest.approx(20.0)
    assert svc.stretched(2.0, 2.5, 3.0) == 2.0           # no process part: nothing to stretch
