"""Tracing one lowering in every mode: the trace command line, its targets and dtypes (trace_cli), one job
(trace_job), a batch of jobs in forked children (trace_batch, fork_pool), TileLang's own tracers
(tilelang_trace), the pass instrument (pass_instrument), run.json (run_record), and a batch as one file for
Snakemake's between-workflow cache (trace_archive)."""

__all__ = [
    "fork_pool",
    "pass_identity",
    "pass_instrument",
    "run_record",
    "tilelang_trace",
    "trace_archive",
    "trace_batch",
    "trace_cli",
    "trace_job",
]
