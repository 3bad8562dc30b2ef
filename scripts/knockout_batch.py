#!/usr/bin/env python3
"""The pass knockout of many kernel configurations, TileLang imported once (the knockout rules' `script:`; the
command line too):

    python3 scripts/knockout_batch.py --jobs JOBS.json [--workers N] [--passes changed] [--occurrence all]

The logic, its outputs and exit statuses: tilelang_churn/knockout/knockout_batch.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.knockout import knockout_batch, pass_knockout  # imported under the signal guard
    from tilelang_churn.trace import trace_batch

    description = knockout_batch.__doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog=knockout_batch.PROG, description=description)
    trace_batch.add_batch_options(parser, "lowerings")
    passes_help = "changed (default), all, or NAME,NAME"
    parser.add_argument("--passes", type=knockout_batch.pass_selection, default="changed", help=passes_help)
    parser.add_argument("--occurrence", choices=pass_knockout.OCCURRENCES, default="all")
    parser.add_argument(
        "--timeout", type=trace_batch.positive_seconds, default=120.0, help="seconds per lowering (default 120)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.knockout import knockout_batch
    from tilelang_churn.trace import trace_batch

    argv = sys.argv[1:] if argv is None else argv
    trace_batch.in_release_env(argv, knockout_batch.SCRIPT)  # with --release-env: this process replaced, run there
    args = build_parser().parse_args(argv)
    return knockout_batch.run_batch_file(
        args.jobs, args.workers, args.passes, args.occurrence, args.timeout, args.release_env
    )


def _from_rule(smk) -> int:
    from tilelang_churn.knockout import knockout_batch
    from tilelang_churn.trace import trace_batch

    params = smk.params
    return trace_batch.run_in_own_process(
        params.jobs,
        smk.threads,
        [],
        params.release_env,
        smk.log.batch,
        script=knockout_batch.SCRIPT,
        extra_args=params.options,
    )


if __name__ == "__main__":
    interrupt.run("knockout_batch", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
