"""The deployment files name real commands: every kjudge invocation in them parses."""

import shlex
from pathlib import Path

import yaml

from judge.cli import build_parser

DEPLOY = Path(__file__).parents[1] / "deploy"


def parse(argv: list[str]):
    assert argv[0].endswith("kjudge"), argv
    return build_parser().parse_args(argv[1:])


def test_compose_services_and_commands():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "api", "worker-cpu", "worker-gpu"} <= set(services)
    assert parse(services["api"]["command"]).no_worker
    gpu = services["worker-gpu"]
    assert parse(gpu["command"]).device == "cuda:0"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    env = compose["x-judge-env"]
    assert env["KJUDGE_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert env["KJUDGE_BROKER_URL"].startswith("redis://")


def test_systemd_worker_unit():
    unit = (DEPLOY / "kjudge-worker@.service").read_text()
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(exec_start.removeprefix("ExecStart=").replace("%i", "0")
                       .replace("${KJUDGE_WORKER_QUEUE}", "judge.cuda.h100"))
    args = parse(argv)
    assert args.device == "cuda:0" and args.queue == "judge.cuda.h100"


def test_dockerfile_default_command():
    text = (DEPLOY / "Dockerfile").read_text()
    cmd = next(line for line in text.splitlines() if line.startswith("CMD "))
    assert parse(yaml.safe_load(cmd.removeprefix("CMD "))).command == "serve"
