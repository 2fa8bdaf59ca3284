"""The `docker` backend: every run in a fresh container of the contest image, pinned by digest.

No network, read-only root, a tmpfs /tmp, the job's mounts (only the scratch dir writable),
cap-drop ALL, no-new-privileges, uid 65534, pids / memory (= swap) / CPU limits, ulimits below
the host's, one accelerator exposed (NVIDIA by device request, MACA by device nodes). Containers
are killed and removed through the Engine API; a worker removes its leftovers when it starts.
Built from the config's `docker_*` fields (the image, its interpreter, the host's Python for test
images made with `docker import`: tests/docker_image.sh, CPUs per container) and `owner`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from sandbox.base import (
    DEFAULT_PATH,
    Mount,
    Sandbox,
    SandboxConfig,
    SandboxLimits,
    SandboxProcess,
    process_tree,
)
from sandbox.bwrap import python_paths
from sandbox.cgroup import cpu_usage_ns, freeze_dir, mark_memory, start_freeze

LABEL = "kjudge.sandbox"
OWNER_LABEL = "kjudge.owner"
NOFILE = 4096  # under the host's hard limit: the daemon cannot raise it past that
NORMAL_SHARES, IDLE_SHARES = 1024, 2  # CPU shares of a run, and of a warm one waiting


def _client():
    import docker

    return docker.from_env(timeout=120)


class ImageNotPinned(ValueError):
    pass


def resolve_image(client, pinned: str) -> str:
    """The image id for a reference pinned by digest; refuses tags and missing digests."""
    if "@sha256:" in pinned:
        image = client.images.get(pinned)
        if pinned.split("@", 1)[1] not in {d.split("@", 1)[1] for d in image.attrs.get(
                "RepoDigests", [])}:
            raise ImageNotPinned(f"{pinned}: the local image does not carry that digest")
        return image.id
    if pinned.startswith("sha256:"):
        return client.images.get(pinned).id
    raise ImageNotPinned(f"{pinned!r} is not pinned: use name@sha256:… or an image id sha256:…")


class DockerProcess(SandboxProcess):
    def __init__(self, container, output_limit: int, protocol: bool):
        super().__init__(output_limit)
        self.container = container
        self.protocol = protocol
        self._socket = container.attach_socket(
            params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        self._raw: socket.socket = self._socket._sock
        self._status: int | None = None
        self._closed = False
        container.start()
        threading.Thread(target=self._demultiplex, daemon=True).start()

    def _demultiplex(self) -> None:
        """Split the Engine's multiplexed stream: 8-byte headers, 1 = stdout, 2 = stderr."""
        buffer = b""
        try:
            while chunk := self._raw.recv(65536):
                if self.output_exceeded:
                    continue  # keep draining: a blocked stream would stall the engine's kill
                buffer += chunk
                while len(buffer) >= 8:
                    kind, size = struct.unpack(">BxxxL", buffer[:8])
                    if len(buffer) < 8 + size:
                        break
                    payload, buffer = buffer[8:8 + size], buffer[8 + size:]
                    if kind == 1 and self.protocol:
                        self._add_stdout(payload)
                    elif not self._add_log(payload):
                        break
        except OSError:
            pass
        finally:
            self._stdout_closed()

    def _write(self, data: bytes) -> None:
        self._raw.sendall(data)

    def kill(self) -> None:
        """Ask the engine to kill the container, without blocking the caller: the reader thread
        calls this on OLE and must keep draining the stream, or the engine stalls."""
        self._peak = max(getattr(self, "_peak", 0.0), self._read_peak())  # gone once stopped
        threading.Thread(target=self._kill_now, daemon=True).start()

    def _kill_now(self) -> None:
        self.freeze(False)  # a frozen task dies only once thawed
        with contextlib.suppress(Exception):
            self.container.kill()

    def wait(self, timeout: float | None = None) -> int | None:
        if self._status is not None:
            return self._status
        try:
            result = self.container.wait(timeout=timeout if timeout is not None else 10**6)
        except Exception:  # read timeout: still running
            return None
        self._status = result.get("StatusCode")
        return self._status

    def returncode(self) -> int | None:
        if self._status is None:
            with contextlib.suppress(Exception):
                self.container.reload()
                if self.container.status == "exited":
                    self._status = self.container.attrs["State"]["ExitCode"]
        return self._status

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.kill()
        self.wait(10)
        self._oom = self._inspect_oom()
        with contextlib.suppress(OSError):
            self._raw.shutdown(socket.SHUT_RDWR)  # the SocketIO wrapper alone keeps it open
        with contextlib.suppress(Exception):
            self._raw.close()
            self._socket.close()
        with contextlib.suppress(Exception):
            self.container.remove(force=True)

    def _inspect_oom(self) -> bool:
        with contextlib.suppress(Exception):
            self.container.reload()
            return bool(self.container.attrs["State"].get("OOMKilled"))
        return False

    def _cgroup_dirs(self, controller: str = "memory") -> list[str]:
        """The container's cgroup, in the v1 (cgroupfs or systemd) or v2 layouts."""
        cid = self.container.id
        return [f"/sys/fs/cgroup/{controller}/docker/{cid}", f"/sys/fs/cgroup/{controller}/"
                f"system.slice/docker-{cid}.scope", f"/sys/fs/cgroup/system.slice/docker-{cid}.scope",
                f"/sys/fs/cgroup/docker/{cid}"]

    def freeze(self, frozen: bool) -> bool:
        """The container's freezer, written directly (the Engine's pause is ~10 ms a call)."""
        return any(freeze_dir(Path(d), frozen) for d in self._cgroup_dirs("freezer"))

    def _start_freeze(self, frozen: bool) -> None:
        for directory in self._cgroup_dirs("freezer"):
            if start_freeze(Path(directory), frozen):
                return

    def cpu_ns(self) -> int | None:
        for directory in self._cgroup_dirs("cpuacct") + self._cgroup_dirs("cpu"):
            found = cpu_usage_ns(Path(directory))
            if found is not None:
                return found
        return None

    def mark_memory(self) -> float:
        for directory in map(Path, self._cgroup_dirs()):
            if directory.is_dir():
                return mark_memory(directory) / 2**20
        return 0.0

    def _adjust(self, limits: SandboxLimits) -> None:
        memory = f"{limits.memory_mb}m"
        try:
            self.container.update(mem_limit=memory, memswap_limit=memory,
                                  cpuset_cpus=limits.cpus, cpu_shares=IDLE_SHARES
                                  if limits.cpu_idle else NORMAL_SHARES)
        except Exception as exc:
            raise OSError(f"the engine refused the container's new limits: {exc}") from None

    def _read_peak(self) -> float:
        for directory in self._cgroup_dirs():
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                with contextlib.suppress(OSError, ValueError):
                    return int(Path(directory, name).read_text()) / 2**20
        return 0.0

    def pids(self) -> list[int]:
        for directory in self._cgroup_dirs():
            with contextlib.suppress(OSError, ValueError):
                return [int(p) for p in Path(directory, "cgroup.procs").read_text().split()]
        with contextlib.suppress(Exception):
            self.container.reload()
            return process_tree(self.container.attrs["State"]["Pid"])
        return []

    def peak_memory_mb(self) -> float:
        return getattr(self, "_peak", None) or self._read_peak()

    def memory_exceeded(self) -> bool:
        return getattr(self, "_oom", None) or self._inspect_oom()


class DockerSandbox(Sandbox):
    name = "docker"
    isolates_filesystem = True
    keeps_out = "host files, network, other processes"
    needs = "run Docker and set KJUDGE_DOCKER_IMAGE to the contest image pinned by digest"
    auto_rank = 0  # the contest's own image, when one is configured
    runs_die_with_thread = False  # the engine holds the container: a dead worker leaves it

    def __init__(self, image: str, devices: Sequence[str] = (), gpu_uuid: str | None = None,
                 owner: str = "", host_python: bool = False, python: str = "python3",
                 cpus: float = 1.0):
        if not image:
            raise ImageNotPinned("set KJUDGE_DOCKER_IMAGE to the contest image, pinned by digest")
        self.pinned = image
        self.client = _client()
        self.image_id = resolve_image(self.client, self.pinned)
        self.image_path = image_path(self.client.images.get(self.image_id))
        self.host_python = host_python
        self.image_python = python
        self.devices = [d for d in devices if "nvidia" not in d]  # NVIDIA: device request
        self.gpu_uuid = gpu_uuid
        # a worker names itself (owner worker-cuda:0) to find its leftovers
        self.owner = owner or f"cli-{os.getpid()}"
        self.cpus = cpus

    @classmethod
    def from_config(cls, config: SandboxConfig, devices: Sequence[str] = (),
                    gpu_uuid: str | None = None) -> DockerSandbox:
        return cls(config.docker_image, devices, gpu_uuid, config.owner,
                   config.docker_host_python, config.docker_python, config.docker_cpus)

    @classmethod
    def available(cls, config: SandboxConfig | None = None) -> bool:
        try:
            return bool(config and config.docker_image) and _client().ping()
        except Exception:
            return False

    @classmethod
    def remove_leftovers(cls, config: SandboxConfig) -> int:
        return remove_leftovers(config.owner) if config.owner else 0

    def limits_applied(self) -> dict:
        return {"container": True}  # the engine's limits

    def device_env(self, device) -> tuple[dict[str, str], str]:
        env, name = super().device_env(device)
        if device.kind == "cuda" and self.gpu_by_request:
            env = {}  # the container holds that one GPU only
        return env, name

    @property
    def host_system(self) -> bool:
        return self.host_python  # else the image's own system

    @property
    def system_id(self) -> str:
        return "" if self.host_python else self.image_id

    @property
    def gpu_by_request(self) -> bool:
        return bool(self.gpu_uuid)  # the container has only that GPU (MACA: all listed nodes)

    @property
    def python(self) -> str:
        return sys.executable if self.host_python else self.image_python

    def _volumes(self, mounts: Sequence[Mount]) -> dict:
        volumes = {}
        if self.host_python:
            for path in ["/usr", *python_paths()]:
                volumes[path] = {"bind": path, "mode": "ro"}
        for mount in mounts:
            volumes[str(mount.host)] = {"bind": mount.target, "mode": "rw" if mount.writable
                                        else "ro"}
        return volumes

    def spawn(self, argv: Sequence[str], *, mounts: Sequence[Mount], cwd: Mount,
              env: dict[str, str], limits: SandboxLimits, protocol: bool = True) -> DockerProcess:
        import docker

        requests = []
        if self.gpu_uuid:
            requests.append(docker.types.DeviceRequest(device_ids=[self.gpu_uuid],
                                                       capabilities=[["gpu"]]))
        memory = f"{limits.memory_mb}m"
        container = self.client.containers.create(
            self.image_id, list(argv), stdin_open=True, network_mode="none", read_only=True,
            user="65534:65534", cap_drop=["ALL"], security_opt=["no-new-privileges"],
            pids_limit=limits.pids, mem_limit=memory, memswap_limit=memory,
            nano_cpus=int(self.cpus * 1e9), cpuset_cpus=limits.cpus, working_dir=cwd.target,
            cpu_shares=IDLE_SHARES if limits.cpu_idle else NORMAL_SHARES,
            tmpfs={"/tmp": "rw,size=512m,uid=65534,gid=65534"}, volumes=self._volumes(mounts),
            environment={"HOME": cwd.target, "TMPDIR": "/tmp", "LANG": "C.UTF-8", **env,
                         "PATH": join_paths(env.get("PATH", ""), self.image_path)},
            ulimits=[docker.types.Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
                     docker.types.Ulimit(name="core", soft=0, hard=0),
                     docker.types.Ulimit(name="fsize", soft=limits.file_size_mb * 2**20,
                                         hard=limits.file_size_mb * 2**20)],
            devices=[f"{d}:{d}:rwm" for d in self.devices], device_requests=requests,
            group_add=device_groups(self.devices),
            labels={LABEL: "1", OWNER_LABEL: self.owner}, auto_remove=False,
        )
        return DockerProcess(container, limits.output_bytes, protocol)


def device_groups(devices: Sequence[str]) -> list[str]:
    """The groups that own the device nodes a run gets (MetaX's /dev/dri render nodes are
    video/render, mode 0660): the run's user joins them, or it could not open its card. Never
    root's group."""
    gids = set()
    for device in devices:
        with contextlib.suppress(OSError):
            gids.add(os.stat(device).st_gid)
    return [str(gid) for gid in sorted(gids - {0})]


def image_path(image) -> str:
    """The PATH the image sets (PyTorch images keep Python in /opt/conda/bin), else the usual."""
    for item in image.attrs.get("Config", {}).get("Env") or []:
        if item.startswith("PATH="):
            return item[5:]
    return DEFAULT_PATH


def join_paths(*paths: str) -> str:
    """PATH lists joined in order, each folder once: a run's own folders before the image's."""
    folders = [f for p in paths for f in p.split(":") if f]
    return ":".join(dict.fromkeys(folders))


def remove_leftovers(owner: str) -> int:
    """Remove the containers an earlier run of this worker left behind (it died mid-judging)."""
    client = _client()
    removed = 0
    for container in client.containers.list(all=True, filters={
            "label": [f"{LABEL}=1", f"{OWNER_LABEL}={owner}"]}):
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed += 1
    return removed


PROBE = """
import json, shutil, subprocess, sys
packages, tools = json.loads(sys.argv[1])
found = {"python": sys.version.split()[0]}
for name in packages:
    try:
        found[name] = getattr(__import__(name), "__version__", "installed")
    except Exception as exc:
        found[name] = "missing" if isinstance(exc, ImportError) else f"error: {exc}"
for tool in tools:
    path = shutil.which(tool)
    if path is None:
        found[tool] = "missing"
        continue
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()
    found[tool] = next((l for l in out if "release" in l), out[0] if out else "?").strip()
print(json.dumps(found))
"""


def check_image(pinned: str, packages: Sequence[str], tools: Sequence[str],
                host_python: bool = False) -> dict:
    """The Python version, and the versions of these packages and tools, inside an image."""
    import json

    sandbox = DockerSandbox(pinned, host_python=host_python, owner="image-check")
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    mount = Mount(scratch, "/kj/scratch")
    argv = [sandbox.python, "-c", PROBE, json.dumps([list(packages), list(tools)])]
    result = sandbox.run(argv, mounts=[mount], cwd=mount, env={"HOME": "/tmp"},
                         limits=SandboxLimits(memory_mb=4096, output_bytes=1 << 16),
                         timeout_s=300)
    lines = [line for line in result.output.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the probe failed in {pinned}: {result.output[-2000:]}")
    return {"image": pinned, "id": sandbox.image_id, **json.loads(lines[-1])}


BACKEND = DockerSandbox
