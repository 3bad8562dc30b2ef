"""The job model, the row model and the files every layer above shares (standard library only)."""

__all__ = [
    "files",
    "interrupt",
    "ir_archive",
    "job_cost",
    "jobs",
    "knockout_rows",
    "line_churn",
    "pass_configs",
    "passes_table",
    "releases",
    "statuses",
    "trace_modes",
]
