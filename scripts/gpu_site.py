#!/usr/bin/env python3
"""A release's GPU site for the GPU stage (rule gpu_release_site; the command line): TileLang and its pins without
dependencies, layered onto the GPU machine's CUDA torch through PYTHONPATH.

    python3 scripts/gpu_site.py --version 0.1.14 --dest .envs/gpu/tilelang-0.1.14

The logic: tilelang_churn/gpu/gpu_site.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.gpu import gpu_site  # imported under the signal guard

    parser = argparse.ArgumentParser(prog="gpu_site.py", description=gpu_site.__doc__.split("\n\n")[0])
    parser.add_argument("--version", required=True, help="a release, or with --wheel the name of that wheel's entry")
    parser.add_argument("--wheel", help="install this TileLang wheel (a user's build) instead of a release")
    parser.add_argument("--pin", action="append", default=[], metavar="NAME==VERSION", help="an extra pin (repeatable)")
    parser.add_argument("--dest", required=True)
    parser.add_argument(
        "--pip-args", default="", help="more pip options, one string (e.g. --no-index --find-links DIR)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.gpu import gpu_site

    args = build_parser().parse_args(argv)
    return gpu_site.install_site(args.version, args.dest, args.pip_args, args.wheel, args.pin or None)


if __name__ == "__main__":
    interrupt.run("gpu_site", main)
