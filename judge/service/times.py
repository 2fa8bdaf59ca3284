"""Stored moments: SQLite hands datetimes back without their zone (they are UTC)."""

from __future__ import annotations

from datetime import datetime, timezone


def seconds_between(earlier: datetime | None, later: datetime | None) -> float | None:
    """Seconds from one stored moment to another (None when either is missing)."""
    if earlier is None or later is None:
        return None
    return max((aware(later) - aware(earlier)).total_seconds(), 0.0)


def aware(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: they are UTC."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment
