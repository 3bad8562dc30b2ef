"""A TileLang "maintainer's build" for the tests: the installed release's files, one file edited, re-zipped as a
wheel of a local version (0.1.15+test), as a TileLang developer's own wheel would be."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_of_installed(dest: Path, local: str, edits: dict[str, Callable[[str], str]] | None = None) -> Path:
    """A wheel in DEST of the installed tilelang with version <installed>+<local>, each file of ``edits``
    (relative path -> a function of its text) changed; the files listed in its RECORD, nothing else."""
    dist = metadata.distribution("tilelang")
    version = f"{dist.version.split('+')[0]}+{local}"
    old_info = f"tilelang-{dist.version}.dist-info"
    new_info = f"tilelang-{version}.dist-info"
    site = Path(dist.locate_file(""))
    wheel_text = dist.read_text("WHEEL")
    tags = [line.split(":", 1)[1].strip() for line in wheel_text.splitlines() if line.startswith("Tag:")]
    python_tag, abi_tag, _ = tags[0].split("-")
    platforms = ".".join(sorted({tag.split("-")[2] for tag in tags}))
    wheel = dest / f"tilelang-{version}-{python_tag}-{abi_tag}-{platforms}.whl"
    edits = dict(edits or {})
    records = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files:
            name = str(file)
            if "__pycache__" in name or name.startswith(old_info):
                continue
            path = site / name
            data = path.read_bytes()
            if name in edits:
                data = edits.pop(name)(data.decode("utf-8")).encode("utf-8")
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
            archive.writestr(info, data)
            records.append(f"{name},{_record_hash(data)},{len(data)}")
        meta = re.sub(r"^Version: .*$", f"Version: {version}", dist.read_text("METADATA"), count=1, flags=re.M)
        for name, text in ((f"{new_info}/METADATA", meta), (f"{new_info}/WHEEL", wheel_text)):
            archive.writestr(name, text)
            records.append(f"{name},{_record_hash(text.encode())},{len(text.encode())}")
        archive.writestr(f"{new_info}/RECORD", "\n".join([*records, f"{new_info}/RECORD,,"]) + "\n")
    assert not edits, f"not in the distribution: {sorted(edits)}"
    return wheel
