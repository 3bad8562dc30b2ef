"""The tables: passes.csv as a DataFrame, churn.csv and its summary, the comparison of releases, the versions."""

__all__ = [
    "churn_table",
    "frames",
    "kernel_speed",
    "knockout_table",
    "pass_edits",
    "release_tables",
    "speed_attribution",
    "version_table",
]
