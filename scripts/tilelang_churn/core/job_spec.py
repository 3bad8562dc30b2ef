"""The job spec: one typed record of what a job lowers and how, the one form a job has between processes.

What is lowered: a kernel (its name, where its file is, the function, the parameters, the pass configs); by
which release (``release``: the job must import it; ``release_env``: the environment it runs in); for which
target (its table name and TVM dict); in which trace mode (``None``: a GPU timing job, which lowers under no
tracer) and with which of the mode's options (``passes``, ``keep_ir``, ``keep``).

The grid makes specs (grid/job_grid.py; grid/grid_job.py: a ``Job`` is a spec and the wildcard values that name
its files), and the trace script's command line (trace/trace_cli.py) is the process boundary both ways: ``job_argv``
writes a spec's arguments, the one place the batch, GPU and knockout jobs get theirs from, and ``parse_args`` reads
them back into the same spec. ``provenance`` gives the columns every row of the job carries, ``key`` the job key the
tables group those rows by (core/jobs.py), and ``record`` the spec as run.json holds it. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from tilelang_churn.core import devices, pass_configs, passes_table, trace_modes
from tilelang_churn.core.jobs import job_key
from tilelang_churn.core.targets import SIMT_TARGET_KINDS

DEFAULT_FUNCTION = "build"  # the kernel contract's function (kernel/kernels.py)
DEFAULT_THREADS = 128  # the API modes' MaterializeKernelLaunch threads for a kernel that takes none


def canonical(values: dict) -> str:
    """The params column: canonical JSON, sorted keys, no spaces (one spelling per parameter set)."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class JobSpec:
    """One job. ``source`` is how the job names its kernel file: a shipped kernel's name (workflow/kernels/
    <source>.py) or, with ``user_file``, the user's file as configured; ``kernel_file`` is that file resolved."""

    kernel: str  # the kernel's name in the tables
    source: str
    kernel_file: str
    params: dict  # function(**params) is the kernel; every parameter, defaults included, when it has columns
    kernel_label: str  # the kernel and the parameters it sets away from the function's defaults
    target_name: str
    target: dict
    mode: str | None  # a trace mode (core/trace_modes.py); None: a GPU job
    function: str = DEFAULT_FUNCTION
    user_file: bool = False
    columns: tuple[str, ...] = ()  # its parameters that fill table columns of their own (its file's COLUMNS)
    pass_configs: dict = field(default_factory=dict)  # TileLang's PassConfigKey options; {}: its defaults
    passes: tuple[str, ...] = ()  # the pass list of a mode that takes one
    keep_ir: bool = False  # instrument: keep the IR after every pass (ir.json.gz)
    keep: str = "all"  # which files of the run stay (trace_cli.KEEP_CHOICES)
    release: str | None = None  # the TileLang release the job must import; None: whichever is installed
    release_env: str | None = None  # the release's own environment (or an interpreter); None: the workflow's
    # the name of its version entry (config versions) where it is no release: a user's wheel or environment
    version_name: str | None = None
    reference: str | None = None  # the GPU stage's reference: a function of the kernel's file, called (*inputs)
    # the reference's parameter -> the kernel's parameter or input that gives it, where the names differ
    reference_args: dict = field(default_factory=dict)
    device: str | None = None  # the device profile it is built under (core/devices.py Profile.to_json); None: none
    requirements: tuple[str, ...] = ()  # packages its file imports beyond the environment's (config kernels[i])

    @property
    def target_json(self) -> str:
        return json.dumps(self.target, sort_keys=True)

    @property
    def is_simt(self) -> bool:
        return self.target.get("kind") in SIMT_TARGET_KINDS

    @property
    def threads(self) -> int:
        """Threads per block when the kernel takes them (the API modes' MaterializeKernelLaunch default)."""
        threads = self.params.get("threads")
        return threads if isinstance(threads, int) and not isinstance(threads, bool) else DEFAULT_THREADS

    def provenance(self, tilelang_version: str) -> dict:
        """The provenance columns of every row of this job (passes_table.PROVENANCE_COLUMNS)."""
        device = devices.label_of(self.device)
        on_device = f" on {device}" if device else ""  # what its label gets: " on H100"
        return {
            "tilelang_version": tilelang_version,
            "target_name": self.target_name,
            "target": self.target_json,
            **{name: self.params[name] if name in self.columns else None for name in passes_table.PARAM_COLUMNS},
            "mode": self.mode,
            "source": trace_modes.source_of(self.mode) if self.mode is not None else None,
            "kernel": self.kernel,
            "params": canonical(self.params),
            "kernel_label": self.kernel_label + pass_configs.label(self.pass_configs) + on_device,
            "pass_configs": pass_configs.canonical(self.pass_configs),
            "version_name": self.version_name or tilelang_version,
            "device": device or passes_table.NO_DEVICE,
        }

    @property
    def key(self) -> tuple:
        """The job key of its rows (core/jobs.py JOB_KEY) once traced by ``release``."""
        return job_key(self.provenance(self.release or ""))

    @property
    def lowering(self) -> tuple:
        """What its lowering depends on: two jobs alike here lower alike, whatever their mode records (one
        lowering can serve a trace-env and an instrument job) or which files they keep."""
        return (
            self.kernel, self.source, self.kernel_file, self.function, canonical(self.params), self.user_file,
            pass_configs.canonical(self.pass_configs), self.target_name, self.target_json, self.passes,
            self.release, self.release_env, self.version_name, self.device, self.requirements,
        )  # fmt: skip

    def with_mode(
        self, mode: str | None, passes: tuple[str, ...] = (), keep_ir: bool = False, keep: str = "all"
    ) -> JobSpec:
        """The same lowering in another mode: the pass list only for a mode that takes one, the IR kept only by
        a mode that keeps it (trace_modes.KEEPS_IR); mode None is the configuration's GPU job."""
        takes = mode is not None and trace_modes.MODES[mode].takes_passes
        keeps = keep_ir and mode in trace_modes.KEEPS_IR
        return replace(self, mode=mode, passes=tuple(passes) if takes else (), keep_ir=keeps, keep=keep)

    def record(self) -> dict:
        """The spec as run.json's ``spec`` holds it."""
        return {
            "mode": self.mode,
            "target_name": self.target_name,
            "target": self.target,
            "passes": list(self.passes),
            "kernel": self.kernel,
            "kernel_file": self.kernel_file,
            "function": self.function,
            "params": self.params,
            "kernel_label": self.kernel_label,
            "keep_ir": self.keep_ir,
            "pass_configs": self.pass_configs,
            "device": json.loads(self.device) if self.device else None,
        }
