"""What a TileLang can do, probed from its package without importing it (standard library only).

A release, a user's wheel or an environment is probed from its files (tilelang_source.SourceTree): the trace
modes whose entry points it has (tilelang_source.ENTRY_POINTS: lower_trace, TL_LOWER_TRACE, pass_diff), the pass
configs its ``PassConfigKey`` defines, and whether its native library registers the HIP codegen that
``tilelang.lower`` calls for the hip target (up to 0.1.9 it does not: "Cannot find global function
target.build.tilelang_hip_without_compile"), and how the knockout reaches ``tilelang.compile`` (the GPU stage's
variants): through TileLang's compile session (``tilelang.instrumentation.compile_pass_instrumentation``, 0.1.14 on)
or by appending its instrument to every PassContext (pass_knockout.compile_knockout). Mode instrument needs none of
these: a TVM pass instrument works in every TileLang from 0.1.8.

    from tilelang_churn.releases import capabilities
    probed = capabilities.probe(tilelang_source.env_source(".envs/tilelang-0.1.14"))
    probed.modes, probed.hip_lowers, probed.as_record()
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

from tilelang_churn.core import trace_modes
from tilelang_churn.kernel import tilelang_source

# the HIP codegen's global function: its name is in the native library of a TileLang that registers it
HIP_CODEGEN = b"target.build.tilelang_hip_without_compile"
NATIVE_LIBRARY = "tilelang/lib/libtilelang.so"
INSTRUMENTATION = "tilelang/instrumentation/__init__.py"  # the compile session's module (0.1.14 on)


@dataclass(frozen=True)
class Capabilities:
    """What one TileLang offers, as its package says."""

    modes: tuple[str, ...]  # the trace modes it serves (instrument always), trace_modes.MODES order
    pass_configs: tuple[str, ...] | None  # its PassConfigKey values; None: no PassConfigKey
    hip_lowers: bool | None  # its native library registers the HIP codegen; None: the library was not found
    knockout_compile_hook: str = "pass_context"  # session | pass_context (pass_knockout.COMPILE_HOOKS)

    @property
    def lower_trace(self) -> bool:
        return "trace-env" in self.modes

    @property
    def pass_diff(self) -> bool:
        return "pass-diff" in self.modes

    def supports(self, mode: str) -> bool:
        return mode in self.modes

    def as_record(self) -> dict:
        """A JSON-ready record (environment.json, results/versions.csv)."""
        return {
            "modes": list(self.modes),
            "lower_trace": self.lower_trace,
            "pass_diff": self.pass_diff,
            "hip_lowers": self.hip_lowers,
            "knockout_compile_hook": self.knockout_compile_hook,
            "pass_configs": list(self.pass_configs) if self.pass_configs is not None else None,
        }

    def summary(self) -> str:
        """One line: 'modes instrument, trace-env, ...; hip yes; 25 pass configs'."""
        hip = {True: "yes", False: "no", None: "unknown"}[self.hip_lowers]
        configs = "no PassConfigKey" if self.pass_configs is None else f"{len(self.pass_configs)} pass configs"
        return f"modes {', '.join(self.modes)}; hip lowering {hip}; {configs}"


def probe(source: tilelang_source.SourceTree, native_library: Path | None = None) -> Capabilities:
    """The capabilities of the TileLang of ``source``. ``native_library``: its libtilelang.so where the source is
    not a folder of files (a wheel: the library is read from the archive)."""
    missing = tilelang_source.missing_for_modes(tilelang_source.locate_entry_points(source), trace_modes.MODES)
    modes = tuple(mode for mode in trace_modes.MODES if mode not in missing)
    keys = tilelang_source.pass_config_keys(source)
    configs = tuple(sorted(keys)) if keys is not None else None
    session = "compile_pass_instrumentation" in (source.read(INSTRUMENTATION) or "")
    hook = "session" if session else "pass_context"
    return Capabilities(modes, configs, _registers_hip(source, native_library), hook)


def _registers_hip(source: tilelang_source.SourceTree, native_library: Path | None) -> bool | None:
    path = native_library or source.path_of(NATIVE_LIBRARY)
    if path is not None:
        try:
            with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(HIP_CODEGEN) >= 0
        except (OSError, ValueError):
            return None
    data = source.read_bytes(NATIVE_LIBRARY)
    return None if data is None else HIP_CODEGEN in data
