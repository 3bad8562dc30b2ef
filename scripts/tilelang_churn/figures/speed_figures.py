"""The GPU stage's figures, one per kernel, from ``results/gpu/churn_vs_speed.csv`` (tables/kernel_speed.py):

    python3 scripts/speed_figures.py --joined results/gpu/churn_vs_speed.csv --out-dir results/gpu/figures \\
        --kernels gemm,flash_attention,rmsnorm

``<kernel>.png`` (and ``.svg``) has three panels sharing one colour per configuration:

- left: latency (log scale) against total churn (``churn_total`` of the joined trace mode), one marker per
  configuration x release (marker shape: the release): do configurations whose lowering rewrites more lines
  run faster or slower?
- middle: latency per release, one line per configuration: which release made a configuration faster;
- right: total churn per release, the same lines: which release rewrote more.

A configuration is labelled by the parameters in which it differs from the kernel's other configurations. Rows
that were not timed (compile or launch failure) and wrong results are red x marks on the floor of the left
panel, at their churn, and their status stands beside their label in the legend: data, like the others. A
row timed while NVML said the GPU's clock was held down (``clock_limits``: its power cap) is a hollow marker. A
kernel with no GPU row gets a figure that says so. Saved through figure_style (fixed metadata: the same table
gives the same bytes).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import matplotlib.transforms as mtransforms

from tilelang_churn.core.jobs import version_label, version_name, version_order
from tilelang_churn.core.statuses import STATUS_WRONG
from tilelang_churn.figures import figure_style as fs
from tilelang_churn.gpu import gpu_clock
from tilelang_churn.tables import kernel_speed

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HASHSALT = "tilelang-churn/speed_figures"
HELD_DOWN = "hollow: the GPU's clock was held down while timed (clock_limits, e.g. its power cap)"


def configuration(row: dict) -> tuple[str, str, str]:
    """A GPU row's configuration within its kernel: target, params and pass configs."""
    return row["target_name"], row["params"], row["pass_configs"]


def short_labels(rows: list[dict]) -> dict[tuple, str]:
    """configuration(row) -> a label of the parameters and pass configs that differ among the rows'
    configurations (plus the target when several), e.g. ``block_M=32, block_N=32``; ``as configured`` for the one
    that differs in nothing."""
    configs = {configuration(row): {**json.loads(row["params"]), **json.loads(configuration(row)[2])} for row in rows}
    targets = {target for target, _, _ in configs}
    names = sorted({name for params in configs.values() for name in params})
    varying = [name for name in names if len({json.dumps(p.get(name)) for p in configs.values()}) > 1]
    common = {}
    for name in varying:  # the most frequent value is the baseline: show only departures from it
        values = [json.dumps(p.get(name)) for p in configs.values()]
        common[name] = max(sorted(set(values)), key=values.count)
    labels = {}
    for config, params in configs.items():
        parts = [f"{name}={params.get(name)}" for name in varying if json.dumps(params.get(name)) != common[name]]
        text = ", ".join(parts) or "as configured"
        labels[config] = f"{config[0]}: {text}" if len(targets) > 1 else text
    return labels


def plot_kernel(rows: list[dict], kernel: str, paths) -> None:
    """The figure of one kernel (rows of churn_vs_speed.csv, any releases) into paths."""
    rows = [row for row in rows if row["kernel"] == kernel]
    with fs.context("en", hashsalt=HASHSALT):
        fig = plt.figure(figsize=(15, 6.4), layout="constrained")
        grid = fig.add_gridspec(2, 3, height_ratios=[5, 1.3])
        axes = [fig.add_subplot(grid[0, i]) for i in range(3)]
        legend_ax = fig.add_subplot(grid[1, :])
        legend_ax.set_axis_off()
        if not rows:
            for ax in axes:
                ax.set_axis_off()
            axes[1].text(0.5, 0.5, f"no GPU job of {kernel}", ha="center", va="center", transform=axes[1].transAxes)
            fs.save(fig, paths)
            plt.close(fig)
            return
        labels = short_labels(rows)
        configs = list(dict.fromkeys(configuration(row) for row in rows))
        # a version is its entry's name (kernel_speed.read_csv fills a table's without: its tilelang_version),
        # in version order (the TileLang version it imported, then the name)
        order = {_version(row): version_order(row) for row in rows}
        releases = sorted(order, key=order.__getitem__)
        shown = {_version(row): version_label(row) for row in rows}
        colour = {config: fs.SERIES_COLORS[i % len(fs.SERIES_COLORS)] for i, config in enumerate(configs)}
        marker = {release: MARKERS[i % len(MARKERS)] for i, release in enumerate(releases)}
        timed = [row for row in rows if row.get("latency_ms") is not None and row.get("status") != STATUS_WRONG]
        scatter, by_release, churn_axis = axes
        on_floor = mtransforms.blended_transform_factory(scatter.transData, scatter.transAxes)
        for row in rows:
            config = configuration(row)
            if row.get("churn_total") is None:
                continue
            if row in timed and held_down(row):  # hollow: the GPU's clock, not only the kernel, set this latency
                scatter.scatter(
                    row["churn_total"], row["latency_ms"], facecolors="none", edgecolors=colour[config],
                    marker=marker[_version(row)], s=70, zorder=3, linewidth=1.6,
                )  # fmt: skip
            elif row in timed:
                scatter.scatter(
                    row["churn_total"], row["latency_ms"], color=colour[config], marker=marker[_version(row)],
                    s=70, zorder=3, edgecolor="black", linewidth=0.5,
                )  # fmt: skip
            else:  # not timed (or wrong): a red x on the floor of the panel, at its churn
                scatter.scatter(
                    row["churn_total"], 0.03, transform=on_floor, color=fs.FAILED_COLOR, marker="x", s=60, zorder=3
                )
        x_of = {release: i for i, release in enumerate(releases)}
        for config in configs:
            of_config = sorted(
                (row for row in rows if configuration(row) == config),
                key=lambda row: order[_version(row)],
            )
            points = [(x_of[_version(row)], row["latency_ms"]) for row in of_config if row in timed]
            if points:
                by_release.plot(*zip(*points), color=colour[config], marker="o")
            churn = [(x_of[_version(r)], r["churn_total"]) for r in of_config if r.get("churn_total")]
            if churn:
                churn_axis.plot(*zip(*churn), color=colour[config], marker="o")
        churn_values = [row["churn_total"] for row in rows if row.get("churn_total") is not None]
        if churn_values:  # the x marks on the floor do not widen the limits themselves
            low, high = min(churn_values), max(churn_values)
            pad = max(1.0, 0.08 * (high - low))
            scatter.set_xlim(low - pad, high + pad)
        # churn counts lines: whole ticks, a few (one configuration drew 2139.00 2139.25 ... on top of each other)
        scatter.xaxis.set_major_locator(mticker.MaxNLocator(nbins=5, integer=True))
        churn_axis.yaxis.set_major_locator(mticker.MaxNLocator(integer=True))
        if timed:
            for ax in (scatter, by_release):
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%.3g"))
                ax.yaxis.set_minor_formatter(mticker.FormatStrFormatter("%.3g"))
        else:  # no latency to draw: the axes say so instead of a linear scale around nothing
            failed = ", ".join(sorted({str(row.get("status")) for row in rows}))
            for ax in (scatter, by_release):
                ax.set_yticks([])
                ax.text(0.5, 0.5, f"not timed ({failed})", ha="center", va="center", transform=ax.transAxes,
                        color=fs.FAILED_COLOR)  # fmt: skip
        scatter.set_xlabel(f"total churn of the lowering, lines\n(+added + -deleted; mode {_mode(rows)})")
        scatter.set_ylabel("latency per launch, ms (median; log scale)")
        scatter.set_title("latency against churn (x on the floor: not timed)")
        by_release.set_ylabel("latency per launch, ms (median; log scale)")
        by_release.set_title("latency per release")
        churn_axis.set_ylabel("total churn, lines")
        churn_axis.set_title("churn per release")
        for ax in (by_release, churn_axis):
            ax.set_xticks(range(len(releases)))
            ax.set_xticklabels(releases)
            ax.set_xlim(-0.5, len(releases) - 0.5)
            ax.set_xlabel("TileLang release")
        for ax in axes:
            ax.grid(True, color=fs.GRID_COLOR, linewidth=0.6)
            ax.set_axisbelow(True)
        handles, texts = [], []
        for config in configs:
            failed = sorted({r["status"] for r in rows if configuration(r) == config and r not in timed})
            handles.append(plt.Line2D([], [], color=colour[config], marker="o"))
            texts.append(labels[config] + (f"  [{', '.join(failed)}]" if failed else ""))
        for release in releases:
            handles.append(plt.Line2D([], [], color="grey", marker=marker[release], linestyle="", markeredgecolor="k"))
            texts.append(f"release {release}" if shown[release] == release else shown[release])
        if any(held_down(row) for row in timed):
            handles.append(plt.Line2D([], [], color="grey", marker="o", markerfacecolor="none", linestyle=""))
            texts.append(HELD_DOWN)
        legend_ax.legend(handles, texts, loc="upper center", ncol=3, fontsize=8.5, frameon=False)
        device = rows[0]
        fig.suptitle(
            f"{kernel}: speed beside churn on {device.get('gpu_name')} ({device.get('gpu_arch')}), "
            f"{device.get('measured_by')}, median of {device.get('repeats')} x {device.get('launches')} launches"
        )
        fs.save(fig, paths)
        plt.close(fig)


def held_down(row: dict) -> bool:
    """Whether NVML said something held the GPU's clock down while the row was timed (its clock_limits)."""
    return row.get("clock_limits") not in (None, "", gpu_clock.NO_LIMIT)


def _version(row: dict) -> str:
    """The row's version: its entry's name (core/jobs.py version_name)."""
    return version_name(row)


def _mode(rows: list[dict]) -> str:
    return next((row["mode"] for row in rows if row.get("mode")), "?")


def build(joined_csv, out_dir, kernels: list[str], formats=("png", "svg")) -> int:
    rows = kernel_speed.read_csv(joined_csv)
    out_dir = Path(out_dir)
    for kernel in kernels:
        plot_kernel(rows, kernel, [out_dir / f"{kernel}.{fmt}" for fmt in formats])
    print(f"speed_figures: {len(kernels)} figures from {len(rows)} rows -> {out_dir}")
    return 0
