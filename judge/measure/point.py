"""The measurement engine's entry: a point's plan in (rounds.Plan), its measurement out — the
rounds run, each contender's floors, what the submission is charged, the statistics the record
shows. Trusted side; the judging's stages record it (judge/judging/stages/timed.py)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from judge.measure import charging, scoring
from judge.measure.charging import Charge, Floor, Samples
from judge.measure.rounds import Plan, interleave


@dataclass(frozen=True)
class Measurement:
    """What timing one point measured, and what it makes of it."""

    samples: dict[str, Samples]  # each contender's turns (the baseline's floor turns too)
    floors: dict[str, Floor]  # each contender's own (its loader's), measured in the baseline's
    charge: Charge  # what the submission's calls are charged
    stats: dict[str, scoring.Stats]  # each contender's time per call
    target_rse: float  # what the point's paired ratio had to reach (Plan.target)
    time_cap_s: float  # the point's own time cap (Plan.time_cap)
    speedup_rse: float | None  # what the paired ratio reached
    baseline_resolvable_from_ms: float  # the shortest baseline call the judge would resolve

    @classmethod
    def of(cls, plan: Plan, samples: dict[str, Samples]) -> Measurement:
        base = samples["baseline"]
        resolution = charging.resolution(plan.timing.target_rse)
        floors = {role: Floor.of(base, plan.loaders.get(role), resolution,
                                 mapped_whole=not got.unmapped)
                  for role, got in samples.items()}
        ratios = charging.paired_ratios(samples["submission"], base)
        return cls(samples, floors,
                   charging.charge(samples["submission"], base, floors["submission"],
                                   floors["baseline"]),
                   {role: got.stats(floors[role]) for role, got in samples.items()},
                   plan.target(samples), plan.time_cap(samples),
                   scoring.relative_se(ratios) if ratios else None,
                   floors["baseline"].resolvable_from_ms(statistics.median(base.calls)))


def measure_point(plan: Plan) -> Measurement:
    """Time one test point: the interleaved rounds on fresh inputs, then what they measured."""
    return Measurement.of(plan, interleave(plan))
