#!/usr/bin/env python3
"""A cached trace batch's files put in place from its archive (the rule's `script:` under config trace_cache):

    python3 scripts/trace_archive.py ARCHIVE.tar      # unpacks into the working directory

The logic: tilelang_churn/trace/trace_archive.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def main(argv: list[str] | None = None) -> int:
    """trace_archive.py ARCHIVE.tar: its files unpacked into the working directory, their paths printed."""
    from tilelang_churn.trace import trace_archive

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print("usage: trace_archive.py ARCHIVE.tar  (unpacks a cached trace batch into the working directory)")
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    return trace_archive.unpack_and_list(argv[0])


def _from_rule(smk) -> int:
    from tilelang_churn.trace import trace_archive

    return trace_archive.unpack_outputs(smk.input.archive, list(smk.output))


if __name__ == "__main__":
    interrupt.run("trace_archive", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
