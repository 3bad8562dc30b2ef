#!/usr/bin/env python3
"""A cached trace batch's files put in place from its archive (the rule's `script:` under config trace_cache):

    python3 scripts/trace_archive.py ARCHIVE.tar      # unpacks into the working directory

The logic: tilelang_churn/trace/trace_archive.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.trace import trace_archive  # noqa: E402


def _from_rule(smk) -> int:
    unpacked = set(trace_archive.unpack(smk.input.archive))
    missing = [path for path in smk.output if path not in unpacked]
    if missing:
        print(f"trace_archive.py: error: {smk.input.archive} lacks {len(missing)} file(s): {missing[0]}, ...",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    for path in trace_archive.unpack(argv[0]):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(_from_rule(snakemake) if "snakemake" in globals() else main(sys.argv[1:]))  # noqa: F821
