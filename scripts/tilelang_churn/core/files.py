"""The one way this project writes a file: atomically, so that no reader ever sees half of one.

``atomic_file`` opens a sibling temporary and renames it over the target only when the block succeeds; on
any error the temporary is removed and an OSError becomes a ``WriteError`` that names the target (a full
disk is one line, no traceback). Tables, manifests, run.json, IR archives, environment markers and
figures all go through it. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path


def short_name(name: str, limit: int, whole: str, digits: int = 16) -> str:
    """name when it has at most limit characters; else its start and the first digits of the sha256 of whole
    (what the name stands for), limit characters in all: a stable file or rule name that two long texts do not
    share."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(whole.encode("utf-8")).hexdigest()[:digits]
    return f"{name[: limit - digits - 1]}_{digest}"


# Snakemake refuses a wildcard value that ends in one substring repeated 20 times or more (PeriodicWildcardError:
# it reads it as an endless recursion), as a version's name in rule release_env's {version}
_PERIODIC_SUFFIX = re.compile(r"(.+?)\1{19,}\Z", re.S)


def periodic_problem(name: str) -> str | None:
    """Why Snakemake would refuse NAME as a wildcard value ("ends in 'a' repeated 64 times, ..."), else None."""
    found = _PERIODIC_SUFFIX.search(name)
    if found is None:
        return None
    unit = found.group(1)
    return (
        f"ends in {unit!r} repeated {len(found.group(0)) // len(unit)} times, which Snakemake refuses in a name it"
        " reads from a path (an endless recursion to it)"
    )


class WriteError(OSError):
    """A file that could not be written (a full disk, a read-only folder): the message names the file, never
    its temporary, in one line."""

    def __str__(self) -> str:
        reason = self.strerror or "write failed"
        return f"cannot write {self.filename}: {reason[:1].lower()}{reason[1:]}"


class atomic_file:
    """Open a sibling temporary file for writing and rename it over ``path`` only when the block succeeds,
    so no reader ever sees a half-written table. On any error (in the block, or when the last buffer is
    flushed on a full disk) the temporary is removed; an OSError becomes a ``WriteError`` naming ``path``.
    ``binary``: a byte stream (figures), else UTF-8 text with newlines as written."""

    def __init__(self, path: str | Path, binary: bool = False):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.binary = binary

    def __enter__(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.binary:
                self.handle = open(self.tmp, "wb")
            else:
                self.handle = open(self.tmp, "w", newline="", encoding="utf-8")
        except OSError as exc:
            self.tmp.unlink(missing_ok=True)
            raise self._error(exc) from None
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        try:
            try:
                self.handle.close()  # flushes: on a full disk this is where ENOSPC shows
            except OSError:
                if exc_type is None:
                    raise
            if exc_type is None:
                os.replace(self.tmp, self.path)
        except OSError as close_exc:
            self.tmp.unlink(missing_ok=True)
            raise self._error(close_exc) from None
        if exc_type is not None:
            self.tmp.unlink(missing_ok=True)
            if issubclass(exc_type, OSError) and not isinstance(exc, WriteError):
                raise self._error(exc) from None
        return False

    def _error(self, exc: OSError) -> WriteError:
        return WriteError(exc.errno, exc.strerror or str(exc), str(self.path))


def write_json(path: str | Path, data, *, indent: int | None = 2) -> None:
    """Write ``data`` as JSON (a trailing newline), atomically."""
    with atomic_file(path) as handle:
        handle.write(json.dumps(data, indent=indent) + "\n")


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` atomically."""
    with atomic_file(path, binary=True) as handle:
        handle.write(data)


def cached_json(memo: dict, path: Path, compute, keep=lambda answer: True):
    """COMPUTE()'s answer, once per process (MEMO, by PATH) and across runs (PATH, a JSON file read back when it
    holds one). A new answer is written there when KEEP(answer); a folder that cannot be written only means it
    is computed again next time."""
    if path in memo:
        return memo[path]
    try:
        memo[path] = json.loads(Path(path).read_text(encoding="utf-8"))
        return memo[path]
    except (OSError, ValueError):
        pass
    answer = memo[path] = compute()
    if keep(answer):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_json(path, answer)
        except OSError:
            pass
    return answer
