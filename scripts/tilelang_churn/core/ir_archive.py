"""The IR archive of a job (``ir.json.gz`` beside its passes.csv): every printed IR text once, by step.

    {"format": 1, "initial": int | None, "steps": [{"step": int, "pass": str, "before": int, "after": int | None}],
     "texts": [str, ...], "kernel_source": str | None}

``initial``/``before``/``after`` index ``texts``; ``after`` is None for a pass run that failed; ``before`` (the IR
the run was handed) is optional: archives written before it existed lack it. The tracer writes it
(mode instrument with ``--keep ir``), the comparison of releases reads it. Written as gzip-compressed JSON,
byte-for-byte reproducible (sorted keys, no file name and mtime 0 in the gzip header), atomically.
Standard library only.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from tilelang_churn.core import files

NAME = "ir.json.gz"
FORMAT = 1


def write(ir: dict, path: str | os.PathLike) -> int:
    """Write ``ir`` (a format-1 archive); returns the bytes written."""
    payload = json.dumps(ir, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data = gzip.compress(payload, compresslevel=6, mtime=0)  # gzip.compress stores no file name
    files.write_bytes(Path(path), data)
    return len(data)


def read(path: str | os.PathLike) -> dict:
    """Read and check one archive; ValueError (OSError when unreadable) when it is not a format-1 archive."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except EOFError as exc:  # a truncated gzip stream
        raise ValueError(f"truncated: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not an IR archive of format {FORMAT}")
    texts = data.get("texts")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ValueError("'texts' is not a list of strings")
    steps = data.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("step"), int) for s in steps):
        raise ValueError("'steps' is not a list of {step, pass, after} objects")
    for index in [data.get("initial")] + [s.get(key) for s in steps for key in ("before", "after")]:
        if index is not None and not (isinstance(index, int) and 0 <= index < len(texts)):
            raise ValueError(f"text index {index!r} out of range (0..{len(texts) - 1})")
    return data


def text_at(archive: dict, index: int | None) -> str | None:
    """The text an ``initial``/``after`` index names; None for None."""
    return None if index is None else archive["texts"][index]
