"""The in-sandbox harness: loads one run_kernel and serves the judge's requests over stdin/stdout.

UNTRUSTED SIDE. This file runs inside the sandbox, in the same process as the contestant's code
(or the problem's baseline), inside the contest's image. It imports only the standard library,
torch, the language's own package and `protocol.py` beside it (the requests and replies, shared
with the judge), and never sees the seed, the reference outputs or the judge's state: it gets
input files, and writes output files that the trusted side checks. Nothing it measures is trusted
on its own: the judge times every request with its own clock (judge/measure/rounds.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import glob
import importlib.util
import json
import mmap
import os
import resource
import socket
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import NamedTuple

_perf_counter_ns = time.perf_counter_ns  # captured before any contestant code is loaded

import torch  # noqa: E402

try:
    import protocol  # in the sandbox: this file's folder is the first entry of sys.path
except ImportError:  # imported as judge.harness.main, outside any sandbox
    from judge.harness import protocol

# an older torch in the contest's image lacks the newest dtypes (fp4 came in 2.8): a problem
# using one fails to load there, any other problem still runs
_DTYPES = {name: getattr(torch, name) for name in protocol.TENSOR_DTYPES if hasattr(torch, name)}
_C_SCALARS = {name: getattr(ctypes, dtype.ctypes_scalar)
              for name, dtype in protocol.DTYPES.items() if dtype.ctypes_scalar}
# host memory, or the device's (torch's allocator, past the limit set below): MLE
_OUT_OF_MEMORY = (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))


class Channel:
    """Replies on a private copy of stdout; the contestant's prints go to stderr."""

    def __init__(self) -> None:
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def reply(self, **message) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def reply_handled(self, received_ns: int, **message) -> None:
        """A reply, with `handled_ms`: from `received_ns` (the request read) to the reply
        encoded (what of a request's round trip is the harness's own work)."""
        text = json.dumps(message)[:-1]
        handled = (_perf_counter_ns() - received_ns) / 1e6
        self.out.write(f'{text}, "handled_ms": {handled!r}}}\n')
        self.out.flush()


def _find_cudart():
    """The CUDA runtime library torch runs on (its wheel's, or the system's), or None."""
    roots = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    roots += [os.path.join(p, "nvidia") for p in sys.path if os.path.isdir(os.path.join(p, "nvidia"))]
    found = [f for root in roots for f in sorted(glob.glob(os.path.join(root, "**", "libcudart.so*"),
                                                          recursive=True))]
    system = ctypes.util.find_library("cudart")
    for path in found + ([system] if system else []):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


PERSISTING_L2_LIMIT = 0x06  # cudaLimitPersistingL2CacheSize
PROBE_BUSY_FACTOR = 3.0  # a probe this many times an idle one's slowest (p90) finds it busy


class Device:
    """The device the harness runs on: synchronization, the cache flush and one call's timing.

    On a GPU (torch's "cuda" device, also MACA's torch build) every timed call starts from a cold
    L2: persisting-L2 lines a submission may have set up are reset (cudaCtxResetPersistingL2Cache),
    a buffer of at least twice the L2 size is written and then another one read, so that the
    written lines are back in memory before the call instead of being written back during it.
    """

    CALIBRATION_CALLS = 64
    _last_settle_ms = 0.0  # device time from the end event to the settled one, last call

    def __init__(self, name: str, flush_bytes: int):
        self.name = name
        self.torch_device = torch.device(name)
        self.is_cuda = self.torch_device.type == "cuda"
        self._reset_persisting_l2 = None
        self._zero_persisting_limit = None
        self.runtime_failures: dict[str, int] = {}  # raw CUDA calls that failed (_runtime_call)
        self.flush_read = None
        if self.is_cuda:
            torch.cuda.set_device(self.torch_device)
            self._sync = torch.cuda.synchronize
            self._event = torch.cuda.Event
            l2_bytes = getattr(torch.cuda.get_device_properties(self.torch_device),
                               "L2_cache_size", 0)
            flush_bytes = max(flush_bytes, 2 * l2_bytes)
            cudart = _cudart() if torch.version.cuda else None
            reset = getattr(cudart, "cudaCtxResetPersistingL2Cache", None)
            if reset is not None and self._runtime_call("cudaCtxResetPersistingL2Cache", reset):
                self._reset_persisting_l2 = reset  # kept only when it works on this device
            limit = getattr(cudart, "cudaDeviceSetLimit", None)
            if limit is not None and self._runtime_call(
                    "cudaDeviceSetLimit", limit, PERSISTING_L2_LIMIT, ctypes.c_size_t(0)):
                self._zero_persisting_limit = lambda: limit(PERSISTING_L2_LIMIT, ctypes.c_size_t(0))
            self.flush_read = torch.ones(max(flush_bytes, 1), dtype=torch.uint8,
                                         device=self.torch_device)
        self.flush_buffer = torch.empty(max(flush_bytes, 1), dtype=torch.uint8,
                                        device=self.torch_device)
        self.flushes = 0
        self.calibrate()

    def _runtime_call(self, name: str, function, *args) -> bool:
        """A raw CUDA runtime call, its error cleared where it failed (cudaGetLastError: else it
        stays set and surfaces at torch's next launch, as the submission's error) and counted
        by name in `runtime_failures` (the record's timing setup). Whether it succeeded."""
        if function(*args) == 0:
            return True
        clear = getattr(_cudart(), "cudaGetLastError", None)
        if clear is not None:
            clear()
        self.runtime_failures[name] = self.runtime_failures.get(name, 0) + 1
        return False

    def calibrate(self) -> None:
        """Before any contestant code runs: the time of an empty call (the floor reported with
        every judging) and, on a GPU, how long settling an idle device takes (see time_call)."""
        if self.is_cuda:
            self._events = tuple(self._event(enable_timing=True) for _ in range(3))
        self.settle_floor_ms = float("inf")  # while calibrating: the end event alone
        empty, settle = [], []
        for _ in range(self.CALIBRATION_CALLS):
            empty.append(self.time_call(lambda: None))
            settle.append(self._last_settle_ms)
        empty.sort()
        settle.sort()
        self.empty_call_ms = empty[len(empty) // 2]
        # a high quantile: an honest call whose settling is slower than this is rare, and only
        # by the host's jitter; work left running past the call shows as far more than it
        self.settle_floor_ms = settle[int(0.9 * (len(settle) - 1))]
        if self.is_cuda:
            self._probe_tensor = torch.zeros(1, device=self.torch_device)
            probes = sorted(self.probe_ms() for _ in range(self.CALIBRATION_CALLS))
            # idle, a probe waits for nothing but its own launch: a busy device makes it wait
            # for the work ahead of it (another context's: a timeslice at least, milliseconds)
            self.idle_probe_ms = PROBE_BUSY_FACTOR * probes[int(0.9 * (len(probes) - 1))]

    def probe_ms(self) -> float:
        """How long a one-element kernel of this process takes to run, launch to completion,
        on the host's clock (GPUs: 0 elsewhere)."""
        if not self.is_cuda:
            return 0.0
        start = _perf_counter_ns()
        self._probe_tensor.add_(1)
        self._sync()
        return (_perf_counter_ns() - start) / 1e6

    def await_idle(self, limit_s: float) -> tuple[float, float]:
        """Probe the device until a probe runs as on an idle device, for `limit_s` at most:
        (the first probe's wait beyond an idle one's, the time spent waiting), in ms."""
        started = _perf_counter_ns()
        busy = max(0.0, self.probe_ms() - self.idle_probe_ms) if self.is_cuda else 0.0
        probe = busy
        while probe > 0 and _perf_counter_ns() - started < limit_s * 1e9:
            probe = max(0.0, self.probe_ms() - self.idle_probe_ms)
        return busy, (_perf_counter_ns() - started) / 1e6

    def describe(self) -> dict:
        return {"flush_bytes": self.flush_buffer.numel(),
                "flush_read_bytes": 0 if self.flush_read is None else self.flush_read.numel(),
                "persisting_l2_reset": self._reset_persisting_l2 is not None,
                "persisting_l2_limit_zeroed": self._zero_persisting_limit is not None,
                "runtime_call_failures": dict(self.runtime_failures),
                "empty_call_ms": self.empty_call_ms, "settle_floor_ms": self.settle_floor_ms}

    def synchronize(self) -> None:
        if self.is_cuda:
            self._sync()

    def flush_cache(self) -> None:
        """Set the persisting-L2 limit back to 0 and reset persisting lines (a submission may
        have raised the limit: a carve-out it keeps across calls would hold its data through
        the flush), write the flush buffer, then (GPU) read another one."""
        if self._zero_persisting_limit is not None:
            self._runtime_call("cudaDeviceSetLimit", self._zero_persisting_limit)
        if self._reset_persisting_l2 is not None:
            self._runtime_call("cudaCtxResetPersistingL2Cache", self._reset_persisting_l2)
        self.flushes += 1
        self.flush_buffer.fill_(self.flushes & 0xFF)
        if self.flush_read is not None:
            self._flush_sum = self.flush_read.sum()  # kept: the read must not be skipped

    def time_batch(self, kernel: Kernel, bound: list[tuple], gate: Gate | None = None
                   ) -> list[float]:
        """Milliseconds of each call of `kernel` on each of the `bound` argument tuples, one
        after another, each call's inputs released through `gate` before it and the call said
        done after. CPU: nothing around a call but the clock's two reads (what the harness does
        per call is credited only within the judge's resolution, so it is kept to what a call
        cannot do without); GPU: `time_call` each."""
        call, check = kernel.call, kernel.check
        clock, times = _perf_counter_ns, []
        for index, args in enumerate(bound):
            if gate is not None:
                gate.take(index)
            if self.is_cuda:
                times.append(self.time_call(lambda a=args: call(*a), check))
            else:
                start = clock()
                call(*args)
                times.append((clock() - start) / 1e6)
                if check is not None:
                    check()
            if gate is not None:
                gate.done(index)
        return times

    def time_call(self, fn, check=None) -> float:
        """Milliseconds of one call, with `check` (errors the call left behind) outside it.

        GPU: CUDA events on the harness's stream, the end recorded right after the call returns,
        so that no host round trip is measured. Work the call left on other streams is not
        behind that event: the device is synchronized and a third event recorded; when the gap
        between the end and that event exceeds an idle device's settling (calibrated), the call
        is charged up to the third event. CPU: a monotonic clock around the call.
        """
        if not self.is_cuda:
            t0 = _perf_counter_ns()
            fn()
            ms = (_perf_counter_ns() - t0) / 1e6
            if check is not None:
                check()
            return ms
        start, end, settled = self._events
        self._sync()
        start.record()
        fn()
        end.record()
        try:
            self._sync()  # waits for every stream of the context, the submission's own too
        except BaseException:
            if check is not None:
                check(synchronize=True)  # the submission's runtime names the error it hit
            raise
        settled.record()
        settled.synchronize()
        if check is not None:
            check()  # launch errors that left the context usable
        ms = start.elapsed_time(end)
        self._last_settle_ms = end.elapsed_time(settled)
        return max(ms, start.elapsed_time(settled) - self.settle_floor_ms)


class Kernel(NamedTuple):
    """A run_kernel as the harness calls it: `call(*bind(values))`, then `check()` where there is
    one. A call's arguments are bound once per input set (a native kernel's pointers), outside
    the timed batch."""

    call: Callable
    bind: Callable[[list], tuple] = tuple
    check: Callable[..., None] | None = None

    def __call__(self, values: list) -> None:
        self.call(*self.bind(values))


def load_python(path: str):
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "run_kernel", None)
    if not callable(fn):
        raise LoadError("the source does not define a callable run_kernel")
    return fn


def native_kernel(call: NativeCall, check=None) -> Kernel:
    return Kernel(call.raw, call.bind, check)


def load_native(path: str, args: list[dict]):
    """run_kernel from a shared library, and the judge's device check linked into it (cuda,
    maca: None elsewhere), which raises DeviceError for an error run_kernel left behind."""
    lib = ctypes.CDLL(path)
    try:
        fn = lib.run_kernel
    except AttributeError:
        raise LoadError('the library has no symbol run_kernel (declare it extern "C")') from None
    call = NativeCall(fn, args)
    device_check = getattr(lib, "kjudge_device_check", None)
    if device_check is None:
        return call, None
    device_check.restype = ctypes.c_int
    device_check.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    message = ctypes.create_string_buffer(512)

    def check(synchronize: bool = False):
        if device_check(message, len(message), int(synchronize)):
            raise DeviceError("device error after run_kernel returned: "
                              + message.value.decode(errors="replace"))

    return call, check


class NativeCall:
    """A Python callable that passes tensors by address and scalars by C type to `fn`;
    `raw(*bind(values))` is the same call with the addresses taken beforehand."""

    def __init__(self, fn, args: list[dict]):
        fn.restype = None
        fn.argtypes = [_C_SCALARS[a["dtype"]] if a["role"] == "scalar" else ctypes.c_void_p
                       for a in args]
        self.raw = fn

    @staticmethod
    def bind(values) -> tuple:
        return tuple(v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values)

    def __call__(self, *values) -> None:
        self.raw(*self.bind(values))


def empty_kernel(loader: str, args: list[dict], device: Device | None = None) -> Kernel:
    """A run_kernel that does nothing, called the way a run_kernel of `loader` is, with the same
    steps around it: what a timed call costs with no work in it (the floor turns). Native: the
    same argument conversion into a C function that returns at once (libc's getpid, which
    ignores its arguments under the C calling convention) and, on a GPU, a device check of the
    same cost as the one linked into a native submission (a ctypes call of the runtime's
    cudaGetLastError; no second synchronize: time_call has synchronized)."""
    if loader != "native":
        return Kernel(lambda *values: None)
    libc = ctypes.CDLL(None)
    call = NativeCall(ctypes.CFUNCTYPE(None)(ctypes.cast(libc.getpid, ctypes.c_void_p).value),
                      args)
    return native_kernel(call, _empty_device_check() if device and device.is_cuda else None)


def _empty_device_check():
    cudart = _cudart() if torch.version.cuda else None
    last_error = getattr(cudart, "cudaGetLastError", None)
    if last_error is None:
        return None
    last_error.restype = ctypes.c_int

    def check(synchronize: bool = False):
        if last_error():
            raise DeviceError("device error after an empty call")

    return check


class LoadError(Exception):
    pass


class DeviceError(Exception):
    """A launch or asynchronous device error left by run_kernel (runtime error, no traceback)."""


def poison(t: torch.Tensor) -> None:
    """Fill an output so that an unwritten element can never pass the checker: NaN, or the
    least integer. fp4 has no NaN and every byte is a value: random bytes there, from the
    harness's own generator, so an unwritten element matches only by chance. Contestant code
    shares this process and can read or seed that generator; knowing the poison does not help
    it write the answer, which is all the poison guards."""
    if t.dtype in _PACKED:
        noise = torch.randint(0, 256, (t.numel(),), dtype=torch.uint8, generator=_POISON)
        t.view(torch.uint8).view(-1).copy_(noise.to(t.device))
    elif t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).min)


_PACKED = {_DTYPES[name] for name, dtype in protocol.DTYPES.items()
           if dtype.packs > 1 and name in _DTYPES}
_POISON = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little"))


class OperatorRecorder:
    """The ATen operators run_kernel runs, where a problem's rule limits them (config
    `operator_rule`: its id, message and allowed operator names).

    A torch dispatch mode entered around every checked and warm-up call, and the timed calls the
    judge audits (drawn at random, left out of the timing: judge/measure/rounds.py), sees every
    operator that reaches the dispatcher, from Python or from native code calling libtorch. An
    operator outside the allowance is remembered (an exception could be caught by the caller)
    and ends the call as RV. Operators the language's own runtime runs (Triton's interpreter,
    TileLang's) are not the submission's and are not counted. The static rule keeps sources under
    such a rule from reaching this object (no `gc`, `sys`, `ctypes`, dunder attributes).
    """

    def __init__(self, rule: dict, packages: list[str]):
        from torch.utils._python_dispatch import TorchDispatchMode

        self.rule = rule
        allowed = frozenset(rule["allowed"])
        skipped = [os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__))]
        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func._overloadpacket.__name__ not in allowed and recorder.found is None:
                    recorder.found = _blame(func, skipped, packages)
                return func(*args, **(kwargs or {}))

        self.mode = Mode()
        self.found: str | None = None
        # torch imports its compiler (torch._dynamo, ~1.5 s) at the first operator run under a
        # dispatch mode: here, before contestant code, not in the first checked call's limit
        with self.mode:
            torch.empty(1).new_empty(1)
        self.found = None

    def __enter__(self):
        self.depth = torch._C._len_torch_dispatch_stack()
        self.mode.__enter__()

    def __exit__(self, *exc) -> None:
        self.mode.__exit__(*exc)
        if torch._C._len_torch_dispatch_stack() != self.depth:
            raise Refused("RV", "run_kernel changed the stack of torch dispatch modes (the "
                                "judge records the operators it runs)")
        if self.found is not None:
            found, self.found = self.found, None
            raise Refused("RV", f"rule {self.rule['id']}: {self.rule['message']} (operator "
                                f"{found})")


def _blame(func, skipped: list[str], packages: list[str]) -> str | None:
    """Where an operator was called from: the first frame outside torch and this harness; None
    when that is the language's own runtime (its operators are not the submission's)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(tuple(skipped)):
        frame = frame.f_back
    if frame is None:
        return f"{func} from native code"
    runtimes = [os.path.dirname(m.__file__) for name in packages
                if (m := sys.modules.get(name)) is not None and getattr(m, "__file__", None)]
    if runtimes and frame.f_code.co_filename.startswith(tuple(runtimes)):
        return None
    return f"{func} at {os.path.basename(frame.f_code.co_filename)} line {frame.f_lineno}"


class Refused(Exception):
    """The call broke the contract in a way that ends the run with a verdict of its own."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class InputSet:
    def __init__(self, file: str, args: list[dict], outputs: dict, device: torch.device):
        data = torch.load(file, map_location=device, weights_only=True)
        self.names = [arg["name"] for arg in args]
        self.values: list = []
        self.outputs: dict[str, torch.Tensor] = {}
        self.inputs: dict[str, torch.Tensor] = {}
        self.pristine: dict[str, torch.Tensor] = {}
        for arg in args:
            name = arg["name"]
            if arg["role"] == "output":
                spec = outputs[name]
                t = torch.empty(spec["shape"], dtype=_DTYPES[spec["dtype"]], device=device)
                self.outputs[name] = t
                self.values.append(t)
            elif arg["role"] == "input":
                t = data[name].to(device).contiguous()
                self.inputs[name] = t
                self.pristine[name] = t.clone()
                self.values.append(t)
            else:
                self.values.append(data[name])
        self._record_layout()

    def _record_layout(self) -> None:
        # what run_kernel is given: it must write into these very tensors, never swap them
        self.layout = {name: _layout(t) for name, t in {**self.inputs, **self.outputs}.items()}

    def shared_copies(self, outputs_file: str, slots: int,
                      inputs_file: str | None = None) -> list[InputSet]:
        """The same arguments, with each timed call's fresh inputs in a slot of their own,
        where the judge releases them (`released`): memory reserved empty, mapped over at each
        release, or where the judge writes them, the slots of `inputs_file` (read-only); and
        its outputs in a file the judge maps too (raw, see protocol.py; a set per slot,
        writable). On the CPU run_kernel gets those very tensors; on a GPU device tensors of
        their own, which `stage_in` / `stage_out` copy from and to the host's."""
        if inputs_file is None:
            inputs, regions = _reserve_sets(self.inputs, slots)
        else:
            inputs = _map_sets(inputs_file, self.inputs, writable=False, slots=slots)
            regions = [(0, 0)] * slots
        return [self._shared_copy(host_inputs, outputs, region) for host_inputs, outputs, region
                in zip(inputs, _map_sets(outputs_file, self.outputs, writable=True, slots=slots),
                       regions)]

    def _shared_copy(self, host_inputs: dict, host_outputs: dict,
                     region: tuple[int, int]) -> InputSet:
        copy = object.__new__(InputSet)
        copy.names, copy.pristine = self.names, {}
        copy.host_inputs, copy.host_outputs = host_inputs, host_outputs
        copy.region = region
        on_cpu = all(t.device.type == "cpu" for t in self.inputs.values())
        copy.inputs = (copy.host_inputs if on_cpu
                       else {n: torch.empty_like(t) for n, t in self.inputs.items()})
        copy.outputs = (copy.host_outputs if on_cpu
                        else {n: torch.empty_like(t) for n, t in self.outputs.items()})
        copy.staged = not on_cpu
        # the outputs only: an input slot is mapped anew at each release, and a page-lock
        # would keep the copies reading the pages it locked, not the set released there
        shared = list(copy.host_outputs.values())
        copy.locked = [t for t in shared if _pin(t)] if copy.staged else []
        copy.pinned = bool(shared) and len(copy.locked) == len(shared)
        copy.values = [copy.inputs.get(n, copy.outputs.get(n, v))
                       for n, v in zip(self.names, self.values)]
        copy._record_layout()
        return copy

    staged = False  # whether the tensors run_kernel gets are copies of shared files (GPU)
    pinned = False  # whether the outputs' file is page-locked for the copies (cudaHostRegister)
    region: tuple[int, int] = (0, 0)  # the fresh inputs' slot: (address, bytes)

    def released(self, fd: int | None) -> None:
        """The judge released this set: written into its slot (`fd` None), or as a sealed memfd
        (`fd`), mapped here over its slot. Its tensors now hold it (GPU: copied to the
        device's)."""
        if fd is not None:
            _map_over(self.region, fd)
        if self.staged:
            self.stage_in()
    locked: list = []  # the shared tensors page-locked so far (unlocked before they go)

    def unpin(self) -> None:
        """Release the page locks before the mappings go (the next test point's load)."""
        cudart = _cudart() if self.locked else None
        for t in self.locked:
            cudart.cudaHostUnregister(ctypes.c_void_p(t.data_ptr()))
        if cudart is not None:
            cudart.cudaGetLastError()
        self.locked, self.pinned = [], False

    def stage_in(self) -> None:
        for name, t in self.inputs.items():
            t.copy_(self.host_inputs[name], non_blocking=True)

    def stage_out(self) -> None:
        for name, t in self.outputs.items():
            self.host_outputs[name].copy_(t)

    def modified_inputs(self) -> list[str]:
        return [n for n, t in self.inputs.items() if n in self.pristine
                and not torch.equal(_bytes(t), _bytes(self.pristine[n]))]

    def verify_layout(self) -> None:
        """The tensors the harness saves are those run_kernel got, unchanged in place and shape."""
        for name, t in {**self.inputs, **self.outputs}.items():
            if _layout(t) != self.layout[name]:
                raise Refused("WA", f"run_kernel replaced the storage, shape or type of {name}: "
                                    "it must write its results into the tensors it is given")


def _pin(t: torch.Tensor) -> bool:
    """Page-lock a mapped tensor's memory for the device's copies (DMA at a steady rate, the same
    for both contenders, where pageable copies vary with the process); False where CUDA will
    not (a read-only mapping needs cudaHostRegisterReadOnly, not everywhere)."""
    cudart = _cudart() if t.numel() and torch.version.cuda else None
    if cudart is None:
        return False
    for flags in (0, 8):  # default, cudaHostRegisterReadOnly
        if cudart.cudaHostRegister(ctypes.c_void_p(t.data_ptr()),
                                   ctypes.c_size_t(t.numel() * t.element_size()),
                                   ctypes.c_uint(flags)) == 0:
            return True
        cudart.cudaGetLastError()  # a refusal must not reach the submission's error check
    return False


_CUDART: list = []


def _cudart():
    """torch's CUDA runtime library, found once (None where there is none)."""
    if not _CUDART:
        _CUDART.append(_find_cudart())
    return _CUDART[0]


def _reserve_sets(like: dict[str, torch.Tensor], slots: int
                  ) -> tuple[list[dict], list[tuple[int, int]]]:
    """Views laid out as `like` over `slots` slots of memory (protocol.set_layout, slot_stride
    apart), reserved empty and read-only for the sets the judge releases, and each slot's
    (address, bytes)."""
    sizes = [t.numel() * t.element_size() for t in like.values()]
    offsets, span = protocol.set_layout(sizes)
    stride = protocol.slot_stride(span)
    # slots of huge-page sets start on a huge page, so that a set's pages map as such
    pad = protocol.HUGE_PAGE if stride % protocol.HUGE_PAGE == 0 else 0
    mapping = mmap.mmap(-1, stride * slots + pad, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    with warnings.catch_warnings():  # a read-only mapping: writing to it is a crash, by design
        warnings.simplefilter("ignore")
        whole = torch.frombuffer(mapping, dtype=torch.uint8, count=stride * slots + pad)
    skip = -whole.data_ptr() % pad if pad else 0
    whole = whole[skip:skip + stride * slots]
    views = [{name: whole[start + offset:start + offset + n].view(t.dtype).reshape(t.shape)
              for (name, t), offset, n in zip(like.items(), offsets, sizes)}
             for start in range(0, stride * slots, stride)]
    return views, [(whole.data_ptr() + start, stride) for start in range(0, stride * slots, stride)]


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
MAP_FIXED, MAP_POPULATE = 0x10, 0x8000  # Linux's


def _map_over(region: tuple[int, int], fd: int) -> None:
    """Map the file `fd` read-only over `region` (address, bytes), its pages populated: the
    call's tensors there see the file, and take no page fault on it."""
    address, length = region
    got = _LIBC.mmap(address, length, mmap.PROT_READ, mmap.MAP_SHARED | MAP_FIXED | MAP_POPULATE,
                     fd, 0)
    if got != address:
        error = ctypes.get_errno()
        raise OSError(error, f"the released set could not be mapped: {os.strerror(error)}")




class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _Cmsg(ctypes.Structure):  # a cmsghdr with room for one descriptor (CMSG_SPACE)
    _fields_ = [("length", ctypes.c_size_t), ("level", ctypes.c_int), ("type", ctypes.c_int),
                ("fd", ctypes.c_int), ("pad", ctypes.c_int)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(_Iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.POINTER(_Cmsg)), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


_LIBC.recvmsg.restype = ctypes.c_ssize_t
_LIBC.recvmsg.argtypes = [ctypes.c_int, ctypes.POINTER(_Msghdr), ctypes.c_int]
MSG_DONTWAIT, MSG_CTRUNC = 0x40, 0x8  # Linux's


class _Receiver:
    """One release record and its descriptor at a time, from a non-blocking socket, through
    libc's recvmsg with its buffers made once (socket.recv_fds costs ~4 µs a call, in the
    call's time on the judge's clock; this ~1.5 µs)."""

    def __init__(self, sock: socket.socket):
        self.fileno = sock.fileno()
        self.data = ctypes.create_string_buffer(protocol.RELEASE.size)
        self.iov = _Iovec(ctypes.cast(self.data, ctypes.c_void_p), protocol.RELEASE.size)
        self.cmsg = _Cmsg()
        self.msg = _Msghdr(None, 0, ctypes.pointer(self.iov), 1, ctypes.pointer(self.cmsg),
                           ctypes.sizeof(_Cmsg), 0)
        self.msg_ref = ctypes.byref(self.msg)

    def receive(self) -> tuple[int, int | None] | None:
        """(the record's call index, its descriptor or None), or None when nothing waits."""
        msg, cmsg = self.msg, self.cmsg
        msg.controllen, msg.flags, cmsg.length = ctypes.sizeof(_Cmsg), 0, 0
        got = _LIBC.recvmsg(self.fileno, self.msg_ref, MSG_DONTWAIT)
        if got < 0:
            return None
        fd = cmsg.fd if (msg.controllen >= ctypes.sizeof(_Cmsg) - 4 and cmsg.level == socket.SOL_SOCKET
                         and cmsg.type == socket.SCM_RIGHTS) else None
        if got != protocol.RELEASE.size or msg.flags & MSG_CTRUNC:
            if fd is not None:
                os.close(fd)
            return (-1, None)
        return protocol.RELEASE.unpack(self.data.raw)[0], fd


class Release:
    """The harness's end of the judge's release of a timed turn's inputs, a call at a time (see
    protocol.py, "Release"; judge/measure/release.py): the socket the descriptors come on, and
    the control page of the outputs file (`outputs`, holding `slots` sets of `like`)."""

    def __init__(self, path: str, outputs: str, like: dict[str, torch.Tensor], slots: int,
                 mapped: bool = True):
        self.mapped = mapped  # sets come as files to map (else the judge writes them in place)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # through the folder's descriptor: a socket's path has at most 107 bytes
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.sock.connect(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
        finally:
            os.close(folder)
        self.sock.setblocking(False)
        self.receiver = _Receiver(self.sock)
        offset = protocol.control_offset([t.numel() * t.element_size() for t in like.values()],
                                         slots)
        with open(outputs, "r+b") as f:
            self.control = mmap.mmap(f.fileno(), protocol.CONTROL_BYTES, offset=offset)
        self.taken = 0  # calls released to this harness so far (the point's)
        self.mapped_ns = 0  # time spent mapping them (their pages populated), so far

    def take(self, index: int, inputs: InputSet) -> None:
        """Wait for call `index`'s inputs (written in place, or a file to map where its tensors
        are). The wait spins: a sleeping thread's wake-up would be part of the call's time on
        the judge's clock."""
        control, unpack, taken = self.control, protocol.COUNT.unpack_from, self.taken
        while unpack(control, protocol.RELEASED_AT)[0] <= taken:
            pass
        if not self.mapped:  # written in place before the count
            self.taken = taken + 1
            if inputs.staged:
                inputs.released(None)
            return
        receive = self.receiver.receive
        got = receive()
        while got is None:  # the count says the descriptor was sent: it is on its way
            got = receive()
        index_got, fd = got
        if fd is None or index_got != index:
            if fd is not None:
                os.close(fd)
            raise Refused("RE", "a release out of order: the release channel was used by the "
                                "run itself")
        try:
            start = _perf_counter_ns()
            inputs.released(fd)
            self.mapped_ns += _perf_counter_ns() - start
        finally:
            os.close(fd)
        self.taken = taken + 1

    def done(self) -> None:
        """Count the call taken last as done."""
        protocol.COUNT.pack_into(self.control, protocol.DONE_AT, self.taken)

    def close(self) -> None:
        self.sock.close()
        self.control.close()


class Gate:
    """A timed turn's release, call by call: the first call's set taken while the turn is
    prepared (`open`: the judge released it before the turn's requests), each next one in
    `take(index)` before the call's clock starts; `done(index)` once the call is over
    (Device.time_batch)."""

    def __init__(self, release: Release, sets: list[InputSet]):
        self.release, self.sets = release, sets

    def open(self) -> None:
        if self.sets:  # (a turn of no calls: the request's own cost, measured)
            self.release.take(0, self.sets[0])

    def take(self, index: int) -> None:
        if index:
            self.release.take(index, self.sets[index])

    def done(self, index: int) -> None:
        self.release.done()


def _map_sets(path: str, like: dict[str, torch.Tensor], writable: bool,
              slots: int = 1) -> list[dict]:
    """Views of a raw file shared with the judge, laid out as `like` (in order, on the CPU): the
    file holds `slots` sets of that layout one after another (protocol.set_layout, slot_stride
    apart), mapped once (a mapping per set cost ~0.1 s a test point of a thousand sets)."""
    sizes = [t.numel() * t.element_size() for t in like.values()]
    offsets, span = protocol.set_layout(sizes)
    stride = protocol.slot_stride(span)
    length = stride * (slots - 1) + max(span, 1)
    with open(path, "r+b" if writable else "rb") as f:
        mapping = mmap.mmap(f.fileno(), length,
                            access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ)
    with warnings.catch_warnings():  # a read-only mapping: writing to it is a crash, by design
        warnings.simplefilter("ignore")
        whole = torch.frombuffer(mapping, dtype=torch.uint8, count=length)
    return [{name: whole[start + offset:start + offset + n].view(t.dtype).reshape(t.shape)
             for (name, t), offset, n in zip(like.items(), offsets, sizes)}
            for start in range(0, stride * slots, stride)]


def _region(t: torch.Tensor) -> protocol.Region:
    return t.data_ptr(), t.numel() * t.element_size()


def _layout(t: torch.Tensor) -> tuple:
    return type(t), t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t.device


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's memory as bytes: compared so, an input is unchanged only if every
    bit is (NaN payloads and -0.0 included), whatever its dtype."""
    return t.reshape(-1).view(torch.uint8)


class Batch(NamedTuple):
    """A timed turn readied by `prepare`: its sets, the kernel called on them (None: an audit,
    each call recorded) and each set's arguments bound for it."""

    sets: list[InputSet]
    kernel: Kernel | None
    bound: list[tuple]
    gate: Gate | None = None  # fresh sets: released by the judge, a call at a time


class Harness:
    def __init__(self, config: dict, channel: Channel):
        self.config = config
        self.channel = channel
        self.args = config["args"]
        missing = sorted({a["dtype"] for a in self.args if a["role"] != "scalar"} - set(_DTYPES))
        if missing:  # the image's fault, before any contestant code: SE
            raise RuntimeError(f"torch {torch.__version__} in this image has no dtype "
                               f"{', '.join(missing)}: the contest needs a newer PyTorch image")
        self.device = Device(config["device"], config["flush_bytes"])
        if not self.device.is_cuda and config.get("cpu_threads"):
            torch.set_num_threads(config["cpu_threads"])
        if self.device.is_cuda and config.get("gpu_memory_bytes"):
            # torch's allocator fails past the limit at once (MLE); the judge also watches the
            # whole process's device memory from outside, which no code in here can change. The
            # limit is the submission's: the harness's own buffers (the flush's) come on top
            total = torch.cuda.get_device_properties(self.device.torch_device).total_memory
            own = torch.cuda.memory_reserved(self.device.torch_device)
            torch.cuda.set_per_process_memory_fraction(
                min(1.0, (config["gpu_memory_bytes"] + own) / total), self.device.torch_device)
        self.sets: list[InputSet] = []
        self.next_set = 0
        self.prepared: Batch | None = None
        self.fresh: list[InputSet] = []  # the timed calls' fresh inputs, a set per batch slot
        self.release: Release | None = None  # the judge's release of them (see Release)
        self.fresh_bound: dict[tuple[int, int], list[tuple]] = {}  # see _bound
        rule = config.get("operator_rule")
        # the language's runtime packages (config `packages`): their operators are not the
        # submission's, and their versions are reported
        self.packages = config.get("packages") or []
        self.recorder = OperatorRecorder(rule, self.packages) if rule else None
        self.kernel: Kernel | None = None
        self.empty: dict[str, Kernel] = {}  # empty run_kernels by loader (the floor turns')

    def load_kernel(self) -> None:
        if self.config["loader"] == "native":
            self.kernel = native_kernel(*load_native(self.config["artifact"], self.args))
        else:
            self.kernel = Kernel(load_python(self.config["artifact"]))

    def kernel_for(self, empty: str | None) -> Kernel:
        """run_kernel, or with `empty` (a loader) one that does nothing, loaded that way."""
        if not empty:
            return self.kernel
        if empty not in self.empty:
            self.empty[empty] = empty_kernel(empty, self.args, self.device)
        return self.empty[empty]

    def call(self, inputs: InputSet, empty: str | None = None, record: bool = True) -> float:
        """One call of run_kernel on `inputs`: its time in milliseconds (see Device.time_call).
        `empty` (a loader): of a run_kernel that does nothing instead, loaded that way.
        `record`: with the problem's operator rule enforced (the checked and warm-up calls; a
        timed call is not, so that a Triton or TileLang contender pays no Python dispatch per
        ATen call that the baseline does not)."""
        kernel = self.kernel_for(empty)
        if empty or self.recorder is None or not record:
            ms = self.device.time_call(lambda: kernel(inputs.values), kernel.check)
        else:
            with self.recorder:  # entered and left outside the measured call
                ms = self.device.time_call(lambda: kernel(inputs.values), kernel.check)
        inputs.verify_layout()
        return ms

    def op_load(self, msg: dict) -> dict:
        for fresh in self.fresh:
            fresh.unpin()
        if self.release is not None:
            self.release.close()
        self.sets, self.prepared, self.fresh, self.fresh_bound = [], None, [], {}
        self.release = None
        self.collected = []
        if self.device.is_cuda:
            torch.cuda.empty_cache()  # the last test point's tensors go back to the device
        for file in msg["files"]:
            self.sets.append(InputSet(file, self.args, msg["outputs"], self.device.torch_device))
        self.next_set = 0
        shared = msg.get("shared")
        if shared:
            self.fresh = self.sets[0].shared_copies(shared["outputs"], shared.get("slots", 1),
                                                    shared.get("inputs"))
            self.release = Release(shared["release"], shared["outputs"], self.sets[0].outputs,
                                   shared.get("slots", 1), mapped="inputs" not in shared)
        self.device.synchronize()
        # what exists now (torch, the submission, the sets) is never garbage: kept out of the
        # collector's scans, so that a collection a timed batch triggers is short
        gc.collect()
        gc.freeze()
        return {"ok": True, "pinned": bool(self.fresh) and all(f.pinned for f in self.fresh)}

    def op_run(self, msg: dict) -> dict:
        inputs = self.sets[msg["set"]]
        for t in inputs.outputs.values():
            poison(t)
        ms = self.call(inputs)
        modified = inputs.modified_inputs()
        if modified:
            return {"ok": False, "kind": "WA",
                    "error": f"run_kernel modified its input(s) {', '.join(modified)}"}
        _save(inputs.outputs, msg["save"])
        return {"ok": True, "ms": ms}

    def op_warm(self, msg: dict) -> dict:
        self.call(self.sets[msg["set"]])
        return {"ok": True}

    def op_profile(self, msg: dict) -> dict:
        """One call between cudaProfilerStart and cudaProfilerStop: what a profiler started
        with profiling off (Nsight Compute's --profile-from-start off) records."""
        inputs = self.sets[msg["set"]]
        for t in inputs.outputs.values():
            poison(t)
        self.device.synchronize()
        if self.device.is_cuda:
            torch.cuda.profiler.start()
        try:
            self.call(inputs)
        finally:
            if self.device.is_cuda:
                torch.cuda.profiler.stop()
        return {"ok": True}

    def op_warmup(self, msg: dict) -> dict:
        deadline = _perf_counter_ns() + msg["seconds"] * 1e9
        calls = 0
        while calls < msg["min_calls"] or _perf_counter_ns() < deadline:
            self.op_prepare({"record": True})  # untimed: the rule holds here too
            self.op_time({})
            self.op_collect({})
            calls += 1
        return {"ok": True, "calls": calls}

    def op_prepare(self, msg: dict) -> dict:
        """Ready a timed turn, in a request of its own so that the judge's clock around `time`
        holds the calls and as little else as can be: the turn's sets (`fresh`: the first
        `calls` fresh sets, whose inputs the judge releases a call at a time during `time`,
        their outputs poisoned by the judge, on a GPU here on the device; else the next loaded
        set, poisoned), their arguments bound for the run_kernel that
        `empty` names or the submission's (`record`: an audit, each call recorded), the cache
        flushed (on the CPU the judge flushes from outside once this is answered). The last
        turn's first and last sets are checked first: still the tensors run_kernel was given
        (every set, on a GPU, in `collect`; on the CPU the judge reads the shared outputs that a
        swapped tensor would leave poisoned). Nothing here grows with the batch on the CPU,
        where the run's CPU time over the turn is compared with the baseline's."""
        for inputs in self.collected[:1] + self.collected[1:][-1:]:
            inputs.verify_layout()
        calls = msg.get("calls", 1)
        if msg.get("fresh"):
            sets = self.fresh[:calls]
        else:
            sets = [self.sets[self.next_set]]
            self.next_set = (self.next_set + 1) % len(self.sets)
        for inputs in sets:
            if msg.get("fresh") and not inputs.staged:
                continue  # the shared outputs themselves, which the judge poisoned
            for name, t in inputs.outputs.items():
                if inputs.staged and t.dtype in _PACKED:
                    # the judge's own random poison, from the shared file it just poisoned:
                    # the judge recognises a call that left it (measure/fresh_rounds.looks_skipped)
                    t.view(torch.uint8).copy_(inputs.host_outputs[name].view(torch.uint8),
                                              non_blocking=True)
                else:
                    poison(t)
        audit = bool(msg.get("record")) and self.recorder is not None
        kernel = None if audit else self.kernel_for(msg.get("empty"))
        gate = Gate(self.release, sets) if msg.get("fresh") and self.release else None
        self.prepared = Batch(sets, kernel, [] if kernel is None else self._bound(
            kernel, sets, calls if msg.get("fresh") else None), gate)
        if gate is not None:
            gate.open()
        self.device.flush_cache()
        self.device.synchronize()  # on a GPU the fills are asynchronous
        return {"ok": True}

    def _bound(self, kernel: Kernel, sets: list[InputSet], fresh_calls: int | None
               ) -> list[tuple]:
        """Each set's arguments for `kernel`; for the first `fresh_calls` fresh sets, bound once
        a test point."""
        if fresh_calls is None:
            return [kernel.bind(inputs.values) for inputs in sets]
        key = (id(kernel), fresh_calls)
        if key not in self.fresh_bound:
            self.fresh_bound[key] = [kernel.bind(inputs.values) for inputs in sets]
        return self.fresh_bound[key]

    def op_time(self, msg: dict, record: bool = False) -> dict:
        """A timed turn: the calls `prepare` readied, one after another, each on its own set
        (without a `prepare`, readied here: warm-up and direct use). Replies with every call's
        reported time."""
        if self.prepared is None:
            self.op_prepare({**msg, "record": record or msg.get("record", False)})
        batch, self.prepared = self.prepared, None
        if len(batch.sets) != msg.get("calls", len(batch.sets)):
            raise Refused("RE", "the timed request does not match the batch prepared for it")
        mapped = self.release.mapped_ns if self.release is not None else 0
        collecting = gc.isenabled()
        gc.disable()  # a collection in a batch (milliseconds) is noise the clock would charge
        try:
            if batch.kernel is None:  # an audit, left out of the timing
                times = self._audit(batch)
            else:
                times = self.device.time_batch(batch.kernel, batch.bound, batch.gate)
        finally:
            if collecting:
                gc.enable()
        self.collected = batch.sets
        mapped = (self.release.mapped_ns - mapped) / 1e6 if self.release is not None else 0.0
        return {"ok": True, "reports": protocol.pack_reports(times), "mapped_ms": mapped}

    collected: list[InputSet] = []  # the last timed turn's sets, until `collect`

    def _audit(self, batch: Batch) -> list[float]:
        """An audit's calls, each recorded, released as a timed turn's are."""
        times = []
        for index, inputs in enumerate(batch.sets):
            if batch.gate is not None:
                batch.gate.take(index)
            times.append(self.call(inputs, record=True))
            if batch.gate is not None:
                batch.gate.done(index)
        return times

    def op_probe(self, msg: dict) -> dict:
        """Asked of the baseline's harness (no contestant code) before its turn on a GPU: is
        the device still running work of another process (the submission's, escaped past its
        turn's synchronize: another thread, a context of its own, a child)? Waits for it to
        idle, `wait_s` at most; replies the first probe's wait beyond an idle one's and the
        time waited (ms)."""
        busy, waited = self.device.await_idle(float(msg.get("wait_s", 1.0)))
        return {"ok": True, "busy_ms": busy, "waited_ms": waited}

    def op_collect(self, msg: dict) -> dict:
        """After a timed turn on a GPU, in a request of its own (the copy varies with the
        process, the judge compares it with the baseline's): the outputs back to the file."""
        batch, self.collected = self.collected, []
        for inputs in batch:
            inputs.verify_layout()
        staged = [inputs for inputs in batch if inputs.staged]
        for inputs in staged:
            inputs.stage_out()
        if staged:
            self.device.synchronize()
        return {"ok": True}

    def serve(self) -> None:
        handlers = {"load": self.op_load, "run": self.op_run, "warm": self.op_warm,
                    "profile": self.op_profile,
                    "warmup": self.op_warmup, "prepare": self.op_prepare, "time": self.op_time,
                    "collect": self.op_collect, "probe": self.op_probe}
        for line in sys.stdin.buffer:
            received = _perf_counter_ns()
            msg = json.loads(line)
            if msg["op"] == "exit":
                break
            try:
                reply = handlers[msg["op"]](msg)
            except Refused as exc:
                reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
            except BaseException as exc:  # noqa: BLE001 - any failure of the submission is RE
                if isinstance(exc, KeyboardInterrupt):
                    raise
                kind = "MLE" if isinstance(exc, _OUT_OF_MEMORY) else "RE"
                reply = {"ok": False, "kind": kind, "error": _format_error(exc)}
            self.channel.reply_handled(received, id=msg.get("id"), **reply)
        self.channel.reply(ok=True, bye=True)


def _save(outputs: dict[str, torch.Tensor], path: str) -> None:
    """The outputs, raw, in signature order (the harness allocated them contiguous)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    host = [t if t.device.type == "cpu" else t.cpu() for t in outputs.values()]
    protocol.write_raw(path, [_region(t) for t in host])


def _format_error(exc: BaseException) -> str:
    if isinstance(exc, DeviceError):
        return str(exc)[-protocol.MAX_ERROR:]
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text[-protocol.MAX_ERROR:]


def versions(packages: list[str]) -> dict:
    found = {"python": sys.version.split()[0], "torch": torch.__version__}
    for name in packages:
        module = sys.modules.get(name)
        if module is not None:
            found[name] = getattr(module, "__version__", "?")
    if torch.cuda.is_available():
        found["cuda_runtime"] = torch.version.cuda
    return found


def configure(config: dict) -> None:
    """What the judging sets in this process before anything else runs in it: the language's
    environment, the file size limit (only ever lowered) and the CPUs (the control group holds
    them too, where the host has one)."""
    env = dict(config.get("env") or {})
    if "PATH" in env:  # the language's folders first, the image's own kept (/opt/conda/bin)
        env["PATH"] = os.pathsep.join(dict.fromkeys(
            f for f in (env["PATH"] + os.pathsep + os.environ.get("PATH", "")).split(os.pathsep)
            if f))
    os.environ.update(env)
    limit = config.get("file_size_bytes")
    if limit is not None:
        _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    if config.get("cpus"):
        os.sched_setaffinity(0, config["cpus"])


def main() -> None:
    channel = Channel()
    # started ahead of its judging (a warm slot): torch is imported, nothing else has happened
    channel.reply(ok=True, stage="warm")
    line = sys.stdin.buffer.readline()
    try:
        message = json.loads(line)
        if message.get("op") != "config":
            raise ValueError(f"the first request is {message.get('op')!r}, not config")
        config = message["config"]
        configure(config)
        harness = Harness(config, channel)
    except BaseException as exc:  # noqa: BLE001 - the environment, not the submission
        channel.reply(ok=False, kind="SE", error=_format_error(exc))
        return
    # From here on contestant code runs in this process: the judge treats any later claim of a
    # system error as the submission's own failure. First it reads what the harness alone holds
    # (its device context and flush buffers), then says `begin`.
    channel.reply(ok=True, stage="harness")
    go = json.loads(sys.stdin.buffer.readline() or b"{}")
    if go.get("op") != "begin":
        return
    try:
        harness.load_kernel()
    except BaseException as exc:  # noqa: BLE001
        kind = "CE" if isinstance(exc, (LoadError, SyntaxError, OSError)) else "RE"
        channel.reply(ok=False, kind=kind, error=_format_error(exc))
        return
    channel.reply(ok=True, ready=True, versions=versions(harness.packages),
                  device=harness.device.describe())
    harness.serve()


if __name__ == "__main__":
    main()
