"""The judge's clock against the harness's reports (judge/timing.py), on synthetic samples."""

import random

import pytest

from judge.timing import ALLOWANCE_MS, Samples, charge


def samples(reported: float, overhead: float, prepare: float, seed: int, n: int = 60,
            drift: list[float] | None = None) -> Samples:
    """n rounds: a report, the judge's view of `time` (report + overhead) and of `prepare`,
    each with noise; `drift`, the host's slowdown of each round, adds to both requests."""
    rng = random.Random(seed)
    got = Samples()
    for i in range(n):
        slow = drift[i] if drift else 0.0
        ms = reported * rng.uniform(0.97, 1.03)
        got.reported.append(ms)
        got.time_rt.append(ms + overhead + slow + rng.uniform(-0.01, 0.01))
        got.prepare_rt.append(prepare + slow + rng.uniform(-0.02, 0.02))
    return got


def test_an_honest_submission_is_charged_what_it_reports():
    result = charge(samples(0.5, 0.12, 0.4, 1), samples(0.4, 0.12, 0.4, 2))
    assert not (result.charged_time or result.charged_prepare)
    assert result.ms == pytest.approx(0.5, rel=0.02)


@pytest.mark.parametrize("stolen", [0.2, 1.0])
def test_a_lowered_report_is_charged_in_full(stolen):
    """The harness reports `stolen` ms less than the call took: the judge saw it."""
    result = charge(samples(1.0 - stolen, 0.12 + stolen, 0.4, 1), samples(0.4, 0.12, 0.4, 2))
    assert result.charged_time and result.ms == pytest.approx(1.0, rel=0.03)


def test_work_moved_into_prepare_is_charged():
    result = charge(samples(0.05, 0.12, 0.4 + 0.5, 1), samples(0.4, 0.12, 0.4, 2))
    assert result.charged_prepare and result.ms == pytest.approx(0.55, rel=0.05)


def test_a_drift_of_the_host_during_the_run_cancels_out():
    """Rounds are paired: a host that slows down for a while slows both contenders' requests."""
    drift = [0.3 if 20 <= i < 40 else 0.0 for i in range(60)]
    result = charge(samples(0.5, 0.12, 0.4, 1, drift=drift),
                    samples(0.4, 0.12, 0.4, 2, drift=drift))
    assert not (result.charged_time or result.charged_prepare)


def test_differences_below_the_allowance_are_not_charged():
    """Two honest processes differ by a few tens of microseconds per request: not a forgery the
    judge's clock can tell (this is the precision limit SECURITY.md states)."""
    small = 0.6 * ALLOWANCE_MS
    result = charge(samples(0.5, 0.12 + small, 0.4 + small, 1), samples(0.4, 0.12, 0.4, 2))
    assert not (result.charged_time or result.charged_prepare) and result.ms < 0.52
