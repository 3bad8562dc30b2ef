"""The comparison of releases, as figures, and its command line (``scripts/compare_releases.py``).

Usage::

    python scripts/compare_releases.py --out-dir results/compare [--heatmap-config LABEL] \\
        [--formats png,svg] PASSES_CSV [PASSES_CSV ...]

Each PASSES_CSV is one job's ``passes.csv``; the job's IR archive is looked for next to it, as
``<same folder>/ir.json.gz``. A file holding several jobs (``churn.csv``) is accepted too; its jobs then have
no archive and ``divergence.csv`` says so. The command writes, under ``--out-dir``, the tables of
``tables/release_tables.py`` (``churn_by_version.csv``, ``pass_alignment.csv``, ``divergence.csv``) and
``release_heatmap.<fmt>`` and ``release_trend.<fmt>`` for every ``--formats`` entry (default png,svg), and the
HTML pages of ``figures/compare_pages.py`` (``index.html``, ``pages/``). Exit
status 0 on success, 1 on a bad input (one line on stderr naming the file or the label), 2 on bad arguments.

A release here is any version entry (config ``versions``: a release, a user's wheel or environment), named by its
``version_name`` in every column, tick and legend, in version order (the TileLang version it imported, then its
name: ``release_tables``); a version that is no release has no tag on GitHub, so its pass names link to the search
(``resolve_pass_links``).

Figures (matplotlib Agg; byte-identical on reruns: no dates or software tags in the metadata, fixed
``svg.hashsalt``):

- ``release_heatmap``: for one configuration (``--heatmap-config``; default: the one with pass runs in the
  most releases, then a trace-env one, then key order), pass runs (rows, the union alignment: each
  release is aligned with ``align_passes`` to the rows of all earlier releases, so a pass that disappears
  and comes back keeps its row) x releases (columns: every release of the table). A cell is added+deleted; 0 is pale;
  absent is hatched grey; failed is a red x; an unsupported release, a release without a job for the
  configuration, and a release that shares no pass run with any other are labelled as such.
- ``release_trend``: pass runs (top) and churn_total (bottom) per release, one column of panels per mode
  (counts of different modes come from different tools), one line per configuration. Failed jobs are red
  x marks, unsupported jobs hollow grey squares at 0; a dotted segment joins consecutive releases that
  share no pass run; releases where every job of the mode is missing, unsupported or failed are labelled.

"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from tilelang_churn.core import knockout_rows, pass_names, passes_table, trace_modes
from tilelang_churn.core.jobs import config_of_job, is_release
from tilelang_churn.core.releases import base_version, release_text, version_sort_key
from tilelang_churn.figures import compare_pages, heatmap
from tilelang_churn.figures import figure_style as fs
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import release_envs
from tilelang_churn.tables import frames, kernel_speed, pass_edits, release_tables, speed_attribution
from tilelang_churn.tables.release_tables import (
    ADDED,
    CONFIG_KEY,
    FAILED,
    KEPT,
    OUTPUT_TABLES,
    UNSUPPORTED,
    Configuration,
    ReleaseJob,
    align_passes,
    churn_by_version,
    churn_of_run,
    configurations,
    divergence,
    pass_alignment,
    read_jobs,
    typed_table,
    write_csv,
)

FIGURE_STEMS = ("release_heatmap", "release_trend")
LEGEND_INCH_PER_CHAR = 0.07  # 8-pt DejaVu Sans, an average character: the legend's width per label character
TITLE_INCH_PER_CHAR = 0.095  # 11 pt
ATTRIBUTION_TABLE = "speed_attribution.csv"  # with the GPU stage (tables/speed_attribution.py)
DPI = fs.SCREEN_DPI
FAILED_COLOR = fs.FAILED_COLOR
UNSUPPORTED_FILL = fs.UNSUPPORTED_FILL
UNSUPPORTED_EDGE = fs.UNSUPPORTED_EDGE
NO_JOB_FILL = "#ffffff"
_SAVE_METADATA = fs.SAVE_METADATA  # no date and no software tags: reruns write identical bytes
_RC = fs.rc("en", hashsalt="tilelang-churn/compare_releases")


# --------------------------------------------------------------------------------------------- figures


def _save(fig, paths: Iterable[str | os.PathLike]) -> None:
    """Save to every path (format from the suffix), atomically, without dates or software tags."""
    for path in paths:
        path = Path(path)
        fmt = path.suffix.lstrip(".").lower()
        if not fmt:
            raise ValueError(f"{path}: no suffix to choose the image format from")
        with matplotlib.rc_context(_RC):
            fs.save(fig, [path], dpi=DPI)


def _as_paths(paths) -> list:
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def _kernel_names(table: pd.DataFrame) -> str:
    """The kernels of a table for a title: 'gemm', 'gemm, flash_attention and rmsnorm' ('the kernel' for a table
    that names none)."""
    names = list(dict.fromkeys(str(name) for name in table["kernel"].dropna())) if "kernel" in table else []
    if not names:
        return "the kernel"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def label_of_job(configs: list[Configuration], archives: Mapping[tuple, str | os.PathLike], job: str) -> str:
    """The label of the configuration (among CONFIGS) whose jobs lie in folders .../TARGET/SHAPE/MODE/ (``job``),
    read from their paths."""
    wanted = tuple(job.split("/"))
    keys = {config_of_job(key) for key, path in archives.items() if Path(path).parent.parts[-3:] == wanted}
    for config in configs if keys else []:  # a job key less its version is its configuration's
        if tuple(config.key) in keys:
            return config.label
    raise ValueError(f"--heatmap-job {job}: no job in a folder .../{job}/ among the passes.csv given")


def _pick_configuration(configs: list[Configuration], label: str | None) -> Configuration:
    if not configs:
        raise ValueError("no configuration in the table")
    if label is not None:
        for config in configs:
            if config.label == label:
                return config
        known = "\n  ".join(c.label for c in configs)
        raise ValueError(f"no configuration labelled {label!r}; the table has:\n  {known}")
    # the most releases with pass runs, then trace-env (it has every pass), then key order
    index = min(
        range(len(configs)),
        key=lambda k: (
            -sum(len(j.runs) > 0 for j in configs[k].jobs),
            configs[k].key[CONFIG_KEY.index("mode")] != "trace-env",
            k,
        ),
    )
    return configs[index]


def union_alignment(jobs: Sequence[ReleaseJob]) -> list[dict[str, int]]:
    """Rows of the union alignment: per row, {release: index of its pass run in that job's runs}.

    Jobs are taken in the given (release) order; each is aligned with ``align_passes`` to the pass names of
    the rows built so far (a row's name is the name of its runs), its unmatched runs become new rows at
    their place. Every job's runs appear in execution order down the rows.
    """
    rows: list[dict[str, int]] = []
    names: list[str] = []
    for job in jobs:
        job_names = list(job.alignment_keys())
        new_rows, new_names = [], []
        for op, i, j in align_passes(names, job_names):
            if op == ADDED:
                new_rows.append({job.release: j})
                new_names.append(job_names[j])
            else:
                row = rows[i]
                if op == KEPT:
                    row[job.release] = j
                new_rows.append(row)
                new_names.append(names[i])
        rows, names = new_rows, new_names
    return rows


def _release_columns(churn_df: pd.DataFrame) -> list[str]:
    """The table's versions by name, in version order (the TileLang version each imported, then the name)."""
    table = typed_table(churn_df)
    return version_names(table["version_name"], table["tilelang_version"])


def version_names(names: Iterable, versions: Iterable) -> list[str]:
    """The distinct version names of a table's (name, imported version) cells, in version order
    (releases.version_sort_key); a missing name is the version's own (a table written before the column)."""
    order: dict[str, tuple] = {}
    for name, version in zip(names, versions):
        version = "" if _missing(version) else str(version)
        name = version if _missing(name) or name == "" else str(name)
        key = version_sort_key(version, name)
        order[name] = min(order.get(name, key), key)
    return sorted(order, key=order.__getitem__)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def release_matrix(
    churn_df: pd.DataFrame,
    configuration: str | None = None,
    edits: pass_edits.EditCache | None = None,
    configs: list[Configuration] | None = None,
) -> dict:
    """The data of ``plot_release_heatmap``: label, releases, row_labels, values (added+deleted, NaN when
    absent or failed), failed (bool), present (bool: the run exists), per-release states, and per consecutive
    pair of the configuration's releases (``pairs``) the IR difference after each row's run (``differences``:
    release_tables.ir_states, None where unknown or where neither release runs the row; all None without
    ``edits``)."""
    configs = configurations(churn_df) if configs is None else configs
    config = _pick_configuration(configs, configuration)
    releases = _release_columns(churn_df)
    jobs = {job.release: job for job in config.jobs}
    rows = union_alignment([jobs[r] for r in releases if r in jobs])
    values = np.full((len(rows), len(releases)), np.nan)
    failed = np.zeros(values.shape, dtype=bool)
    present = np.zeros(values.shape, dtype=bool)
    names = []
    for r, row in enumerate(rows):
        release, index = next(iter(row.items()))
        names.append(jobs[release].label(jobs[release].run_list()[index]))
        for c, release in enumerate(releases):
            if release in row:
                run = jobs[release].runs.iloc[row[release]]
                present[r, c] = True
                failed[r, c] = run["status"] == FAILED
                churn = churn_of_run(run)
                values[r, c] = np.nan if churn is None else churn
    repeated = {name for name in names if names.count(name) > 1}
    counter: dict[str, int] = {}
    row_labels = []
    for name in names:
        counter[name] = counter.get(name, 0) + 1
        row_labels.append(f"{name} #{counter[name]}" if name in repeated else name)
    states = []
    for c, release in enumerate(releases):
        job = jobs.get(release)
        if job is None:
            states.append("no job")
        elif job.unsupported:
            states.append(UNSUPPORTED)
        elif job.failed:
            states.append(FAILED)
        elif len(job.runs) and len(jobs) > 1 and not (present[:, c] & (present.sum(axis=1) > 1)).any():
            states.append("shares no pass")
        else:
            states.append("")
    pairs = [(old.release, new.release) for old, new in config.pairs()]
    row_of = {(release, index): r for r, row in enumerate(rows) for release, index in row.items()}
    differences: list[list[str | None]] = [[None] * len(pairs) for _ in rows]
    for c, (old, new) in enumerate(config.pairs()):
        ops = align_passes(old.alignment_keys(), new.alignment_keys())
        for (_, i, j), state in zip(ops, release_tables.ir_states(old, new, ops, edits)):
            r = row_of[(new.release, j)] if j is not None else row_of[(old.release, i)]
            differences[r][c] = state["difference"]
    return {
        "label": config.label,
        "pairs": pairs,
        "differences": differences,
        "releases": releases,
        "row_labels": row_labels,
        "values": values,
        "failed": failed,
        "present": present,
        "states": states,
    }


# the second panel's cells: the IR difference between two consecutive releases after a pass run
DIFFERENCE_CELLS = {  # difference: (fill, mark, mark colour)
    release_tables.INTRODUCED: ("#cf222e", "I", "white"),
    release_tables.EDITS_DIFFER: ("#fb8c00", "\u2260", "black"),
    release_tables.ABSORBED: ("#2e7d32", "A", "white"),
    release_tables.CARRIED: ("#d9d9d9", "\u00b7", "black"),
    release_tables.EQUAL: ("#ffffff", "", "black"),
}
DIFFERENCE_WORDS = {
    release_tables.INTRODUCED: "I introduces a difference",
    release_tables.EDITS_DIFFER: "\u2260 edits differently",
    release_tables.ABSORBED: "A absorbs it (equal after)",
    release_tables.CARRIED: "\u00b7 carries it (same edit)",
    release_tables.EQUAL: "IR equal after it (? unknown; hatched: neither runs it)",
}


def _difference_panel(ax, data: dict, nrows: int) -> None:
    """The pairs x pass runs panel of IR differences (``release_matrix``'s differences), marks in the cells."""
    pairs = data["pairs"]
    # a row that neither release of the pair runs: hatched like an absent run of the churn panel; the marks lie
    # inside their cells, so outside the layout (as heatmap.draw_cells' numbers)
    heatmap.absent_background(ax)
    column = {release: c for c, release in enumerate(data["releases"])}
    for r, row in enumerate(data["differences"][:nrows]):
        for c, difference in enumerate(row):
            if difference is None:
                if any(data["present"][r, column[release]] for release in pairs[c]):
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor="white", edgecolor="#eeeeee", lw=0.5))
                    ax.text(c, r, "?", ha="center", va="center", fontsize=8, color="#8c959f", in_layout=False)
                continue
            fill, mark, color = DIFFERENCE_CELLS[difference]
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=fill, edgecolor="#eeeeee", lw=0.5))
            if mark:
                ax.text(c, r, mark, ha="center", va="center", fontsize=8, color=color, fontweight="bold",
                        in_layout=False)  # fmt: skip
    labels = [f"{release_text(old)}\n\u2192 {release_text(new)}" for old, new in pairs]
    fs.matrix_axes(ax, [""] * nrows, labels, col_fontsize=8)
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=True, labelbottom=True)
    ax.tick_params(axis="y", labelleft=False)
    ax.set_xlabel("IR after the run,\nbetween releases")


def plot_release_heatmap(
    churn_df: pd.DataFrame,
    paths,
    configuration: str | None = None,
    edits: pass_edits.EditCache | None = None,
    configs: list[Configuration] | None = None,
) -> str:
    """Pass runs x releases churn heatmap of one configuration (label; default: see the module docstring), and
    beside it, where ``edits`` reads the IR of two releases or more, the IR difference after each run between
    consecutive releases; saved to every path. Returns the configuration label."""
    data = release_matrix(churn_df, configuration, edits, configs)
    values, failed = data["values"], data["failed"]
    releases, states, row_labels = data["releases"], data["states"], list(data["row_labels"])
    if not row_labels:  # no release ran a pass: one placeholder row keeps the columns visible
        row_labels = ["(no pass run)"]
        values = np.full((1, len(releases)), np.nan)
        failed = np.zeros(values.shape, dtype=bool)
    nrows, ncols = values.shape
    col_labels = [release_text(r) + (f"\n{s}" if s else "") for r, s in zip(releases, states)]
    label_chars = max(len(s) for s in row_labels)
    width = 1.6 + 0.075 * label_chars + 1.05 * ncols + 1.6
    height = 3.4 + 0.2 * nrows
    known = any(d is not None for row in data["differences"] for d in row) and bool(data["row_labels"])
    npairs = len(data["pairs"]) if known else 0
    width += 1.0 * npairs + (1.2 if npairs else 0)
    with matplotlib.rc_context(_RC):
        if npairs:
            fig, (ax, pair_ax) = plt.subplots(
                1,
                2,
                figsize=(max(7.0, width), max(4.5, height)),
                layout="constrained",
                width_ratios=[ncols, max(1.0, 0.9 * npairs)],
            )
        else:
            fig, ax = plt.subplots(figsize=(max(7.0, width), max(4.5, height)), layout="constrained")
        mesh, norm = heatmap.draw_cells(ax, values, failed)
        for c, state in enumerate(states):  # whole columns without pass data say why
            if state not in (UNSUPPORTED, "no job"):
                continue
            unsupported = state == UNSUPPORTED
            ax.add_patch(
                Rectangle(
                    (c - 0.5, -0.5),
                    1,
                    nrows,
                    facecolor=UNSUPPORTED_FILL if unsupported else NO_JOB_FILL,
                    edgecolor=UNSUPPORTED_EDGE,
                    hatch="\\\\" if unsupported else None,
                    lw=0.8,
                    zorder=3,
                )
            )
            ax.text(
                c,
                (nrows - 1) / 2,
                "mode unsupported in this release" if unsupported else "no job for this configuration",
                rotation=90,
                ha="center",
                va="center",
                fontsize=9,
                color="#37474f",
                zorder=4,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="none", alpha=0.9),
            )
        fs.matrix_axes(ax, row_labels, col_labels, row_fontsize=8, col_fontsize=8.5)  # first pass on top
        for tick, state in zip(ax.get_xticklabels(), states):
            if state == FAILED:
                tick.set_color(FAILED_COLOR)
            elif state:
                tick.set_color(UNSUPPORTED_EDGE)
        ax.tick_params(axis="x", top=True, labeltop=True, bottom=True, labelbottom=True)
        ax.set_ylabel("pass run (union alignment over releases, execution order)")
        ax.set_xlabel("TileLang release")
        heatmap.colorbar(
            fig,
            [ax, pair_ax] if npairs else ax,
            mesh,
            norm,
            "lines changed (+added + -deleted)",
            shrink=0.8 if height <= 12 else 12.0 / height,
        )
        handles = heatmap.legend_handles("no-op (0 lines)", "pass run absent", "\u2715 failed")
        handles.append(
            Patch(facecolor=UNSUPPORTED_FILL, edgecolor=UNSUPPORTED_EDGE, hatch="\\\\", label="mode unsupported")
        )
        if npairs:
            _difference_panel(pair_ax, data, nrows)
            handles += [
                Patch(facecolor=DIFFERENCE_CELLS[d][0], edgecolor="#bbbbbb", label=words)
                for d, words in DIFFERENCE_WORDS.items()
            ]
        fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8.5, frameon=False)
        what = " and where the IR differs between them" if npairs else ""
        fig.suptitle(f"TileLang pass churn across releases{what} (codegen excluded)\n{data['label']}", fontsize=11)
        try:
            _save(fig, _as_paths(paths))
        finally:
            plt.close(fig)
    return data["label"]


def _as_bool(series: pd.Series) -> pd.Series:
    return series.map(lambda v: v is True or v == "True" or v is np.True_).astype(bool)


_MODE_ORDER = {mode: k for k, mode in enumerate(trace_modes.MODE_NAMES)}
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]


def plot_release_trend(by_version: pd.DataFrame, alignment: pd.DataFrame, paths) -> None:
    """Pass runs and churn_total per release (the output of ``churn_by_version``, and ``pass_alignment``
    for the releases that share no pass run), one panel column per mode, one line per configuration."""
    if by_version.empty:
        raise ValueError("no job to plot")
    # the columns drawn from: each selection below copies every column it holds
    drawn = ["configuration", "kernel", "mode", "tilelang_version", "version_name", "pass_runs", "churn_total",
             "failed", "unsupported"]  # fmt: skip
    table = by_version[[column for column in drawn if column in by_version]].copy()
    for column in ("failed", "unsupported"):
        table[column] = _as_bool(table[column])
    table["tilelang_version"] = table["tilelang_version"].fillna("").astype(str)
    # a version is its name (a table without the column: its tilelang_version), drawn in version order
    names = table["version_name"] if "version_name" in table else table["tilelang_version"]
    table["shown_version"] = [
        version if _missing(name) or name == "" else str(name)
        for name, version in zip(names, table["tilelang_version"])
    ]
    releases = version_names(table["shown_version"], table["tilelang_version"])
    x_of = {release: k for k, release in enumerate(releases)}
    modes = sorted(set(table["mode"]), key=lambda m: (_MODE_ORDER.get(m, len(_MODE_ORDER)), m))
    # a configuration without its mode is one line per mode panel, with one colour and marker everywhere; lines
    # are grouped per kernel: one hue per kernel, its configurations told apart by shade and marker
    if "kernel" not in table:
        table["kernel"] = ""
    table["kernel"] = table["kernel"].fillna("").astype(str)
    table["_line"] = [
        compare_pages.display_label({"configuration": label, "kernel": kernel}).rsplit(" ", 1)[0]
        for label, kernel in zip(table["configuration"], table["kernel"])
    ]
    kernel_of = dict(zip(table["_line"], table["kernel"]))
    lines = sorted(set(table["_line"]), key=lambda line: (kernel_of[line], line))
    kernels = list(dict.fromkeys(kernel_of[line] for line in lines))
    style = _line_styles(lines, kernel_of, kernels)
    shared = _kept_by_pair(alignment)

    with matplotlib.rc_context(_RC):
        width = max(7.0, 1.0 + len(modes) * max(4.0, 0.75 * len(releases) + 1.5))
        # the legend's entries are whole configuration labels: as many columns as fit, and never cut
        entry = LEGEND_INCH_PER_CHAR * max(len(line) for line in lines) + 0.8
        width = max(width, entry + 0.5)
        legend_columns = max(1, min(3, int(width // entry)))
        fig, axes = plt.subplots(
            2,
            len(modes),
            figsize=(width, 8.0 + 0.22 * len(lines) / max(1, len(modes))),
            layout="constrained",
            squeeze=False,
            sharex=True,
        )
        for col, mode in enumerate(modes):
            of_mode = table[table["mode"] == mode]
            for row, (metric, title) in enumerate(
                (("pass_runs", "pass runs"), ("churn_total", "churn (+added + -deleted lines)"))
            ):
                ax = axes[row][col]
                _trend_panel(ax, of_mode, metric, x_of, style, shared)
                _release_spans(ax, of_mode, releases, metric == "pass_runs")
                ax.set_title(f"{mode}: {title}", fontsize=10)
                ax.set_xticks(range(len(releases)))
                ax.set_xticklabels([release_text(r) for r in releases], rotation=45, ha="right", fontsize=8.5)
                ax.set_xlim(-0.5, len(releases) - 0.5)
                ax.yaxis.set_major_locator(mticker.MaxNLocator(integer=True))
                ax.set_ylim(bottom=0)
                ax.grid(axis="y", color="#dddddd", linewidth=0.6)
                ax.set_axisbelow(True)
                for side in ("top", "right"):
                    ax.spines[side].set_visible(False)
            axes[1][col].set_xlabel("TileLang release")
        handles = []
        for kernel in kernels:
            if len(kernels) > 1:  # a heading per kernel: an entry without a line
                handles.append(Line2D([], [], linestyle="none", label=f"{kernel or 'kernel'}:"))
            handles += [
                Line2D([], [], color=style[line][0], marker=style[line][1], label=line)
                for line in lines
                if kernel_of[line] == kernel
            ]
        handles += [
            Line2D(
                [],
                [],
                linestyle="none",
                marker="x",
                color=FAILED_COLOR,
                markersize=9,
                markeredgewidth=2,
                label="job failed (counts up to the failure)",
            ),
            Line2D(
                [],
                [],
                linestyle="none",
                marker="s",
                markerfacecolor="none",
                markeredgecolor=UNSUPPORTED_EDGE,
                markersize=8,
                label="mode unsupported (no pass run)",
            ),
            Line2D([], [], color="#555555", linestyle=":", label="no pass run shared with the previous release"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=legend_columns, fontsize=8, frameon=False)
        title = (
            f"TileLang lowering of {_kernel_names(table)} across releases: pass runs and IR churn per configuration "
            "(codegen excluded; counts of different modes come from different tools)"
        )
        fig.suptitle(textwrap.fill(title, int(width / TITLE_INCH_PER_CHAR)), fontsize=11)
        try:
            _save(fig, _as_paths(paths))
        finally:
            plt.close(fig)


def _line_styles(lines: list[str], kernel_of: dict, kernels: list[str]) -> dict[str, tuple]:
    """{line: (colour, marker)}: a tab10 hue per kernel, paler over its configurations (up to 55 % towards
    white), and markers that differ within a kernel."""
    import matplotlib.colors as mcolors

    hues = plt.get_cmap("tab10")
    style = {}
    for k, kernel in enumerate(kernels):
        own = [line for line in lines if kernel_of[line] == kernel]
        base = np.array(mcolors.to_rgb(hues(k % hues.N)))
        for n, line in enumerate(own):
            towards_white = 0.55 * n / max(1, len(own) - 1)
            style[line] = (tuple(base + (1 - base) * towards_white), _MARKERS[n % len(_MARKERS)])
    return style


def _kept_by_pair(alignment: pd.DataFrame) -> dict[tuple, int]:
    """{(configuration, release_old, release_new): kept rows} from pass_alignment rows."""
    if alignment is None or alignment.empty:
        return {}
    kept = (
        alignment.assign(_kept=alignment["op"] == KEPT)
        .groupby(["configuration", "release_old", "release_new"], sort=False, dropna=False)["_kept"]
        .sum()
    )
    return {
        (str(c), str(o) if not pd.isna(o) else "", str(n) if not pd.isna(n) else ""): int(k)
        for (c, o, n), k in kept.items()
    }


def _trend_panel(ax, of_mode: pd.DataFrame, metric: str, x_of: dict, style: dict, shared: dict) -> None:
    lines = sorted(set(of_mode["_line"]))
    # a small fixed sideways shift per line, so that configurations with equal values stay visible
    shift = min(0.08, 0.3 / max(1, len(lines)))
    for k, (line, jobs) in enumerate(of_mode.groupby("_line", sort=True)):
        color, marker = style[line]
        dx = (k - (len(lines) - 1) / 2) * shift
        x_of_line = {release: x + dx for release, x in x_of.items()}
        jobs = jobs.sort_values("shown_version", key=lambda s: s.map(x_of), kind="stable")
        data = jobs[~jobs["unsupported"]]
        xs = [x_of_line[r] for r in data["shown_version"]]
        ys = [float(v) for v in data[metric]]
        ax.plot(xs, ys, linestyle="none", marker=marker, color=color, markersize=6, zorder=3)
        # one segment per consecutive pair with data on both ends; dotted when they share no pass run
        records = list(jobs.itertuples(index=False))
        for old, new in zip(records, records[1:]):
            if old.unsupported or new.unsupported:
                continue
            kept = shared.get((old.configuration, old.shown_version, new.shown_version), 0)
            disjoint = kept == 0 and old.pass_runs > 0 and new.pass_runs > 0
            ax.plot(
                [x_of_line[old.shown_version], x_of_line[new.shown_version]],
                [float(getattr(old, metric)), float(getattr(new, metric))],
                color=color,
                linestyle=":" if disjoint else "-",
                linewidth=1.4,
                zorder=2,
            )
        failed = data[data["failed"]]
        if len(failed):
            ax.plot(
                [x_of_line[r] for r in failed["shown_version"]],
                [float(v) for v in failed[metric]],
                linestyle="none",
                marker="x",
                color=FAILED_COLOR,
                markersize=10,
                markeredgewidth=2,
                zorder=4,
            )
        unsupported = jobs[jobs["unsupported"]]
        if len(unsupported):
            ax.plot(
                [x_of_line[r] for r in unsupported["shown_version"]],
                [0.0] * len(unsupported),
                linestyle="none",
                marker="s",
                markerfacecolor="white",
                markeredgecolor=UNSUPPORTED_EDGE,
                markersize=8,
                zorder=4,
                clip_on=False,
            )


def _release_spans(ax, of_mode: pd.DataFrame, releases: list[str], with_text: bool) -> None:
    """Shade releases where no job of the mode has pass data, and say why."""
    for x, release in enumerate(releases):
        jobs = of_mode[of_mode["shown_version"] == release]
        if len(jobs) == 0:
            why, face, hatch = "no job", "#f5f5f5", None
        elif jobs["unsupported"].all():
            why, face, hatch = "mode unsupported", UNSUPPORTED_FILL, "\\\\"
        elif jobs["failed"].all():
            why, face, hatch = "all jobs failed", "#fff0f0", None
        else:
            continue
        ax.axvspan(
            x - 0.45,
            x + 0.45,
            facecolor=face,
            edgecolor=UNSUPPORTED_EDGE if hatch else "none",
            hatch=hatch,
            linewidth=0,
            zorder=0,
        )
        if with_text:
            ax.text(
                x,
                0.97,
                why,
                transform=ax.get_xaxis_transform(),
                rotation=90,
                ha="center",
                va="top",
                fontsize=8,
                color=FAILED_COLOR if why == "all jobs failed" else "#37474f",
                zorder=5,
                bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.9),
            )


# ------------------------------------------------------------------------------------------------- all


def write_all(
    churn_df: pd.DataFrame,
    archives: Mapping[tuple, str | os.PathLike] | None,
    out_dir,
    heatmap_config: str | None = None,
    formats: Sequence[str] = ("png", "svg"),
    with_pages: bool = True,
    speed_rows: list[dict] | None = None,
    knockout: list[dict] | None = None,
    heatmap_job: str | None = None,
    pass_links: Mapping[str, Mapping[str, tuple[str, str]]] | None = None,
) -> dict[str, list[Path]]:
    """Write the three tables, the HTML pages (``compare_pages``) and both figures under ``out_dir``; with
    ``speed_rows`` (kernel_speed.csv: the GPU stage) also speed_attribution.csv (``knockout``: knockout.csv's
    rows, None without the knockout) and its section of the index. Returns {"tables": [...], "figures": [...],
    "pages": [index, page, ...]}. ``pass_links`` ({release: {pass: (url, kind)}}, ``resolve_pass_links``): the
    pages' links to each pass's source.

    Every input problem (unknown heatmap configuration, bad table) raises ValueError before anything is
    written.
    """
    out_dir = Path(out_dir)
    edits = pass_edits.EditCache(archives)  # each archive read once, each job's edits computed once
    configs = configurations(churn_df)  # once for the three tables, the heatmap's choice and the pages
    if heatmap_job is not None:
        heatmap_config = label_of_job(configs, archives or {}, heatmap_job)
    by_version = churn_by_version(churn_df, archives, configs, edits)
    alignment = pass_alignment(churn_df, archives, edits, configs)
    diverging = divergence(churn_df, archives, edits, configs)
    _pick_configuration(configs, heatmap_config)  # fail before writing anything
    tables = [out_dir / name for name in OUTPUT_TABLES]
    for table, path in zip((by_version, alignment, diverging), tables):
        write_csv(table, path)
    attribution = None
    if speed_rows is not None:
        records = diverging.astype(object).where(diverging.notna(), None).to_dict("records")
        attribution = speed_attribution.attribute(speed_rows, records, knockout, sorted(churn_df["mode"].unique()))
        tables.append(out_dir / ATTRIBUTION_TABLE)
        passes_table.write_rows(tables[-1], attribution, speed_attribution.COLUMNS)
    names = [path.name for path in tables]
    pages = (
        compare_pages.write_pages(configs, diverging, edits, out_dir, attribution, names, pass_links)
        if with_pages
        else []
    )
    heatmap = [out_dir / f"{FIGURE_STEMS[0]}.{fmt}" for fmt in formats]
    trend = [out_dir / f"{FIGURE_STEMS[1]}.{fmt}" for fmt in formats]
    if formats:
        plot_release_heatmap(churn_df, heatmap, heatmap_config, edits, configs)
        plot_release_trend(by_version, alignment, trend)
    return {"tables": tables, "figures": heatmap + trend, "pages": pages}


def resolve_pass_links(
    churn_df: pd.DataFrame, release_sources: Mapping[str, str], links: release_envs.PassLinks | None = None
) -> dict[str, dict[str, tuple[str, str]]]:
    """{version name: {pass name: (URL, "definition" or "search")}} for every pass name each version's rows hold, in
    version order: for a release, the factory's line in its source at its tag (``release_sources``: {version name:
    its environment folder}; the release installed beside the workflow needs none), else the search pattern; a
    version that is no release (a user's wheel or environment: no tag on GitHub) links every pass to the search."""
    links = links or release_envs.load_pass_links()
    installed = tilelang_source.find_installed_source()
    churn_df = frames.with_version_names(churn_df)
    out = {}
    names = churn_df["version_name"].astype(str)
    versions = dict(zip(names, churn_df["tilelang_version"].fillna("").astype(str)))
    by_name = dict(list(churn_df.groupby(names, sort=False)))
    for name in version_names(names, (versions[n] for n in names)):
        rows, imported = by_name[name], versions[name]
        released = is_release(name, imported)  # else no tag to link a line of its source to
        release = name if released else base_version(imported)
        source = None
        if released and release_sources.get(name) is not None:
            source = tilelang_source.env_source(release_sources[name])
        elif released and installed is not None and installed.release in (name, imported):
            source = installed
        passes = list(dict.fromkeys(pass_names.short_name(p) for p in rows.get("pass_id", rows["pass"])))
        out[name] = tilelang_source.pass_links(source, release, passes, links)
    return out


def build(
    passes_paths,
    out_dir,
    heatmap_config: str | None = None,
    formats: Sequence[str] = ("png", "svg"),
    speed_csv=None,
    knockout_csv=None,
    heatmap_job: str | None = None,
    release_sources: Mapping[str, str] | None = None,
) -> int:
    """Read the passes.csv files (and the GPU stage's kernel_speed.csv, the knockout.csv) and write everything;
    0, or 1 with one line on stderr for a bad input. ``release_sources``: {release: its environment folder},
    where the pages' pass links find each pass's definition."""
    passes_paths = [Path(p) for p in passes_paths]
    try:
        churn, archives = read_jobs(passes_paths)
        speed_rows = kernel_speed.read_csv(speed_csv) if speed_csv else None
        knockout = knockout_rows.read_rows(knockout_csv) if knockout_csv else None
        links = resolve_pass_links(churn, release_sources or {})
        written = write_all(
            churn, archives, out_dir, heatmap_config, formats, True, speed_rows, knockout, heatmap_job, links
        )
    except (OSError, ValueError) as exc:
        print(f"compare_releases: error: {exc}", file=sys.stderr)
        return 1
    print(
        f"compare_releases: {len(passes_paths)} passes.csv -> "
        + ", ".join(str(p) for p in written["tables"] + written["figures"] + written["pages"][:1])
        + f" and {max(0, len(written['pages']) - 1)} pages under {Path(out_dir) / compare_pages.PAGES_DIR}"
    )
    return 0


def figure_formats(text: str) -> list[str]:
    """The value of --formats: png, svg and pdf, comma-separated (argparse's type: an ArgumentTypeError if not)."""
    formats = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [fmt for fmt in formats if fmt not in _SAVE_METADATA]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"{text!r}: formats are a comma-separated list of png, svg, pdf")
    return list(dict.fromkeys(formats))


def release_sources(items: Iterable[str]) -> dict[str, str]:
    """{version name: environment folder} of the --release-source values, RELEASE=ENV_DIR each, RELEASE a version's
    name (a release's number) (ValueError if not)."""
    sources = {}
    for item in items:
        release, sep, env = item.partition("=")
        if not sep or not release or not env:
            raise ValueError(f"{item!r} is not RELEASE=ENV_DIR")
        sources[release] = env
    return sources
