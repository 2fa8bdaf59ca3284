"""The device self-test rehearsed in a container laid out like a bare GPU machine.

An organizer's GPU machine may be a rented instance with a PyTorch image and no network, on which
`bash deploy/gpu-selftest.sh` gets one short try. This runs the same script here first, as such a
machine will run it: python3 is a venv (/opt/torch/.venv) holding only the image's packages
(torch, Triton, numpy and their own), the judge's others come from the carried bundle
(deploy/fetch-gpu-wheels.sh, made here for this Python), no bubblewrap on the system (the carried
one finds no namespaces: the container has no privileges), cgroups read-only, no network, the
working tree as a copy of the checkout (tracked and untracked-not-ignored files, and the carried
.whl). It must go as far as the missing GPU (exit 3, with the device row), and with DEVICE=cpu
run every stage a CPU can."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from bench import gpu_selftest as selftest
from tests.conftest import docker_test_image

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "rehearsal"  # beside .venv: the image's packages are hard links
BUNDLE = WORK / ".whl" / "site-packages.tar.xz"
# the rehearsal's CPU is slower at the judgings than a GPU machine (1.5), and it runs beside the
# other tests, three processes on two CPUs, its judgings wanting two of their own (2): every
# stage's budget and the allowance are scaled alike (their fit is the same at any scale).
# Alone on an idle 2-core host its stages took at most 0.56 of their budgets at 1.5; beside two
# busy processes up to 0.9 (selftests 81 s of 90).
CPU_SCALE = 3.0

# /work/.library/device/KINDS.md, "Python packages already there" (nvidia-h200, 2026-11-17)
_LENT_IMAGE_LIST = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch
build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage
cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops
equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio
h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig
interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13
nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker
prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers
setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch
torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton
typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray
xxhash yarl zipp"""
LENT_IMAGE_PACKAGES = frozenset(_LENT_IMAGE_LIST.split())  # noqa: SIM905 (read as KINDS.md lists it)


def _name(dist: metadata.Distribution) -> str:
    return dist.metadata["Name"].lower().replace("_", "-")


def _image_venv(folder: Path) -> Path:
    """/opt/torch/.venv as such an image has it: a venv of the system Python holding the
    image's packages (hard links of this environment's copies: torch is 750 MB)."""
    base = sys._base_executable
    subprocess.run([base, "-m", "venv", "--without-pip", folder], check=True)
    site = Path(subprocess.run([folder / "bin" / "python3", "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], check=True,
                               capture_output=True, text=True).stdout.strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    for dist in metadata.distributions(path=[str(ours)]):
        if _name(dist) not in LENT_IMAGE_PACKAGES:
            continue
        tops = {Path(f).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops:
            if (ours / top).exists() and not (site / top).exists():
                subprocess.run(["cp", "-al", ours / top, site / top], check=True)
    return folder


def _work_tree(folder: Path) -> Path:
    """A copy of the checkout as it goes to a GPU machine: tracked and untracked-not-ignored
    files, and the carried .whl (a bundle for this Python, and this machine's bubblewrap)."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = folder / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    shutil.copytree(BUNDLE.parent, folder / ".whl")
    return folder


@pytest.fixture(scope="module")
def bundle() -> Path:
    """deploy/fetch-gpu-wheels.sh run for this Python (kept in build/ between runs)."""
    if not BUNDLE.is_file():
        env = {**os.environ, "PYVER": f"{sys.version_info.major}.{sys.version_info.minor}",
               "BUNDLE": str(BUNDLE), "XZ_LEVEL": "1", "PYTHON": sys.executable}
        done = subprocess.run(["bash", "deploy/fetch-gpu-wheels.sh"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-3000:]
    return BUNDLE


@pytest.mark.slow
@pytest.mark.long  # ~5 minutes beside the other tests: started first
def test_the_device_self_test_runs_as_a_bare_gpu_machine_will_run_it(bundle, tmp_path):
    image = docker_test_image()
    if image is None:
        if os.environ.get("CI"):
            pytest.fail("no docker test image: run tests/docker_image.sh with dockerd running")
        pytest.skip("no docker engine or test image here")
    run = WORK / f"run-{os.getpid()}"
    shutil.rmtree(run, ignore_errors=True)
    try:
        venv = _image_venv(run / "torch-venv")
        repo = _work_tree(run / "repo")
        out = tmp_path / "out"
        out.mkdir()
        python_home = Path(sys._base_executable).resolve().parents[1]
        script = (
            "set -u; cd /work/repo; "
            "OUT=/out/gpu bash deploy/gpu-selftest.sh; echo \"exit $?\" > /out/gpu.rc; "
            f"DEVICE=cpu OUT=/out/cpu bash deploy/gpu-selftest.sh --stage-scale {CPU_SCALE}; "
            "echo \"exit $?\" > /out/cpu.rc")
        done = subprocess.run([
            "docker", "run", "--rm", "--network", "none",
            "-v", "/usr:/usr:ro", "-v", "/dev/null:/usr/bin/bwrap:ro",  # no bubblewrap there
            "-v", f"{python_home}:{python_home}:ro",
            "-v", f"{ROOT / '.venv'}:{ROOT / '.venv'}:ro",  # the hard links' own folder
            "-v", f"{venv}:/opt/torch/.venv:ro", "-v", f"{repo}:/work/repo",
            "-v", f"{out}:/out", "-e", "PATH=/opt/torch/.venv/bin:/usr/local/bin:/usr/bin:/bin",
            "-e", "HOME=/root",  # the tests' cap on a point's timing (conftest): a rehearsal
            "-e", f"KJUDGE_MAX_POINT_S={os.environ.get('KJUDGE_MAX_POINT_S', '')}",
            image, "bash", "-c", script],
            capture_output=True, text=True, timeout=300 + CPU_SCALE * selftest.ALLOWANCE_S)
        log = done.stdout[-4000:] + done.stderr[-2000:]
        assert (out / "gpu.rc").read_text().strip() == "exit 3", log  # as far as the GPU
        table = (out / "gpu" / "selftest.md").read_text()
        assert "| device | cuda | **FAIL** not here: no CUDA device is visible" in table, table
        cpu = (out / "cpu" / "selftest.md").read_text()
        assert (out / "cpu.rc").read_text().strip() == "exit 0", cpu + log
        for row in ("| device | sandbox | ok trusted |", "| languages | vector_add cpp",
                    "| languages | vector_add triton", "| languages | vector_add tilelang",
                    "| spread | vector_add loop.cpp x5 | ok", "| floor | vector_add baseline",
                    "| selftests | vector_add | ok",
                    "| gputests | pytest -m gpu tests/gpu (collected: needs a GPU to run) | ok",
                    "| total | - | ok"):
            assert row in cpu, f"{row!r} missing:\n{cpu}"
        for stage in selftest.STAGES:  # every stage ended within its budget, or needs a GPU
            ended = f"| {stage.name} | {selftest.DONE} | ok" in cpu or (
                stage.gpu_only and f"| {stage.name} | - | skip not run: needs a GPU" in cpu)
            assert ended, f"no row ends stage {stage.name}:\n{cpu}"
        assert "limits {memory: False" in cpu  # read-only cgroups, said in the table
        assert (out / "cpu" / "selftest.log").stat().st_size > 0
    finally:
        shutil.rmtree(run, ignore_errors=True)


def test_the_self_tests_stages_fit_its_allowance_and_the_script_reads_it():
    """A first run on a GPU machine must not be cut by its own script: the stages' budgets and
    the set-up reserve fit the allowance, which the script reads from the self-test (no second
    copy of the figure to drift)."""
    assert selftest.budget_excess_s() <= 0, selftest.budget_excess_s()
    assert selftest.budget_excess_s(allowance_s=selftest.ALLOWANCE_S - 100) > 0
    script = (ROOT / "deploy" / "gpu-selftest.sh").read_text()
    assert "--print-allowance" in script and str(selftest.ALLOWANCE_S) not in script
    names = [stage.name for stage in selftest.STAGES]
    assert names[:4] == ["device", "clock", "floor", "languages"] and names[-1] == "profile"


def _rows(out: Path) -> list[dict]:
    return selftest.earlier_rows(out / "figures.jsonl")


def test_a_resumed_self_test_runs_only_what_the_earlier_one_did_not_finish(tmp_path):
    """The second command of a loan: stages the first finished are not run again (said in the
    table), the device tests it passed are deselected, the others run."""
    earlier = tmp_path / "earlier.jsonl"
    rows = [("device", selftest.DONE, "OK"), ("floor", selftest.DONE, "FAIL"),
            ("gputests", "tests/gpu/test_gpu.py::test_nvml_state_is_recorded", "OK"),
            ("gputests", "tests/gpu/test_gpu.py::test_tilelang_compiles_for_the_device_arch",
             "FAIL")]
    earlier.write_text("".join(json.dumps({"stage": a, "what": b, "status": c, "ok": c == "OK"})
                               + "\n" for a, b, c in rows))
    got = selftest.earlier_rows(earlier)
    assert selftest.stages_done(got) == {"device"}
    assert selftest.tests_passed(got) == ["tests/gpu/test_gpu.py::test_nvml_state_is_recorded"]
    out = tmp_path / "out"
    code = selftest.main(["--device", "cpu", "--stages", "device", "--out", str(out),
                          "--resume", str(earlier)])
    assert code == 0
    assert [(r["stage"], r["what"], r["result"]) for r in _rows(out)][0] == (
        "device", selftest.DONE, "in the earlier run")


def test_a_self_test_short_of_time_names_what_it_left_and_how_to_resume(tmp_path):
    """Stages there is no time left for are not started; the run still exits 0 when what ran
    passed, and its last row names what it left and the command that resumes it."""
    out = tmp_path / "out"
    code = selftest.main(["--device", "cpu", "--stages", "languages", "profile", "--out",
                          str(out), "--setup-s", str(selftest.ALLOWANCE_S - 10)])
    rows = _rows(out)
    assert code == 0, rows
    assert [(r["stage"], r["status"]) for r in rows[:2]] == [("languages", "SKIP"),
                                                            ("profile", "SKIP")]
    total = rows[-1]
    assert total["stage"] == "total" and total["status"] == "OK"
    assert "languages, profile" in total["result"] and "--resume" in total["result"]


def test_a_stage_cut_at_its_budget_fails_the_run_and_is_named_for_the_resume(tmp_path):
    """A stage that outruns its budget is killed, the run exits 1, and the last row names it
    with the command that resumes (a resumed run runs it again: it has no `done` row)."""
    out = tmp_path / "out"
    code = selftest.main(["--device", "cpu", "--stages", "device", "--stage-scale", "0.05",
                          "--out", str(out)])  # 1 s for the device stage: it is cut
    rows = _rows(out)
    assert code == 1, rows
    assert any(r["stage"] == "device" and "cut at its budget" in r["result"] for r in rows)
    assert "cut at their budgets: device" in rows[-1]["result"]
    assert "--resume" in rows[-1]["result"] and "device" not in selftest.stages_done(rows)
