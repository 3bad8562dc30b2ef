"""The job model, the row model and the files every layer above shares (standard library only)."""

__all__ = [
    "child_group",
    "devices",
    "files",
    "import_gc",
    "interrupt",
    "ir_archive",
    "job_spec",
    "jobs",
    "knockout_rows",
    "line_churn",
    "pass_configs",
    "pass_names",
    "passes_table",
    "releases",
    "statuses",
    "targets",
    "trace_modes",
]
