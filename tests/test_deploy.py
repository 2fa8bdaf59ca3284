"""The deployment files name real commands: every kjudge invocation in them parses."""

import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from judge.cli import build_parser

ROOT = Path(__file__).parents[1]
DEPLOY = ROOT / "deploy"


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


def test_the_device_self_test_runs_on_the_cpu(tmp_path):
    """deploy/gpu-selftest.sh's table, here on the CPU for one problem: validation + repeats."""
    report = tmp_path / "selftest.md"
    done = subprocess.run([sys.executable, "bench/gpu_selftest.py", "--device", "cpu", "--problems",
                           "rmsnorm", "--repeats", "2", "--markdown", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = report.read_text()
    assert "| rmsnorm | triton | triton_template.py | 3 | AC |" in text
    assert "ok   expected WA  got WA " in done.stdout  # the self-tests ran first


def test_the_gpu_selftest_script_parses_and_runs_the_table_and_the_gpu_tests():
    script = ROOT / "deploy/gpu-selftest.sh"
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    text = script.read_text()
    assert "bench/gpu_selftest.py" in text and "-m gpu tests/gpu" in text
