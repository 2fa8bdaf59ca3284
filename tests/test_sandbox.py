import ast
import os
import tempfile
from pathlib import Path

import pytest

from sandbox import Mount, SandboxLimits

ROOT = Path(__file__).resolve().parents[1]

HARNESS = Path(__file__).parents[1] / "judge" / "harness"


def run(sandbox, script: str, timeout=10, **limits):
    scratch = Path(tempfile.mkdtemp())
    scratch.chmod(0o777)
    mount = Mount(scratch, "/kj/scratch", writable=True)
    return sandbox.run(["sh", "-c", script], mounts=[mount], cwd=mount, env={},
                       limits=SandboxLimits(**limits), timeout_s=timeout)


def test_runs_and_times_out(sandbox):
    assert run(sandbox, "echo hello").output == "hello\n"
    result = run(sandbox, "sleep 30", timeout=0.5)
    assert result.timed_out and result.wall_s < 5


def test_environment_is_scrubbed(sandbox, monkeypatch):
    monkeypatch.setenv("KJUDGE_SECRET_TOKEN", "hunter2")
    assert "hunter2" not in run(sandbox, "env").output


def test_output_is_capped(sandbox):
    result = run(sandbox, "yes spam", output_bytes=1000)
    assert result.output_exceeded and len(result.output) <= 1000


def test_fork_bomb_is_contained(sandbox):
    result = run(sandbox, "for i in $(seq 200); do sleep 5 & done; wait", timeout=20, pids=32)
    assert "fork" in result.output.lower() or "resource" in result.output.lower()


def test_isolating_backends_hide_the_host_and_the_network(sandbox):
    if not sandbox.isolates_filesystem:
        pytest.skip("the process backend isolates nothing")
    result = run(sandbox, "id -u; ls /root/.pyenv 2>&1; ls /work 2>&1; ls /etc; "
                          "(echo x > /usr/x) 2>/dev/null || echo readonly; "
                          "echo ok > /kj/scratch/f && cat /kj/scratch/f")
    lines = result.output.splitlines()
    assert lines[0] == "65534", result.output
    assert "readonly" in result.output and result.output.rstrip().endswith("ok")
    assert "passwd" not in result.output.split("readonly")[0] or sandbox.name == "docker"
    assert "shadow" not in result.output and "postgresql" not in result.output
    net = run(sandbox, "python3 -c \"import socket; "
                       "socket.create_connection(('1.1.1.1', 53), timeout=2)\" 2>&1 | tail -1; "
                       "cat /sys/class/net/*/operstate 2>/dev/null | tr '\\n' ' '")
    assert "unreachable" in net.output.lower() or "error" in net.output.lower(), net.output


def test_harness_imports_only_stdlib_and_torch():
    import sys

    siblings = {file.stem for file in HARNESS.glob("*.py")}  # protocol.py, shared with the judge
    allowed = set(sys.stdlib_module_names) | {"torch", "triton", "tilelang"} | siblings
    for file in HARNESS.glob("*.py"):
        tree = ast.parse(file.read_text())
        # `except ImportError: from judge.harness import protocol` (run outside a sandbox)
        fallbacks = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                     for h in t.handlers if ast.unparse(h.type or ast.Name("")) == "ImportError"
                     for n in ast.walk(h) if isinstance(n, ast.ImportFrom)
                     and n.module == "judge.harness"}
        for node in ast.walk(tree):
            if id(node) in fallbacks:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{file.name} imports {name}"


def test_a_worker_removes_the_containers_its_predecessor_left(sandbox):
    if sandbox.name != "docker":
        pytest.skip("docker only")
    from sandbox.docker import LABEL, OWNER_LABEL, remove_leftovers

    owner = "worker-test-leftovers"
    sandbox.client.containers.run(sandbox.image_id, ["/usr/bin/sleep", "300"], detach=True,
                                  network_mode="none", labels={LABEL: "1", OWNER_LABEL: owner},
                                  volumes={"/usr": {"bind": "/usr", "mode": "ro"}})
    other = sandbox.client.containers.run(sandbox.image_id, ["/usr/bin/sleep", "300"],
                                          detach=True, network_mode="none",
                                          labels={LABEL: "1", OWNER_LABEL: "someone-else"},
                                          volumes={"/usr": {"bind": "/usr", "mode": "ro"}})
    try:
        assert remove_leftovers(owner) == 1
        assert not sandbox.client.containers.list(all=True, filters={
            "label": f"{OWNER_LABEL}={owner}"})
        assert other.id in {c.id for c in sandbox.client.containers.list()}
    finally:
        other.remove(force=True)


def test_docker_refuses_an_image_that_is_not_pinned():
    from sandbox.docker import ImageNotPinned, resolve_image

    with pytest.raises(ImageNotPinned, match="not pinned"):
        resolve_image(None, "kjudge-test:latest")


def test_docker_runs_find_what_the_image_keeps_on_its_own_path(tmp_path):
    """PyTorch images keep Python in /opt/conda/bin and say so in their PATH: a run keeps that
    PATH, after the folders the language asks for (nvcc's)."""
    import subprocess

    from tests.conftest import make_sandbox

    base = make_sandbox("docker")  # skips (fails in CI) without an engine and the test image
    root = tmp_path / "root"
    (root / "opt/conda/bin").mkdir(parents=True)
    for top in ("usr", "tmp", "kj", "proc", "dev", "sys", "etc"):
        (root / top).mkdir()
    for top in ("bin", "lib", "lib64", "sbin"):
        (root / top).symlink_to(f"usr/{top}")
    probe = root / "opt/conda/bin/kj-probe"
    probe.write_text("#!/bin/sh\necho \"found on the image's path: $PATH\"\n")
    probe.chmod(0o755)
    tar = subprocess.run(["tar", "-C", root, "--owner=0", "--group=0", "-c", "."],
                         capture_output=True, check=True).stdout
    image = subprocess.run(["docker", "import", "--change",
                            "ENV PATH=/opt/conda/bin:/usr/local/bin:/usr/bin:/bin", "-",
                            "kjudge-test-conda:latest"], input=tar, capture_output=True,
                           check=True).stdout.decode().strip()
    try:
        sandbox = type(base)(image=image, host_python=True)
        mount = Mount(tmp_path, "/kj/scratch")
        result = sandbox.run(["kj-probe"], mounts=[mount], cwd=mount,
                             env={"PATH": "/usr/local/cuda/bin:/usr/bin"},
                             limits=SandboxLimits(memory_mb=256), timeout_s=60)
        assert result.returncode == 0, result.output
        assert ("found on the image's path: /usr/local/cuda/bin:/usr/bin:/opt/conda/bin:"
                "/usr/local/bin:/bin") in result.output
    finally:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


def test_a_docker_run_joins_the_groups_that_own_its_device_nodes(tmp_path):
    """MetaX's render nodes (/dev/dri) are the video or render group's, mode 0660: the run's
    user (65534) must be in that group to open its card; never in root's."""
    import os
    import stat

    from tests.conftest import make_sandbox

    base = make_sandbox("docker")
    node, root_node = Path(f"/dev/kjudge-render-{os.getpid()}"), Path(f"/dev/kjudge-mx-{os.getpid()}")
    try:
        for path, gid in ((node, 44), (root_node, 0)):
            os.mknod(path, 0o660 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
            os.chown(path, 0, gid)
            os.chmod(path, 0o660)  # mknod's mode went through the umask
        sandbox = type(base)(image=base.image_id, host_python=True,
                             devices=[str(node), str(root_node)])
        mount = Mount(tmp_path, "/kj/scratch")
        result = sandbox.run(["sh", "-c", f"id -G; echo x > {node} && echo opened"],
                             mounts=[mount], cwd=mount, env={},
                             limits=SandboxLimits(memory_mb=256), timeout_s=60)
    finally:
        node.unlink(missing_ok=True)
        root_node.unlink(missing_ok=True)
    groups = result.output.split()
    assert "44" in groups and "0" not in groups and "opened" in groups, result.output


def test_a_run_sees_its_one_device_under_torchs_name_in_every_backend():
    """MetaX's torch build names its cards cuda:N; a container given one NVIDIA GPU by device
    request must not be told the host's index of it."""
    from judge.host.device import DeviceInfo
    from sandbox.bwrap import BwrapSandbox
    from sandbox.docker import DockerSandbox

    maca = DeviceInfo("maca", "cuda:1", "MetaX C500", 8 * 2**20, "xcore1000")
    h200 = DeviceInfo("cuda", "cuda:3", "NVIDIA H200", 60 * 2**20, "sm_90a", uuid="GPU-5c7b")
    docker = object.__new__(DockerSandbox)  # no engine needed to ask how it exposes devices
    docker.gpu_uuid = None
    assert docker.device_env(maca) == (
        {"CUDA_VISIBLE_DEVICES": "1", "MACA_VISIBLE_DEVICES": "1"}, "cuda:0")
    docker.gpu_uuid = h200.uuid
    assert docker.device_env(h200) == ({}, "cuda:0")
    assert BwrapSandbox().device_env(h200) == ({"CUDA_VISIBLE_DEVICES": "GPU-5c7b"}, "cuda:0")


def test_bwrap_shows_sys_to_accelerator_runs_only(tmp_path):
    """The CUDA driver reads /sys (PCI and NUMA topology); CPU runs have no need of it."""
    from sandbox.bwrap import BwrapSandbox

    if not BwrapSandbox.available():
        pytest.skip("bwrap not installed")
    mount = Mount(tmp_path, "/kj/scratch")
    argv = ["/bin/cat", "/sys/devices/system/cpu/online"]
    limits = SandboxLimits(memory_mb=256)
    gpu = BwrapSandbox(devices=["/dev/null"]).run(argv, mounts=[mount], cwd=mount, env={},
                                                  limits=limits, timeout_s=30)
    cpu = BwrapSandbox().run(argv, mounts=[mount], cwd=mount, env={}, limits=limits, timeout_s=30)
    assert gpu.returncode == 0 and cpu.returncode != 0, (gpu.output, cpu.output)


def test_a_bwrap_probe_that_fails_for_a_moment_is_tried_again_and_says_why(
        tmp_path, monkeypatch, caplog):
    """A worker chose its sandbox from one bwrap probe: one failure on a loaded host (a CI run:
    "no sandbox that isolates submissions is available") stopped it for good, and nothing said
    why. A bwrap that fails once, with its own words, then works (the real one, from then on):
    the probe tries again, finds it, and the log has the words."""
    import shutil

    from sandbox import bwrap

    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("bwrap not installed")
    flaky = tmp_path / "bin" / "bwrap"
    flaky.parent.mkdir()
    flaky.write_text(f"#!/bin/sh\nif [ ! -e {tmp_path}/failed ]; then touch {tmp_path}/failed\n"
                     "echo 'bwrap: Creating new namespace failed: Resource temporarily "
                     f"unavailable' >&2; exit 1; fi\nexec {real} \"$@\"\n")
    flaky.chmod(0o755)
    monkeypatch.setenv("PATH", f"{flaky.parent}:{os.environ['PATH']}")
    bwrap._bwrap_works.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="kjudge.sandbox"):
            assert bwrap.BwrapSandbox.available()
    finally:
        bwrap._bwrap_works.cache_clear()
    assert (tmp_path / "failed").exists()
    assert "Resource temporarily unavailable" in caplog.text and "try 1 of" in caplog.text


def test_the_cuda_toolkit_is_found_and_shown_to_sandboxes_without_the_path(tmp_path, monkeypatch):
    """CUDA images put nvcc in $CUDA_HOME/bin or /usr/local/cuda/bin without touching PATH."""
    from judge.host.device import DeviceInfo
    from judge.languages import get_language
    from judge.languages.cuda import cuda_home, find_nvcc
    from sandbox import get_sandbox

    toolkit = tmp_path / "cuda-12.8"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "include").mkdir()
    (toolkit / "include" / "cuda.h").write_text("")
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8'\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("CUDA_HOME", str(toolkit))
    monkeypatch.delenv("KJUDGE_NVCC", raising=False)
    assert find_nvcc() == str(toolkit / "bin" / "nvcc") and cuda_home() == str(toolkit)
    h200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a")
    assert get_language("cuda").compiler == str(toolkit / "bin" / "nvcc")
    assert get_language("tilelang").runtime_env(h200)["CUDA_HOME"] == str(toolkit)
    assert get_language("cuda").runtime_env(h200)["PATH"].startswith(f"{toolkit}/bin:")
    if get_sandbox("auto").name == "bwrap":
        assert str(toolkit) in get_sandbox("bwrap").extra_system_paths


def test_runs_in_an_image_use_the_images_own_toolchain_and_caches_tell_images_apart():
    """Under Docker with the contest image's own system, nvcc is the image's (found on the
    image's PATH), CUDA_HOME is the image's business, and compiled artifacts and the recorded
    toolchain name the image: a host/image CUDA mismatch made every CUDA submission CE."""
    from judge.host.device import DeviceInfo
    from judge.languages import get_language
    from sandbox.docker import DockerSandbox
    from tests.conftest import docker_test_image

    image = docker_test_image()
    if image is None:
        pytest.skip("no docker engine or test image here")
    in_image, host_bound = DockerSandbox(image=image), DockerSandbox(image=image, host_python=True)
    h200 = DeviceInfo("cuda", "cuda:0", "NVIDIA H200", 60 * 2**20, "sm_90a")
    cuda, tilelang = get_language("cuda"), get_language("tilelang")
    assert cuda.compile_command("s.cu", "a.so", h200, in_image)[0] == "nvcc"
    assert cuda.compile_command("s.cu", "a.so", h200, host_bound)[0] == cuda.compiler
    assert cuda.runtime_env(h200, in_image) == {}
    assert "CUDA_HOME" not in tilelang.runtime_env(h200, in_image)
    assert image[:19] in cuda.toolchain_version(in_image)
    assert cuda.toolchain_version(host_bound) == cuda.toolchain_version()
    assert cuda.cache_key("x", h200, in_image) != cuda.cache_key("x", h200, host_bound)


def test_the_harness_puts_a_languages_path_before_the_images_own():
    """The image's PATH (PyTorch images keep Python in /opt/conda/bin) survives a language's."""
    import subprocess
    import sys

    probe = ("from judge.harness.main import configure; import os; "
             "configure({'env': {'PATH': '/kj/cuda/bin:/usr/bin'}}); print(os.environ['PATH'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={"PATH": "/opt/conda/bin:/usr/bin:/bin"}, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "/kj/cuda/bin:/usr/bin:/opt/conda/bin:/bin", done.stderr


def test_the_process_backend_keeps_runs_out_of_the_hosts_processes_and_network(tmp_path):
    """It does not hide files, but a run is PID 1 of its own namespace (a kill(-1) reaches only
    the run) and has no network; tests/hostile/kill_parent.cpp attacks it as root."""
    from sandbox import get_sandbox

    mount = Mount(tmp_path, "/kj/scratch")
    result = get_sandbox("process").run(
        ["sh", "-c", "echo pid=$$; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"],
        mounts=[mount], cwd=mount, env={}, limits=SandboxLimits(memory_mb=256), timeout_s=30)
    assert result.returncode == 0, result.output
    assert result.output.split() == ["pid=1", "lo"]


def test_auto_never_picks_the_process_backend(monkeypatch):
    from sandbox import NoSandbox, get_sandbox
    from sandbox.bwrap import BwrapSandbox
    from sandbox.docker import DockerSandbox

    monkeypatch.setattr(BwrapSandbox, "available", classmethod(lambda cls, config=None: False))
    monkeypatch.setattr(DockerSandbox, "available", classmethod(lambda cls, config=None: False))
    with pytest.raises(NoSandbox, match="apt-get install bubblewrap"):
        get_sandbox("auto")
    assert get_sandbox("process").name == "process"  # by name only


def test_workers_refuse_to_start_without_isolation_unless_told(monkeypatch):
    from judge.commands.server import require_isolation
    from sandbox.bwrap import BwrapSandbox
    from sandbox.docker import DockerSandbox

    monkeypatch.setattr(BwrapSandbox, "available", classmethod(lambda cls, config=None: False))
    monkeypatch.setattr(DockerSandbox, "available", classmethod(lambda cls, config=None: False))
    monkeypatch.setenv("KJUDGE_SANDBOX", "auto")
    with pytest.raises(SystemExit, match="bubblewrap.*--insecure"):
        require_isolation(insecure=False)
    require_isolation(insecure=True)
    import os

    assert os.environ["KJUDGE_SANDBOX"] == "process"
    with pytest.raises(SystemExit, match="--insecure"):
        require_isolation(insecure=False)  # KJUDGE_SANDBOX=process, named but not allowed
    monkeypatch.setenv("KJUDGE_SANDBOX", "bwrap")
    with pytest.raises(SystemExit, match="not available"):
        require_isolation(insecure=False)


def test_kjudge_judge_names_the_package_to_install_when_nothing_isolates(tmp_path):
    import os
    import subprocess
    import sys

    bare = tmp_path / "bin"  # a PATH without bwrap (and no Docker image configured)
    bare.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KJUDGE_DOCKER_IMAGE"}
    env["PATH"] = str(bare)
    root = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "-m", "judge.cli", "judge",
                           str(root / "problems/vector_add"),
                           str(root / "problems/vector_add/solutions/AC/loop.cpp")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "apt-get install bubblewrap" in done.stderr, done.stderr


def test_a_frozen_run_does_not_progress_until_thawed(sandbox, tmp_path):
    """While the other contender is timed, a run is frozen whole: a thread it left running can
    neither slow the baseline down nor finish its work unseen."""
    import time

    tmp_path.chmod(0o777)
    mount = Mount(tmp_path, "/kj/scratch", writable=True)
    counter = sandbox.path(mount, "count")
    # written aside and renamed: a run frozen between truncating and writing leaves no empty file
    proc = sandbox.spawn(["/bin/sh", "-c", f"i=0; while true; do i=$((i+1)); echo $i > {counter}.new;"
                          f" mv {counter}.new {counter}; sleep 0.005; done"], mounts=[mount],
                         cwd=mount, env={},
                         limits=SandboxLimits(memory_mb=256), protocol=False)
    count = tmp_path / "count"

    def read() -> int:
        for _ in range(100):
            text = count.read_text().strip() if count.exists() else ""
            if text:
                return int(text)
            time.sleep(0.01)
        raise AssertionError(proc.log())

    try:
        read()
        assert proc.freeze(True)
        frozen_at = read()
        time.sleep(0.3)
        assert read() == frozen_at
        assert proc.freeze(False)
        time.sleep(0.2)
        assert read() > frozen_at
        proc.freeze(True)
    finally:
        proc.close()  # a frozen run is still killed and removed
    assert proc.wait(5) is not None


SPIN = ("import time\nwall, cpu = time.time(), time.process_time()\n"
        "while time.time() - wall < 3:\n    pass\n"
        "print(round((time.process_time() - cpu) / (time.time() - wall), 3))\n")


@pytest.mark.quiet  # a share of one CPU, which other tests would take too
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_an_idle_run_takes_no_cpu_from_a_normal_one_on_its_cpu(backend, tmp_path):
    """A warm slot waits at idle priority; SCHED_IDLE alone did not hold it back here: each run
    is a session of its own, which the kernel's autogroups weigh equally whatever its threads'
    policy (a normal spinner beside two idle ones on one CPU got ~40 % of it). It must get
    nearly all of its CPU: its CPU time over its wall time."""
    import os

    from tests.conftest import make_sandbox

    sandbox = make_sandbox(backend)
    cpu = str(sorted(os.sched_getaffinity(0))[-1])
    mount = Mount(tmp_path, "/kj/scratch", writable=True)

    def start(idle: bool):
        limits = SandboxLimits(memory_mb=256, cpus=cpu, cpu_idle=idle)
        return sandbox.spawn([sandbox.python, "-c", SPIN], mounts=[mount], cwd=mount, env={},
                             limits=limits, protocol=False)

    runs = [start(True), start(True), start(False)]
    try:
        assert runs[-1].wait(60) == 0, runs[-1].log()
        share = float(runs[-1].log().split()[-1])
    finally:
        for proc in runs:
            proc.close()
    assert share > 0.8, f"the normal run had {share:.0%} of its CPU beside two idle ones"


def test_a_backend_is_one_file_that_says_what_it_is(tmp_path, monkeypatch):
    """The registry is the folder: a module defining BACKEND is a backend, and what it keeps a
    run from, what the host needs for it, where `auto` ranks it and how it cleans up are on
    its class; `auto`, the worker's start and the self-test's table read them from there."""
    import sandbox as registry
    from judge.host.sandbox import isolation
    from sandbox.process import ProcessSandbox

    (tmp_path / "jail_like.py").write_text(
        "from sandbox.process import ProcessSandbox\n\n\n"
        "class JailLike(ProcessSandbox):\n"
        "    name = 'jail_like'\n    isolates_filesystem = True\n"
        "    keeps_out = 'host files, network, other processes'\n"
        "    needs = 'install jail-like'\n    auto_rank = -1\n\n"
        "    @classmethod\n    def available(cls, config=None):\n        return True\n\n"
        "    @classmethod\n    def remove_leftovers(cls, config):\n        return 7\n\n\n"
        "BACKEND = JailLike\n")
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    found = registry._discover()
    assert set(found) - {"jail_like"} == set(registry.BACKENDS)
    monkeypatch.setattr(registry, "BACKENDS", found)
    monkeypatch.setattr(registry, "PREFERENCE", registry.preference(found))
    assert registry.PREFERENCE == ("jail_like", "docker", "bwrap")  # by auto_rank
    chosen = registry.choose("auto", registry.SandboxConfig(owner="w1"))
    assert chosen.name == "jail_like" and chosen.remove_leftovers(registry.SandboxConfig()) == 7
    assert isolation(chosen())["isolates"] == "host files, network, other processes"
    for backend in registry.BACKENDS.values():  # every bundled one states it
        assert backend.keeps_out and backend.needs
        assert backend.isolates_filesystem == (backend.auto_rank is not None)
    assert isolation(ProcessSandbox())["isolates"].endswith("(host files are visible)")
    assert "trusted" not in registry.BACKENDS
