"""tilelang-churn's logic, in layers; a module imports only from its own layer or the ones below it.

    core       the job (its key, paths, label), the row model and statuses, the trace modes, release order,
               the one atomic writer, the IR archive, line counting: the standard library only
    grid, releases, trace, knockout, gpu
               the lowering's rooms, one layer: the job grid and the kernels; TileLang releases, their
               environments and source; tracing one lowering (every mode); the pass knockout; GPU timing
    tables     the DataFrame view, churn.csv and its summary, the comparison of releases
    figures    every figure: per-job bars, the one heatmap drawer, the release figures, the book's figures

The entry files in ``scripts/`` (one per command and rule) are the only code that sees the ``snakemake``
object; tests/test_layers.py fails on an import that goes up a layer or closes a cycle, and on a ``core``
module that needs a package outside the standard library (trace jobs import core in release environments
that hold only TileLang and its needs).
"""
