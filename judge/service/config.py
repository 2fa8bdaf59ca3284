"""Service settings from the environment, with embedded defaults that need no server.

KJUDGE_DATA_DIR       where the SQLite database and broker live (default ./var)
KJUDGE_DATABASE_URL   SQLAlchemy URL (default sqlite:///$DATA_DIR/kjudge.db; production postgresql+psycopg://…)
KJUDGE_BROKER_URL     Celery broker (default sqla+sqlite:///$DATA_DIR/broker.db; production redis://…)
KJUDGE_PROBLEMS       problem folders (default ./problems)
KJUDGE_DEFAULT_DEVICE queue device of submissions outside a contest: cpu, cuda.h100-sxm, …
                      (default auto: this host's GPU if one is visible, else cpu; detected by a
                      child process, so that no parent that forks workers has initialised CUDA)
KJUDGE_QUEUE_PREFIX   prefix of the queue names (default judge); tests use their own
KJUDGE_MAX_SOURCE_KB, KJUDGE_SUBMISSIONS_PER_MINUTE, KJUDGE_STALE_AFTER_S, KJUDGE_MAX_ATTEMPTS
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path(os.environ.get("KJUDGE_DATA_DIR", "var")))
    database_url: str = ""
    broker_url: str = ""
    problems_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("KJUDGE_PROBLEMS", "problems")))
    queue_prefix: str = field(default_factory=lambda: os.environ.get("KJUDGE_QUEUE_PREFIX", "judge"))
    default_device: str = field(
        default_factory=lambda: os.environ.get("KJUDGE_DEFAULT_DEVICE", "auto"))  # cuda.h100-sxm …
    max_source_kb: int = field(default_factory=lambda: _int("KJUDGE_MAX_SOURCE_KB", 256))
    submissions_per_minute: int = field(
        default_factory=lambda: _int("KJUDGE_SUBMISSIONS_PER_MINUTE", 10))
    stale_after_s: int = field(default_factory=lambda: _int("KJUDGE_STALE_AFTER_S", 30))
    max_attempts: int = field(default_factory=lambda: _int("KJUDGE_MAX_ATTEMPTS", 3))
    soft_time_limit_s: int = field(default_factory=lambda: _int("KJUDGE_SOFT_TIME_LIMIT_S", 1800))

    def __post_init__(self) -> None:
        data = self.data_dir.resolve()
        if not self.database_url:
            object.__setattr__(self, "database_url", os.environ.get(
                "KJUDGE_DATABASE_URL", f"sqlite:///{data}/kjudge.db"))
        if not self.broker_url:
            object.__setattr__(self, "broker_url", os.environ.get(
                "KJUDGE_BROKER_URL", f"sqla+sqlite:///{data}/broker.db"))
        if self.default_device == "auto":
            from judge.host.device import detect, queue_device

            object.__setattr__(self, "default_device", queue_device(detect()))

    @property
    def hard_time_limit_s(self) -> int:
        return self.soft_time_limit_s + 60

    def queue_for(self, device_kind: str, model: str = "", rejudge: bool = False) -> str:
        """judge.cpu, judge.cuda.h100-sxm, …; rejudges go to the `.rejudge` twin of the queue."""
        name = f"{self.queue_prefix}.{device_kind}" + (f".{model}" if model else "")
        return name + (".rejudge" if rejudge else "")


def settings() -> Settings:
    return Settings()
