"""A trace batch as one file, for Snakemake's between-workflow cache (config trace_cache): its jobs' folders and logs
packed into one tar after the batch, unpacked into place by the rule that owns the jobs' files.

A cached rule's outputs are stored in the cache and fetched from it as they are: one tar carries every file of the
batch's jobs (passes.csv, run.json, ir.json.gz, TileLang's run record where kept, each job's log), whatever a job
wrote. Members are the paths as given, relative to the working directory; unpacking refuses any other (an
absolute path, ``..``, a link: tarfile's ``data`` filter). Standard library only.
"""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

from tilelang_churn.core import files


def pack(archive: str | Path, paths: list[str]) -> int:
    """PATHS (folders and files, relative to the working directory; a missing one left out) written to ARCHIVE,
    atomically, in the order given and sorted within each folder, so that the same files give the same bytes
    apart from their times; the number of files packed."""
    packed = 0
    with files.atomic_file(archive, binary=True) as handle, tarfile.open(fileobj=handle, mode="w") as tar:
        for path in paths:
            if os.path.isabs(path) or ".." in Path(path).parts:
                raise ValueError(f"{path}: not a path inside the working directory")
            for member in _walk(Path(path)):
                tar.add(member, recursive=False)
                packed += member.is_file()
    return packed


def _walk(path: Path) -> list[Path]:
    if not path.exists():
        return []
    if not path.is_dir():
        return [path]
    return [path, *(member for child in sorted(path.iterdir()) for member in _walk(child))]


def unpack(archive: str | Path, into: str | Path = ".") -> list[str]:
    """ARCHIVE's files written under INTO (files already there replaced); their paths as packed."""
    with tarfile.open(archive, mode="r") as tar:
        members = tar.getmembers()
        tar.extractall(into, members=members, filter="data")
    return [member.name for member in members if member.isfile()]


def unpack_outputs(archive: str | Path, outputs: list[str]) -> int:
    """The rule <batch>_files: ARCHIVE unpacked in place; 1, naming the first, when it lacks one of OUTPUTS."""
    unpacked = set(unpack(archive))
    missing = [path for path in outputs if path not in unpacked]
    if missing:
        print(f"trace_archive.py: error: {archive} lacks {len(missing)} file(s): {missing[0]}, ...", file=sys.stderr)
        return 1
    return 0


def unpack_and_list(archive: str | Path) -> int:
    """ARCHIVE's files unpacked into the working directory (``unpack``), their paths printed."""
    for path in unpack(archive):
        print(path)
    return 0
