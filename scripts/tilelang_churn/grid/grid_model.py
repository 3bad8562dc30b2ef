"""The grid of a config: its versions, targets, configurations and modes, and every job, lowering and batch made of
them (job_grid.build_grid fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilelang_churn.batching.batches import Batch
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.grid.kernel_configs import KernelConfig
from tilelang_churn.releases import release_envs
from tilelang_churn.releases.capabilities import Capabilities
from tilelang_churn.releases.version_entries import VersionEntry


@dataclass(frozen=True)
class Grid:
    versions: tuple[str, ...]  # the names of config versions' entries (a release's is its number), config order
    installed: str | None  # the release installed beside the workflow (needs no environment of its own)
    release_env_dir: str  # where the other releases' environments live
    shapes: dict[str, dict]  # the GEMM's configurations: shape id -> its parameters, config order
    targets: dict[str, dict]  # target folder name -> its TVM target dict, config order
    modes: tuple[str, ...]
    # (version, target, shape, mode) -> job, in versions x targets x shapes x modes order
    jobs: dict[tuple[str, str, str, str], Job]
    batches: list[Batch] = field(default_factory=list)
    # every other kernel's configurations: folder id -> KernelConfig, config order
    kernel_configs: dict[str, KernelConfig] = field(default_factory=dict)
    # (version, target, configuration) -> its lowering as a job spec of no mode (a GPU job's), grid order
    lowerings: dict[tuple[str, str, str], JobSpec] = field(default_factory=dict)
    # config knockout, defaults filled (None: off) and its batches: one job per configuration x target x release
    knockout: dict | None = None
    knockout_batches: list[Batch] = field(default_factory=list)
    # (target, configuration folder, mode) that results/compare/release_heatmap shows; None: the script's default
    release_heatmap: tuple[str, str, str] | None = None
    # name -> its entry of config versions (a release, the installed one, a wheel, an environment); config order
    entries: dict[str, VersionEntry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what the workflow tells before it runs (a release not listed)
    # what each version can do, where known before any environment is built (probed_before_build)
    probed: dict[str, Capabilities] = field(default_factory=dict)
    # target name -> the config key that defines it (targets[i], or a kernel entry's kernels[i].targets[j])
    target_keys: dict[str, str] = field(default_factory=dict)

    @property
    def configurations(self) -> list[str]:
        """Every configuration's folder id: the GEMM's shapes, then the other kernels' parameter sets."""
        return [*self.shapes, *self.kernel_configs]

    def job(self, version: str, target: str, shape: str, mode: str) -> Job:
        return self.jobs[(version, target, shape, mode)]

    @property
    def compares_releases(self) -> bool:
        return len(self.versions) > 1

    def release_env(self, version: str) -> str | None:
        """Where the jobs of version entry VERSION run: the environment folder of a release or a wheel, the
        interpreter of an environment entry, None for the release installed beside the workflow."""
        entry = self.entries.get(version)
        if entry is not None and entry.kind == "python":
            return entry.python
        if version == self.installed or (entry is not None and entry.kind == "installed"):
            return None
        return str(release_envs.env_dir(self.release_env_dir, version))

    def builds_environment(self, version: str) -> bool:
        """Whether rule release_env builds the environment of VERSION (a release not installed, a wheel)."""
        entry = self.entries.get(version)
        return entry.builds_environment if entry is not None else self.release_env(version) is not None
