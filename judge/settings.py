"""Every setting of kernel-judge in one object, read from `KJUDGE_*` environment variables with
embedded defaults that need no server (like DMOJ's judgeenv). `Settings()` reads the environment
as it is now; tests and callers pass fields to override it. The table in deploy/README.md is this
module's, printed by `kjudge settings --markdown` (a test keeps the two the same).

Variables the judge sets inside a sandbox for the harness (KJUDGE_DEVICE, KJUDGE_TILELANG_TARGET)
are part of the harness's contract, not settings: judge/judging/warm.py, judge/languages.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

GROUPS = {
    "service": "Service (API, database, broker)",
    "worker": "Workers and sandboxes",
    "judging": "Judging",
    "toolchain": "Toolchains and devices",
    "client": "The `kjudge` client",
}


def _read(kind: str, text: str):
    if kind == "bool":
        return text.strip().lower() in ("1", "true", "yes", "on")
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "Path":
        return Path(text).expanduser()
    return text


def setting(env: str, default, doc: str, group: str):
    """A field read from `env` when the object is made, else `default`."""
    kind = type(default).__name__ if not isinstance(default, Path) else "Path"

    def from_env():
        text = os.environ.get(env)
        return default if text is None or text == "" else _read(kind, text)

    return field(default_factory=from_env,
                 metadata={"env": env, "doc": doc, "group": group, "default": default})


@dataclass(frozen=True)
class Settings:
    # -- service ---------------------------------------------------------------------------
    data_dir: Path = setting("KJUDGE_DATA_DIR", Path("var"), "where the embedded SQLite "
                             "database and broker, and the first admin's password and token, "
                             "live", "service")
    database_url: str = setting("KJUDGE_DATABASE_URL", "", "SQLAlchemy URL (empty: SQLite in "
                                "the data dir; production `postgresql+psycopg://…`)", "service")
    broker_url: str = setting("KJUDGE_BROKER_URL", "", "Celery broker (empty: SQLite in the data "
                              "dir; production `redis://…`)", "service")
    problems_dir: Path = setting("KJUDGE_PROBLEMS", Path("problems"), "the problem folders",
                                 "service")
    default_device: str = setting("KJUDGE_DEFAULT_DEVICE", "auto", "queue device of submissions "
                                  "outside a contest: `cpu`, `cuda.h100-sxm`, … (`auto`: this "
                                  "host's GPU if one is visible, else cpu)", "service")
    queue_prefix: str = setting("KJUDGE_QUEUE_PREFIX", "judge", "prefix of the queue names",
                                "service")
    max_source_kb: int = setting("KJUDGE_MAX_SOURCE_KB", 256, "the server's cap on a source "
                                 "(a problem's `limits.source_kb` may be lower)", "service")
    submissions_per_minute: int = setting("KJUDGE_SUBMISSIONS_PER_MINUTE", 10,
                                          "per contestant (admins are not limited)", "service")
    questions_per_hour: int = setting("KJUDGE_QUESTIONS_PER_HOUR", 20, "clarification "
                                      "requests per contestant", "service")
    stale_after_s: int = setting("KJUDGE_STALE_AFTER_S", 30, "a judging whose worker has not "
                                 "beaten for this long is requeued", "service")
    max_attempts: int = setting("KJUDGE_MAX_ATTEMPTS", 3, "workers lost by one judging before "
                                "it ends as SE", "service")
    metrics_token: str = setting("KJUDGE_METRICS_TOKEN", "", "the bearer token `GET /metrics` "
                                 "asks for (empty: open to whoever reaches the API)", "service")
    session_hours: int = setting("KJUDGE_SESSION_HOURS", 12, "a browser's sign-in lasts this "
                                 "long", "service")
    login_attempts: int = setting("KJUDGE_LOGIN_ATTEMPTS", 5, "failed sign-ins for one name "
                                  "from one address in the window before that address is "
                                  "refused it for a while (4 times as many for any names)",
                                  "service")
    login_window_s: int = setting("KJUDGE_LOGIN_WINDOW_S", 900, "the window failed sign-ins "
                                  "are counted in", "service")
    forwarded_allow_ips: str = setting("KJUDGE_FORWARDED_ALLOW_IPS", "127.0.0.1,::1", "proxies "
                                       "whose X-Forwarded-For names the client (the address "
                                       "the sign-in limit counts), comma-separated", "service")
    secure_cookies: bool = setting("KJUDGE_SECURE_COOKIES", False, "mark the session cookie "
                                   "Secure (set it when the site is served over HTTPS)",
                                   "service")
    soft_time_limit_s: int = setting("KJUDGE_SOFT_TIME_LIMIT_S", 1800, "a judging's time limit "
                                     "on a worker (the hard limit is 60 s more)", "service")
    # -- workers and sandboxes ----------------------------------------------------------------
    worker_device: str = setting("KJUDGE_WORKER_DEVICE", "", "the device a worker judges on "
                                 "(`kjudge worker --device` sets it; empty: the GPU if visible)",
                                 "worker")
    sandbox: str = setting("KJUDGE_SANDBOX", "auto", "sandbox backend: `auto` (docker when an "
                           "image is set, else bwrap), `docker`, `bwrap`, `process`", "worker")
    sandbox_owner: str = setting("KJUDGE_SANDBOX_OWNER", "", "the name a worker's containers "
                                 "carry, so that it removes its own leftovers", "worker")
    sandbox_paths: str = setting("KJUDGE_SANDBOX_PATHS", "", "toolchain folders outside /usr a "
                                 "bwrap run may see, `:`-separated (e.g. /opt/maca)", "worker")
    ncu: str = setting("KJUDGE_NCU", "ncu", "Nsight Compute's command line, for profile "
                       "submissions (it must be visible inside the sandbox: under CUDA_HOME, "
                       "/usr or KJUDGE_SANDBOX_PATHS)", "worker")
    profile_report_mb: int = setting("KJUDGE_PROFILE_REPORT_MB", 32, "the largest Nsight "
                                     "Compute report kept for a profile submission", "worker")
    profile_timeout_s: int = setting("KJUDGE_PROFILE_TIMEOUT_S", 300, "Nsight Compute's time "
                                     "for the profiled call and its report (it replays each "
                                     "kernel many times)", "worker")
    docker_image: str = setting("KJUDGE_DOCKER_IMAGE", "", "the contest image, pinned by digest "
                                "(`name@sha256:…` or `sha256:…`)", "worker")
    docker_python: str = setting("KJUDGE_DOCKER_PYTHON", "python3", "the interpreter inside "
                                 "the image", "worker")
    docker_host_python: bool = setting("KJUDGE_DOCKER_HOST_PYTHON", False, "bind the host's "
                                       "/usr and Python environment read-only (test images)",
                                       "worker")
    docker_cpus: float = setting("KJUDGE_DOCKER_CPUS", 1.0, "CPUs per container", "worker")
    # -- judging -------------------------------------------------------------------------------
    cache_dir: Path = setting("KJUDGE_CACHE_DIR", Path("~/.cache/kjudge"), "compile and JIT "
                              "caches", "judging")
    work_dir: str = setting("KJUDGE_WORK_DIR", "", "where judgings keep their files (empty: "
                            "/dev/shm when it has room, else the temporary directory)", "judging")
    cpu_threads: int = setting("KJUDGE_CPU_THREADS", 1, "threads (and CPUs) per contender on the "
                               "CPU device", "judging")
    contender_cpus: str = setting("KJUDGE_CONTENDER_CPUS", "", "the CPUs contenders keep to, a "
                                  "cpuset list (empty: the last `cpu_threads` of the judge's)",
                                  "judging")
    max_point_s: float = setting("KJUDGE_MAX_POINT_S", 0.0, "the most seconds the timing of one "
                                 "test point may take, whatever its problem's `timing.max_s` "
                                 "(0: the problem's): a bound on a busy deployment's latency, "
                                 "paid in precision", "judging")
    # -- toolchains and devices ------------------------------------------------------------------
    cxx: str = setting("KJUDGE_CXX", "g++", "the cpp compiler", "toolchain")
    cxxflags: str = setting("KJUDGE_CXXFLAGS", "-O3 -march=native -std=c++17", "its flags",
                            "toolchain")
    nvcc: str = setting("KJUDGE_NVCC", "", "nvcc (empty: on the PATH, in $CUDA_HOME/bin or "
                        "/usr/local/cuda/bin)", "toolchain")
    nvcc_flags: str = setting("KJUDGE_NVCC_FLAGS", "-O3 -std=c++17", "its flags (the arch is "
                              "added)", "toolchain")
    cuda_arch: str = setting("KJUDGE_CUDA_ARCH", "", "NVIDIA arch to build for (empty: the "
                             "device's; sm_90a when compiling without one)", "toolchain")
    mxcc: str = setting("KJUDGE_MXCC", "mxcc", "the MACA compiler", "toolchain")
    mxcc_flags: str = setting("KJUDGE_MXCC_FLAGS", "-O3 -std=c++17", "its flags", "toolchain")
    maca_path: str = setting("KJUDGE_MACA_PATH", "/opt/maca", "the MACA toolkit (its bin/ on "
                             "the PATH of MACA runs)", "toolchain")
    maca_arch: str = setting("KJUDGE_MACA_ARCH", "", "MetaX offload arch (empty: the device's; "
                             "xcore1000, the C500 family, without one)", "toolchain")
    maca_devices: str = setting("KJUDGE_MACA_DEVICES", "/dev/mxcd:/dev/dri", "device nodes a "
                                "MACA run gets, `:`-separated", "toolchain")
    maca: bool = setting("KJUDGE_MACA", False, "treat the visible GPU as a MetaX card even "
                         "where torch does not say so", "toolchain")
    nvml_lib: str = setting("KJUDGE_NVML_LIB", "", "NVML's library (empty: found by name)",
                            "toolchain")
    # -- the client ------------------------------------------------------------------------------
    server: str = setting("KJUDGE_SERVER", "", "the API the client talks to (empty: the client "
                          "config's, else http://127.0.0.1:8000)", "client")
    token: str = setting("KJUDGE_TOKEN", "", "the client's API token (empty: the client "
                         "config's)", "client")
    client_config: Path = setting("KJUDGE_CLIENT_CONFIG", Path("~/.config/kjudge/client.json"),
                                  "the client's saved server and token", "client")

    def __post_init__(self) -> None:
        data = self.data_dir.resolve()
        if not self.database_url:
            object.__setattr__(self, "database_url", f"sqlite:///{data}/kjudge.db")
        if not self.broker_url:
            object.__setattr__(self, "broker_url", f"sqla+sqlite:///{data}/broker.db")
        for name in ("cache_dir", "client_config"):
            object.__setattr__(self, name, Path(getattr(self, name)).expanduser())

    @property
    def hard_time_limit_s(self) -> int:
        return self.soft_time_limit_s + 60

    def queue_for(self, device_kind: str, model: str = "", rejudge: bool = False) -> str:
        """judge.cpu, judge.cuda.h100-sxm, …; rejudges go to the `.rejudge` twin of the queue."""
        name = f"{self.queue_prefix}.{device_kind}" + (f".{model}" if model else "")
        return name + (".rejudge" if rejudge else "")


def settings() -> Settings:
    return Settings()


def markdown_table() -> str:
    """The settings as the table in deploy/README.md."""
    lines = []
    for group, title in GROUPS.items():
        lines += [f"**{title}**", "", "| variable | default | what it sets |", "| --- | --- | --- |"]
        for f in dataclasses.fields(Settings):
            if f.metadata["group"] == group:
                default = f.metadata["default"]
                shown = f"`{default}`" if default not in ("", None) else "–"
                lines.append(f"| `{f.metadata['env']}` | {shown} | {f.metadata['doc']} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
