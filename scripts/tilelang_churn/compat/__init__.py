"""Changes to the workflow engine itself, each checked against the Snakemake release it was written for."""

__all__ = ["snakemake_scheduler"]
