#!/usr/bin/env python3
"""One uv environment per TileLang release or wheel: python3 scripts/release_envs.py build --version V --root DIR.

The logic: tilelang_churn/releases/release_envs.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
from pathlib import Path

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.releases import release_envs  # imported under the signal guard

    parser = argparse.ArgumentParser(description=release_envs.__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="validate releases (as the config key `versions`)")
    check.add_argument("versions", nargs="+", metavar="VERSION")
    build = commands.add_parser("build", help="build ROOT/tilelang-VERSION and print its marker path")
    build.add_argument("--version", required=True, help="a release, or with --wheel the name of that wheel's entry")
    build.add_argument("--wheel", type=Path, help="install this TileLang wheel (a user's build) instead of a release")
    build.add_argument(
        "--wheel-sha256", help="refuse the wheel unless it has this sha256 (the one the workflow checked)"
    )
    build.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="NAME==VERSION",
        help="an extra pin instead of those of the nearest listed release (repeatable)",
    )
    build.add_argument("--root", required=True, type=Path)
    build.add_argument("--requirements", default="requirements.txt", type=Path)
    build.add_argument("--log", type=Path, help="default ROOT/tilelang-VERSION.build.log")
    build.add_argument("--uv", type=Path, help="the uv executable (default: beside python, then PATH)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.releases import release_envs, version_entries

    args = build_parser().parse_args(argv)
    if args.command == "check":
        return version_entries.print_checked_versions(args.versions)
    return release_envs.print_built_env(
        args.version, args.root, args.requirements, args.uv, args.log, args.wheel, args.pin or None, args.wheel_sha256
    )


if __name__ == "__main__":
    interrupt.run("release_envs", main)
