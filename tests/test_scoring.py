import math

import pytest

from judge.judging import scoring


def test_stats_median_spread_and_robust_standard_error():
    stats = scoring.Stats.of([1.0, 1.0, 1.0, 1.0, 100.0])
    assert stats.median == 1.0 and stats.n == 5 and stats.min == 1.0
    assert stats.rse == 0.0  # one outlier does not move the median's error estimate
    noisy = scoring.Stats.of([0.9, 1.1, 0.9, 1.1])
    assert noisy.rse == pytest.approx(1.4826 * 1.2533 * 0.1 / 2 / 1.0)


def test_stop_rule_needs_min_reps_and_small_error():
    assert not scoring.converged([1.0, 1.0], target_rse=0.01, min_reps=3)
    assert scoring.converged([1.0] * 3, target_rse=0.01, min_reps=3)
    assert not scoring.converged([1.0, 2.0, 1.0, 2.0, 1.5], target_rse=0.01, min_reps=3)


def test_aggregates():
    base, sub = [1.0, 9.0], [2.0, 3.0]
    assert scoring.aggregate("total_time", base, sub) == pytest.approx(10 / 5)
    assert scoring.aggregate("geomean", base, sub) == pytest.approx(math.sqrt(0.5 * 3))
    assert scoring.aggregate("total_time", [], []) == 0.0


def test_score_expression():
    assert scoring.score("100 * speedup", 1.5) == 150
    assert scoring.score("100 * min(speedup, 2)", 3.0) == 200
    assert scoring.score("100 * log2(1 + speedup)", 1.0) == 100
