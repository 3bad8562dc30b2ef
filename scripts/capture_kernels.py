#!/usr/bin/env python3
"""Run a program once and write every kernel it asks TileLang to build as a config file of `kernels:` entries.

    python3 scripts/capture_kernels.py --out FILE -- COMMAND [ARGS...]

COMMAND runs as it is (its own interpreter and working directory); FILE then holds one entry per kernel, merged
with the entries it already had, and `snakemake --cores 4 --configfile config/config.yaml FILE` traces them.
Without a GPU each kernel is recorded where TileLang would compile it and the program gets a stand-in kernel that
returns zero outputs of the right shapes. See docs/own-kernel.md ("Bring your program").
"""

# no `from __future__` import: an entry file, as the others
import argparse
import sys
from pathlib import Path

from tilelang_churn.grid import kernel_capture


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], usage="%(prog)s --out FILE -- COMMAND [ARGS...]"
    )
    parser.add_argument("--out", type=Path, required=True, help="the config file the kernels are written to")
    parser.add_argument("--cuda-on-cpu", action="store_true",
                        help="without a GPU, make the tensors the program puts on cuda on the CPU instead")  # fmt: skip
    parser.add_argument("--device", metavar="PROFILE",
                        help="without a GPU, answer the program's device questions as this GPU would (H100, H200, "
                        "B200, or a JSON mapping: config device); each entry written names it")  # fmt: skip
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return kernel_capture.capture(args.out, command, args.cuda_on_cpu, args.device)


if __name__ == "__main__":
    raise SystemExit(main())
