"""The job grid: the config checked (config_checks: every check of a value, errors naming key and value;
config_schema: the schema's coercion and error messages), expanded into jobs (job_grid: the build; grid_model: the
Grid; grid_keys: one resolver per config key, shapes, targets, releases, modes; grid_checks: the checks of the jobs
made; grid_job: one job; kernel_configs: config kernels, one configuration per parameter set; kernel_entries: one
kernel entry's fields; pass_config_options: the pass config options and their types that the installed TileLang's
TVM registers), the book's reference job in it (book_reference), and the kernels a program builds, captured as
config entries (kernel_capture: the command; capture_records: its records made entries)."""

__all__ = [
    "book_reference",
    "capture_records",
    "config_checks",
    "config_schema",
    "grid_checks",
    "grid_job",
    "grid_keys",
    "grid_model",
    "job_grid",
    "kernel_capture",
    "kernel_configs",
    "kernel_entries",
    "pass_config_options",
]
