"""A job of the grid: its spec (core/job_spec.py) and the wildcard values that name its folders and files, with the
trace script's arguments made from the spec (trace_cli.job_argv). The grid (job_grid.py) makes them; the batches
(batching/batches.py) group them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from tilelang_churn.core import jobs
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.trace import trace_cli


@dataclass(frozen=True)
class Job:
    """One job of the grid: its wildcard values, which name its folders and files, and its spec, from which its
    arguments are made."""

    version: str
    target: str
    shape: str  # the configuration's folder id
    mode: str
    spec: JobSpec = field(compare=False)
    args: tuple[str, ...] = field(init=False, compare=False)  # the trace script's arguments (without --out)

    def __post_init__(self):
        object.__setattr__(self, "args", trace_cli.job_argv(self.spec))

    @classmethod
    def of(cls, spec: JobSpec, configuration: str) -> Job:
        return cls(spec.version_name or spec.release, spec.target_name, configuration, spec.mode, spec)

    @property
    def release_env(self) -> str | None:
        """The release's own environment (release_envs.py); None: the release installed beside the workflow."""
        return self.spec.release_env

    @property
    def kernel_file(self) -> str | None:
        """A user's kernel file as configured (an input of the job's batch: editing it retraces its jobs); None:
        a shipped kernel."""
        return self.spec.source if self.spec.user_file else None

    @property
    def wildcards(self) -> dict:
        return {"version": self.version, "target": self.target, "shape": self.shape, "mode": self.mode}

    @property
    def command_args(self) -> str:
        """The arguments as one shell-quoted string (the trace rule's params)."""
        return shlex.join(self.args)

    @property
    def run_dir(self) -> str:
        return jobs.RUN_DIR.format(**self.wildcards)

    @property
    def trace_log(self) -> str:
        return jobs.TRACE_LOG.format(**self.wildcards)
