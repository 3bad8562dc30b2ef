"""tilelang-churn's logic, in layers; a module imports only from its own layer or the ones below it.

    core       the job and its key, the row model and statuses, the trace modes, line counting
    lowering   kernels, tracing one lowering (every mode), the job grid, release environments
    tables     churn.csv and its summary, the comparison of releases
    figures    every figure: per-job bars, heatmaps, the release figures, the book's figures

The entry files in ``scripts/`` (one per command and rule) are the only code that sees the ``snakemake``
object; tests/test_layers.py fails on an import that goes up a layer or closes a cycle. Nothing here imports
a third-party package at import time below ``tables``: the trace jobs run in release environments that hold
only TileLang and its needs.
"""
