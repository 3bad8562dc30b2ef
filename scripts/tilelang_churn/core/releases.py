"""The order of TileLang releases, and a version's release (``0.1.14+cu128`` is 0.1.14).

Releases are ordered by ``release_sort_key``: PEP 440 order through ``packaging.version.Version`` when
importable (0.1.7 < 0.1.7.post3 < 0.1.8rc1 < 0.1.8 < 0.1.10), else a small parser giving the same order for
release/pre/post/dev versions; an unparsable or empty version (TileLang could not be imported) sorts last,
by its text. A version entry that is no release (a user's wheel, an environment) is ordered by the version it
imported, then its name (``version_sort_key``). Standard library only (packaging when present).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

try:  # PEP 440 ordering when available; the fallback parser gives the same order for usual versions
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised by a test through _HAVE_PACKAGING
    Version = None
    InvalidVersion = ValueError
_HAVE_PACKAGING = Version is not None

UNKNOWN_RELEASE = "(unknown)"


def base_version(version: str) -> str:
    """The release of a version string: a local build tag is not a release (0.1.14+cu128 is 0.1.14)."""
    return version.split("+", 1)[0]


def imports_release(imported, expected: str) -> bool:
    """Whether a TileLang of version IMPORTED is what a job of EXPECTED (its --expect-release) asks for: a
    release's local build tag is no other release (0.1.14+cu128 is 0.1.14); a wheel's own (0.1.15+mine) is asked
    for exactly."""
    if not isinstance(imported, str):
        return False
    return imported == expected or ("+" not in expected and base_version(imported) == expected)


def release_sort_key(version: str) -> tuple:
    """Sort key of a tilelang_version: release order, unparsable or empty versions last (by text)."""
    text = str(version).strip()
    if _HAVE_PACKAGING:
        try:
            return (0, Version(text), text)
        except InvalidVersion:
            return (1, text)
    parsed = _fallback_version(text)
    return (0, parsed, text) if parsed is not None else (1, text)


_VERSION_RE = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+[a-z0-9.]*)?$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


def _fallback_version(text: str) -> tuple | None:
    """PEP 440-like order without packaging: release ints (trailing zeros dropped), then dev < pre < final
    < post. 0.1.7 < 0.1.7.post3 < 0.1.8.dev1 < 0.1.8rc1 < 0.1.8."""
    match = _VERSION_RE.match(text)
    if not match:
        return None
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    # one tuple per phase so that tuples of different phases never compare element types they do not share
    if match["pre"] is not None:
        pre = (_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif match["dev"] is not None and match["post"] is None:
        pre = (-1, 0)  # 0.1.8.dev1 precedes 0.1.8a1
    else:
        pre = (3, 0)
    post = int(match["post"] or 0) if match["post"] is not None else -1
    dev = int(match["dev"] or 0) if match["dev"] is not None else float("inf")
    return (tuple(release), pre, post, dev)


def version_sort_key(tilelang_version: str, name: str | None = None) -> tuple:
    """Sort key of a version entry (config ``versions``: a release, a wheel, an environment): the TileLang version
    it imported in release order, then its name (``name`` None: the version itself). A wheel named my-branch that
    imports 0.1.15+test follows 0.1.15, an environment named dev that imports 0.1.14 sits beside 0.1.14."""
    return (release_sort_key(tilelang_version), str(tilelang_version if name is None else name))


def sort_releases(versions: Iterable[str]) -> list[str]:
    """Distinct versions in release order."""
    return sorted(set(versions), key=release_sort_key)


def release_text(version: str) -> str:
    """A release as printed in tables and figures: the unknown release is named so."""
    return version if version else UNKNOWN_RELEASE
