#!/usr/bin/env python3
"""The system packages the tests need beyond requirements.txt, in one table: installed by `make test` and
`make check` (and so by .ci/run) where the machine lets them, asked for by the tests that need them.

    python3 tests/system_packages.py install    # as root with apt-get: install what is missing (Debian names)
    python3 tests/system_packages.py status     # what is missing, and why it would be skipped

Standard library only: it runs before the project's venv exists. Not root (or no apt-get): nothing is
installed, and each test that needs a missing package is skipped with a reason naming it; under CI=true a
missing package fails those tests instead, so a CI run never passes with them unchecked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

# Debian package -> the programs the tests run from it (any one of the names for the browser).
PACKAGES: dict[str, tuple[str, ...]] = {
    "slurm-wlm": ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "srun"),
    "munge": ("munged", "munge", "unmunge"),
    "chromium": ("chromium",),
    # the stub CUDA driver of TileLang 0.1.6 and 0.1.7's environments (releases/cuda_stub.py)
    "binutils": ("nm",),
    "gcc": ("gcc",),
}
# Daemons live in sbin, which a non-login root shell may lack on PATH.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin"])
APT_RETRIES = 3


def missing_programs(package: str) -> list[str]:
    return [name for name in PACKAGES[package] if shutil.which(name, path=SEARCH_PATH) is None]


def missing_packages() -> list[str]:
    return [package for package in PACKAGES if missing_programs(package)]


def can_install() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def install(packages: list[str], log=sys.stderr) -> bool:
    """apt-get install the packages (retried: a mirror that answers badly once, or the dpkg lock held by an
    image's own start-up updates). True when every program is there afterwards."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    apt_log = tempfile.NamedTemporaryFile("w", prefix="apt-", suffix=".log", delete=False)
    print(f"system_packages: apt-get install {' '.join(packages)} (output in {apt_log.name})", file=log)
    for attempt in range(1, APT_RETRIES + 1):
        update = subprocess.run(["apt-get", "update", "-qq"], stdout=apt_log, stderr=apt_log, env=env, check=False)
        command = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=120"]
        done = update.returncode == 0 and (
            subprocess.run([*command, *packages], stdout=apt_log, stderr=apt_log, env=env, check=False).returncode == 0
        )
        if done:
            break
        if attempt < APT_RETRIES:
            time.sleep(10 * attempt)
    still = [package for package in packages if missing_programs(package)]
    for package in still:
        print(
            f"system_packages: {package} still lacks {', '.join(missing_programs(package))} (see {apt_log.name})",
            file=log,
        )
    return not still


def why_missing(package: str) -> str | None:
    """None when the package's programs are there, else the reason a test that needs it gives."""
    missing = missing_programs(package)
    if not missing:
        return None
    how = "installing needs root and apt-get" if not can_install() else "apt-get install did not provide them"
    return (
        f"Debian package {package} is not installed ({', '.join(missing)} not found; {how}: "
        f"python3 tests/system_packages.py install)"
    )


def require(package: str) -> None:
    """In a test: skip with the reason naming the package when it is missing; fail instead under CI=true."""
    import pytest

    reason = why_missing(package)
    if reason is None:
        return
    if under_ci():
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def main(argv: list[str]) -> int:
    if argv == ["status"]:
        for package in PACKAGES:
            print(f"{package}: {why_missing(package) or 'installed'}")
        return 0
    if argv != ["install"]:
        print(__doc__, file=sys.stderr)
        return 2
    missing = missing_packages()
    if not missing:
        return 0
    if not can_install():
        print(
            f"system_packages: not installing {', '.join(missing)} (needs root and apt-get); the tests that need "
            "them are skipped, naming the package" + (" (CI=true: they fail)" if under_ci() else ""),
            file=sys.stderr,
        )
        return 0
    # A failed install is reported; the tests that need the package then skip (or fail under CI=true).
    install(missing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
