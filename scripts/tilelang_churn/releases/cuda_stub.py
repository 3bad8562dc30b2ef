"""What TileLang 0.1.6 and 0.1.7 need to import on a machine without CUDA (config/tilelang_releases.yaml
``cuda_stub: true``): their native libraries link the CUDA driver (``cuLaunchKernel``, ...) and load the CUDA 12
runtime and NVRTC by name. The release's pins install the CUDA 12 runtime and NVRTC wheels; ``install`` then builds
a stub ``libcuda.so.1`` in the environment that defines each driver function TileLang's libraries ask for (nm's
list; every one returns an error code: nothing can run on a GPU, lowering needs none), and a ``.pth`` file that
loads the three libraries globally at the interpreter's start, so TileLang's own loads find them. Nothing outside
the environment is touched. Needs nm and a C compiler (binutils, gcc).
"""

from __future__ import annotations

import re
from pathlib import Path

STUB_DIR = "tlchurn-cuda-stub"
PRELOAD_MODULE = "_tlchurn_cuda_stub"
DRIVER_SYMBOL = re.compile(r"^cu[A-Z]\w*$")
CUDA_ERROR_NOT_SUPPORTED = 801  # what every stub function returns

PRELOAD = '''"""tilelang-churn: the CUDA 12 runtime, NVRTC and a stub CUDA driver, loaded globally before TileLang
(releases/cuda_stub.py): a release that links CUDA imports on a machine without it."""
import ctypes as _ctypes
import glob as _glob
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
for _pattern in ("nvidia/cuda_runtime/lib/libcudart.so.12", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
                 "../../../{stub}/libcuda.so.1"):
    for _path in _glob.glob(_os.path.join(_here, _pattern)):
        _ctypes.CDLL(_os.path.normpath(_path), mode=_ctypes.RTLD_GLOBAL)
'''


def driver_symbols(nm_output: str) -> list[str]:
    """The CUDA driver functions in ``nm -D --undefined-only`` output, sorted, each once."""
    names = {line.split()[-1].split("@")[0] for line in nm_output.splitlines() if line.strip()}
    return sorted(name for name in names if DRIVER_SYMBOL.match(name))


def stub_source(symbols: list[str]) -> str:
    """C source of a libcuda.so.1 defining SYMBOLS, each returning CUDA_ERROR_NOT_SUPPORTED."""
    lines = [f"int {name}(void) {{ return {CUDA_ERROR_NOT_SUPPORTED}; }}" for name in symbols]
    return "/* tilelang-churn: a stub CUDA driver (releases/cuda_stub.py) */\n" + "\n".join(lines) + "\n"


def install(env: Path, run) -> list[str]:
    """Build the stub and the preload file in the environment ENV; RUN(step, argv) runs a command and returns its
    output (release_envs' step runner: a failure names the step). The driver functions defined."""
    site = next((env / "lib").glob("python*/site-packages"))
    libraries = sorted(str(path) for path in (site / "tilelang" / "lib").glob("*.so"))
    symbols = driver_symbols(run("list CUDA driver symbols", ["nm", "-D", "--undefined-only", *libraries]))
    folder = env / STUB_DIR
    folder.mkdir(exist_ok=True)
    (folder / "stub.c").write_text(stub_source(symbols))
    run(
        "build the CUDA driver stub",
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(folder / "libcuda.so.1"),
            str(folder / "stub.c"),
        ],
    )
    (site / f"{PRELOAD_MODULE}.py").write_text(PRELOAD.replace("{stub}", STUB_DIR))
    (site / f"{PRELOAD_MODULE}.pth").write_text(f"import {PRELOAD_MODULE}\n")
    return symbols
