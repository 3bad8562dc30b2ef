#!/usr/bin/env python3
"""A kernel's settings that its source computes (decorator pass_configs and out_idx, @autotune configs), read by
importing its file, and the files under its folder that the import read. The config check runs it
(tilelang_churn/kernel/kernel_probe.py), in a session of its own, and reads the answer from --answer:

    python3 scripts/kernel_probe.py FILE FUNCTION[,FUNCTION...] [--answer FILE] [--autotune-max N] [--fixed JSON]
        [--device PROFILE_JSON]

One JSON object, {"answer": {function: its settings}, "files": {path: sha256}} (on stdout without --answer);
with --fixed, a callable @autotune configs is called with those parameters; at most N + 1 configs are read; with
--device, the file is imported as if on that GPU (tilelang_churn/kernel/device_profiles.py).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import json
import sys
from pathlib import Path

from tilelang_churn.kernel import kernel_probe


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="the kernel file")
    parser.add_argument("functions", help="its kernels' functions, comma-separated")
    parser.add_argument("--answer", type=Path, help="write the answer to this file (default: stdout)")
    parser.add_argument("--autotune-max", type=int, default=kernel_probe.AUTOTUNE_MAX,
                        help="read at most this many @autotune configs, and one more")  # fmt: skip
    parser.add_argument("--fixed", type=json.loads, help="the parameters a callable @autotune configs is called with")
    parser.add_argument("--device", help="the device profile to import under (core/devices.py Profile.to_json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    functions = args.functions.split(",")
    return kernel_probe.answer(args.file, functions, args.fixed, args.autotune_max, args.answer, args.device)


if __name__ == "__main__":
    raise SystemExit(main())
