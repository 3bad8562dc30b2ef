#!/usr/bin/env python3
"""Many trace jobs in one process, TileLang imported once (the trace rules' `script:`; the command line too):

    python3 scripts/trace_batch.py --jobs JOBS.json [--workers N] [--release-env DIR]

The logic and its exit statuses: tilelang_churn/trace/trace_batch.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.trace import trace_batch  # imported under the signal guard

    parser = argparse.ArgumentParser(prog=trace_batch.PROG, description=trace_batch.__doc__.split("\n\n")[0])
    trace_batch.add_batch_options(parser, "jobs traced")
    parser.add_argument("--tolerate", type=int, action="append", default=[], help="a job status that is no failure")
    parser.add_argument(
        "--job-timeout",
        type=trace_batch.positive_seconds,
        metavar="S",
        help="kill a job running longer, a failed row (default: none)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.trace import trace_batch

    argv = sys.argv[1:] if argv is None else argv
    trace_batch.in_release_env(argv, trace_batch.SCRIPT)  # with --release-env: this process replaced, run there
    args = build_parser().parse_args(argv)
    return trace_batch.run_batch_file(args.jobs, args.workers, tuple(args.tolerate), args.release_env, args.job_timeout)


def _from_rule(smk) -> int:
    from tilelang_churn.trace import trace_batch

    params = smk.params
    # the config, not a param: a new time limit retraces nothing
    timeout = smk.config.get("job_timeout_s")
    status = trace_batch.run_in_own_process(
        params.jobs, smk.threads, params.tolerate, params.release_env, smk.log.batch, timeout
    )
    if status == 0 and "archive" in smk.output.keys():  # config trace_cache: the batch as one file for the cache
        from tilelang_churn.trace import trace_archive

        trace_archive.pack(smk.output.archive, [path for _, out, log in params.jobs for path in (out, log)])
    return status


if __name__ == "__main__":
    interrupt.run("trace_batch", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
