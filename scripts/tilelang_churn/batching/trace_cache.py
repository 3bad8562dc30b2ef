"""The key of a cached trace batch (config trace_cache, Snakemake's between-workflow cache) beyond its jobs' arguments
(the rule's params): its release, the tracing code (the package and the entry scripts) with the release data (its
pins), and every kernel file it traces, each by content.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tilelang_churn.batching.batches import Batch
from tilelang_churn.kernel import kernels
from tilelang_churn.releases import release_envs

PACKAGE = "tilelang_churn"


def code_digest(scripts: str | Path, releases_file: str | Path = release_envs.RELEASES_FILE) -> str:
    """The sha256 of the tracing code, the entry scripts (``scripts``/*.py) and the package's modules (every .py file
    below ``scripts``/tilelang_churn, found, not listed), and of the release data (``releases_file``)."""
    scripts = Path(scripts)
    code = sorted(scripts.glob("*.py")) + sorted((scripts / PACKAGE).rglob("*.py"))
    code += [Path(releases_file)]
    return hashlib.sha256(b"".join(path.read_bytes() for path in code)).hexdigest()


def kernel_sources(batch: Batch) -> list[tuple[str, Path]]:
    """(name, file) of every kernel file a batch builds: a user's file as configured and the modules it imports from
    its folder, a shipped one by its name (its path differs between checkouts, its content does not)."""
    found = {}
    for job in batch.jobs:
        if job.kernel_file:
            found.update({name: Path(name) for name in kernels.kernel_files_of([job.kernel_file])})
        else:
            found[f"shipped {job.spec.source}"] = kernels.shipped(job.spec.source)
    return sorted(found.items())


def cache_key(batch: Batch, code: str) -> dict:
    """What decides a cached batch's files besides its jobs' arguments: its release, the tracing code's digest
    (``code``: code_digest) and each kernel file's sha256."""
    return {
        "release": batch.version,
        "code": code,
        "kernels": {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in kernel_sources(batch)},
    }
