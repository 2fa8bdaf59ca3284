"""`tilelang`: a Python module defining run_kernel over torch tensors with TileLang kernels.

The harness tells the source which target to compile for through KJUDGE_TILELANG_TARGET:
`c` on the CPU (elementwise kernels with local buffers); on NVIDIA devices a JSON target dict with
the device's architecture, e.g. {"kind": "cuda", "arch": "sm_90a"} (TileLang rejects string targets
with an arch); `maca` on MetaX devices (the MACA build of TileLang).
"""

from __future__ import annotations

import json

from judge.host.device import DeviceInfo
from judge.languages.base import PythonKernelLanguage, on_host
from judge.languages.cuda import LANGUAGE as CUDA
from judge.languages.cuda import cuda_home
from sandbox import Sandbox


class TileLang(PythonKernelLanguage):
    name = "tilelang"
    packages = ("tilelang", "tvm", "tvm_ffi")  # TileLang runs on TVM
    infer_rank = 0  # a TileLang source may import triton too
    jit_cache_env = ("TILELANG_CACHE_DIR",)
    # every target compiles a shape at its first call, `c` too (a C compiler through TVM)
    jit_devices = ("cpu", "cuda", "maca")
    # tilelang.jit, tilelang.autotune; T.prim_func and T.macro (tilelang.language as T)
    kernel_decorators = ("jit", "autotune", "prim_func", "macro")
    starter_imports = "import tilelang\nimport tilelang.language as T\n"

    def runtime_env(self, device: DeviceInfo, sandbox: Sandbox | None = None) -> dict[str, str]:
        target = {"cpu": "c", "cuda": "cuda", "maca": "maca"}[device.kind]
        env = {"TILELANG_CACHE_DIR": "/tmp/tilelang-cache", "TVM_NUM_THREADS": "1"}
        if device.kind == "cuda":  # TileLang runs nvcc at the first call: find it as the judge does
            env.update(CUDA.runtime_env(device, sandbox))
            home = cuda_home() if on_host(sandbox) else None
            if home:  # an image's own CUDA is found by TileLang itself
                env["CUDA_HOME"] = home
            if device.arch:
                target = json.dumps({"kind": "cuda", "arch": device.arch})
        return {"KJUDGE_TILELANG_TARGET": target, **env}


LANGUAGE = TileLang()
