"""Figures of TileLang pass churn (matplotlib, Agg backend).

Usage::

    python scripts/plot_churn.py bars --passes PASSES_CSV --out FIG.png
    python scripts/plot_churn.py heatmap --churn CHURN_CSV --out FIG.png [FIG.svg ...] [--mode trace-env]

``bars``: one job's passes, in execution order: +added above the axis (green), -deleted below it (red),
no-op passes as grey markers on the axis, a failed step as a red x with its error, the codegen step as a
hatched band (not churn).

``heatmap``: pass occurrences (rows, e.g. "Simplify #3") x configurations (columns) of one mode; a cell is
added+deleted of that occurrence; 0 (no-op) is pale, an occurrence absent from a configuration is hatched
grey, a failed pass is a red x. codegen rows are left out. A churn.csv changed since churn_table.py wrote it
(checked against churn.json beside it) is refused.

Exit status 1 with one line on stderr for a refused table or a figure that cannot be written (a full disk:
the file named, no temporary left).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import json
import multiprocessing
import os
import sys
import textwrap
import warnings

import matplotlib as mpl  # noqa: E402
import matplotlib.markers as mmarkers  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import matplotlib.transforms as mtransforms  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from tilelang_churn.core import interrupt, pass_configs, pass_names  # noqa: E402
from tilelang_churn.core import passes_table as pt  # noqa: E402
from tilelang_churn.core.jobs import fills_param_columns, version_label, version_name  # noqa: E402
from tilelang_churn.figures import figure_style as fs  # noqa: E402  (the one style of every figure)
from tilelang_churn.figures import heatmap  # noqa: E402
from tilelang_churn.tables import frames

ADDED_COLOR = fs.ADDED_COLOR
DELETED_COLOR = fs.DELETED_COLOR
NOOP_COLOR = fs.NOOP_COLOR
FAILED_COLOR = fs.FAILED_COLOR
CODEGEN_COLOR = fs.CODEGEN_COLOR
DPI = fs.SCREEN_DPI
HASHSALT = "tilelang-churn/plot_churn"
CBAR_LABEL = "lines changed (+added + -deleted)"
# a heatmap wider than this is unreadable: merge_configurations folds the rest into fewer columns
MAX_HEATMAP_COLUMNS = 40
MAX_ACROSS_WIDTH_IN = 14.0  # column labels written across up to this many inches of columns, upwards beyond
UPRIGHT_COLUMN_IN = 0.27  # a column under an upright label: a line of text, a four-digit count at 6 points
UPRIGHT_CELLS = heatmap.CellStyle(value_fontsize=6.0, failed_text="\u2715", failed_fontsize=7.0)
SYMLOG_SPREAD = 100  # bars: symlog y when largest/smallest nonzero bar exceeds this
# a job's bars, one of hundreds: zlib level 3 deflates them in half the time of level 6, 22% larger
JOB_PNG_COMPRESSION = 3
PASS_LABEL_STYLE = {
    pt.STATUS_NOOP: {"color": NOOP_COLOR},
    pt.STATUS_FAILED: {"color": FAILED_COLOR, "fontweight": "bold"},
    pt.STATUS_CODEGEN: {"color": CODEGEN_COLOR, "fontstyle": "italic"},
}


# ---------------------------------------------------------------------------------------------- helpers


def _as_frame(rows_or_df) -> pd.DataFrame:
    """A DataFrame in passes.csv columns from passes_table.read_rows() dicts or a passes_table frame."""
    df = rows_or_df.copy() if isinstance(rows_or_df, pd.DataFrame) else frames.to_frame(list(rows_or_df))
    missing = [c for c in pt.COLUMNS if c not in df.columns and c not in pt.ADDED_COLUMNS]
    if missing:
        raise ValueError(f"rows lack columns {missing}")
    for column, source in pt.ADDED_FROM.items():
        if column in pt.COLUMNS and column not in df.columns:
            df[column] = df[source]
    if df.empty:
        raise ValueError("no rows to plot")
    return df


def _shape(row) -> str:
    return f"{row['M']}x{row['N']}x{row['K']}"


def _block(row) -> str:
    return f"{row['block_M']}x{row['block_N']}x{row['block_K']}"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _save(fig, paths, **png_options) -> None:
    """Save one figure to every path (format from the suffix), each atomically, with figure_style's fixed
    metadata (same rows, same bytes); PNG is ``png_compress_level`` when given, else ``fs.save``'s."""
    fs.save(fig, paths, dpi=DPI, hashsalt=HASHSALT, **png_options)


# ------------------------------------------------------------------------------------------------- bars


# Which count a figure shows (config churn_measure): the raw line churn, or the churn with lines compared
# without leading and trailing whitespace (passes.csv added_stripped/deleted_stripped).
MEASURES = ("raw", "stripped")


def _measured(df: pd.DataFrame, measure: str) -> tuple[pd.DataFrame, str]:
    """df whose added/deleted hold the chosen count, and the words that say which one the figure shows.

    A table without whitespace-insensitive counts (a mode without the IR text) keeps its raw counts, and the
    figure says so."""
    if measure not in MEASURES:
        raise ValueError(f"measure {measure!r} is not one of {', '.join(MEASURES)}")
    if measure == "raw":
        return df, "raw line churn"
    churn = df[df["status"].isin(pt.CHURN_STATUSES)]
    if churn[["added_stripped", "deleted_stripped"]].isna().any().any():
        return df, "raw line churn (no whitespace-insensitive counts in this table)"
    df = df.assign(added=df["added_stripped"], deleted=df["deleted_stripped"])
    return df, "churn ignoring leading/trailing whitespace"


@fs.styled("en", hashsalt=HASHSALT)
def plot_job_bars(rows_or_df, path, measure: str = "raw") -> None:
    """Bar chart of one job's per-pass churn; ``path`` is one output path (or a list of paths)."""
    df, measure_words = _measured(_as_frame(rows_or_df), measure)
    jobs = frames.job_count(df)
    if jobs != 1:
        raise ValueError(f"plot_job_bars wants the rows of one job, got {jobs} jobs")
    df = df.sort_values("step", kind="stable").reset_index(drop=True)
    first = df.iloc[0]
    n = len(df)
    x = np.arange(n)
    status = df["status"].to_numpy()
    is_churn = np.isin(status, pt.CHURN_STATUSES)
    added = np.where(is_churn, df["added"].fillna(0).to_numpy(dtype=float), 0.0)
    deleted = np.where(is_churn, df["deleted"].fillna(0).to_numpy(dtype=float), 0.0)
    total = added + deleted

    width_in = max(8.0, 0.22 * n)
    fig, ax = plt.subplots(figsize=(width_in, 6.5))  # margins: _fit_margins, once everything is drawn
    # only the bars that have a height: a zero-height bar is drawn all the same
    _bars(ax, x[added > 0], added[added > 0], ADDED_COLOR)
    _bars(ax, x[deleted > 0], -deleted[deleted > 0], DELETED_COLOR)
    ax.axhline(0, color="black", linewidth=0.8, zorder=4)

    noop = status == pt.STATUS_NOOP
    failed = status == pt.STATUS_FAILED
    codegen = status == pt.STATUS_CODEGEN
    if noop.any():
        ax.plot(
            x[noop],
            np.zeros(noop.sum()),
            linestyle="none",
            marker="o",
            markersize=4,
            color=NOOP_COLOR,
            zorder=5,
            label="no-op pass (0 lines)",
        )
    if failed.any():
        ax.plot(
            x[failed],
            np.zeros(failed.sum()),
            linestyle="none",
            marker="x",
            markersize=11,
            markeredgewidth=2.5,
            color=FAILED_COLOR,
            zorder=6,
            label="failed pass",
        )
    for i in x[codegen]:
        ax.axvspan(i - 0.45, i + 0.45, facecolor="none", edgecolor=CODEGEN_COLOR, hatch="///", linewidth=0.8, zorder=2)

    # y scale: linear unless a few huge bars would flatten the small ones
    nonzero = np.concatenate([added[added > 0], deleted[deleted > 0]])
    top = added.max(initial=0.0)
    bottom = deleted.max(initial=0.0)
    symlog = nonzero.size > 0 and nonzero.max() / nonzero.min() > SYMLOG_SPREAD
    if symlog:
        ax.set_yscale("symlog", linthresh=1, linscale=0.5)
        pad = lambda v: (v + 1) * 4.0  # noqa: E731  room for value labels on a log axis
    else:
        span = max(top, bottom, 4.0)  # a job without churn still gets a 0..1-ish integer axis
        pad = lambda v: v + 0.18 * span  # noqa: E731
    ax.set_ylim(-pad(bottom) if bottom > 0 else -pad(0) * 0.5, pad(top))
    # codegen band label: placed in the band, inside the axes
    for i in x[codegen]:
        ax.text(
            i,
            0.5,
            "codegen (not churn)",
            transform=ax.get_xaxis_transform(),
            rotation=90,
            ha="center",
            va="center",
            fontsize=8,
            color=CODEGEN_COLOR,
            bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.85),
        )

    # value labels: every nonzero bar for small jobs, else the 10 steps with the most churn
    if n <= 40:
        label_idx = np.flatnonzero(total > 0)
    else:
        order = sorted(np.flatnonzero(total > 0), key=lambda i: (-total[i], i))
        label_idx = np.array(order[:10], dtype=int)
    fontsize = 8 if n <= 40 else 7
    for i in label_idx:
        if added[i] > 0:
            ax.annotate(
                f"+{int(added[i])}",
                (i, added[i]),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=fontsize,
                color=ADDED_COLOR,
            )
        if deleted[i] > 0:
            ax.annotate(
                f"-{int(deleted[i])}",
                (i, -deleted[i]),
                xytext=(0, -2),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=fontsize,
                color=DELETED_COLOR,
            )

    # x labels "14 LayoutInference", coloured by status, under a row of tick marks: drawn as one marker line and
    # plain texts, since 80-odd matplotlib Tick objects took more than half of a figure's time
    ax.set_xticks([])
    axis_below = ax.get_xaxis_transform()
    tick_size, tick_pad = mpl.rcParams["xtick.major.size"], mpl.rcParams["xtick.major.pad"]
    ax.plot(x, np.zeros(n), linestyle="none", marker=mmarkers.TICKDOWN, markersize=tick_size,
            markeredgewidth=mpl.rcParams["xtick.major.width"], color=mpl.rcParams["xtick.color"],
            transform=axis_below, clip_on=False)  # fmt: skip
    label_at = mtransforms.offset_copy(axis_below, fig=fig, y=-(tick_size + tick_pad), units="points")
    pass_ids = _pass_ids(df)
    shown = pass_names.display_names(pass_ids)
    pass_labels = [
        ax.text(xi, 0, f"{step} {shown[str(pass_id)]}", transform=label_at, rotation=90, ha="center", va="top",
                fontsize=9 if n <= 60 else 8, **PASS_LABEL_STYLE.get(st, {}))
        for xi, step, pass_id, st in zip(x, df["step"], pass_ids, status)
    ]  # fmt: skip
    ax.set_xlim(-0.7, n - 0.3)
    xlabel = fig.supxlabel("pass step (execution order)", fontsize=mpl.rcParams["axes.labelsize"])
    ax.set_ylabel("lines" + (" (symlog scale)" if symlog else ""))
    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{abs(v):g}"))
    if not symlog:
        ax.yaxis.set_major_locator(mticker.MaxNLocator(integer=True, steps=[1, 2, 2.5, 5, 10]))
    ax.grid(axis="y", color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    # failure text box, in the upper left of the axes (above the bars: headroom reserved by pad)
    if failed.any():
        fi = int(np.flatnonzero(failed)[0])
        err = _shorten(df.at[fi, "error"] or "(no error text)", 300)
        wrap = max(40, int(width_in * 9))
        text = f"failed at step {df.at[fi, 'step']} {pass_ids.at[fi]}:\n" + textwrap.fill(err, wrap)
        ax.text(
            0.01,
            0.98,
            text,
            transform=ax.transAxes,
            ha="left",
            va="top",
            fontsize=8.5,
            color=FAILED_COLOR,
            zorder=7,
            bbox=dict(boxstyle="round,pad=0.4", facecolor="#fff3f3", edgecolor=FAILED_COLOR),
        )
        ax.set_ylim(ax.get_ylim()[0], _grow_top(ax, 1.0 + 0.14 * (text.count("\n") + 1), symlog))

    # legend: the bar kinds, the markers present, and codegen when present
    handles = [Patch(color=ADDED_COLOR, label="+added lines"), Patch(color=DELETED_COLOR, label="-deleted lines")]
    handles += ax.get_legend_handles_labels()[0]  # the no-op and failed markers, in that order
    if codegen.any():
        handles.append(Patch(facecolor="none", edgecolor=CODEGEN_COLOR, hatch="///", label="codegen (not churn)"))
    # above the axes, under the title (_fit_margins makes room for it)
    ncols = len(handles) if width_in >= 12 or len(handles) <= 4 else 3
    ax.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.01),
        ncols=ncols,
        fontsize=8.5,
        frameon=False,
        borderaxespad=0.2,
    )

    # title: provenance; subtitle: totals
    churn_rows = int(is_churn.sum())
    if fills_param_columns(first):
        kernel_parts = [
            f"{_shape(first)}",
            f"block {_block(first)}",
            f"{first['dtype']} (acc {first['accum_dtype']})",
            f"threads {first['threads']}",
            f"stages {first['stages']}",
        ]
        kernel_parts += (
            [pass_configs.label(json.loads(first["pass_configs"])).strip()] if first["pass_configs"] != "{}" else []
        )
    else:
        kernel_parts = [str(first["kernel_label"])]
    title_parts = [
        f"{first['target_name']}",
        *kernel_parts,
        f"mode {first['mode']}",
        f"source {first['source']}",
        f"tilelang {version_label(first)}",
    ]
    sub_parts = [
        f"changed {int((status == pt.STATUS_CHANGED).sum())} / {churn_rows} IR passes",
        f"({n} step{'s' if n != 1 else ''}: {int(noop.sum())} no-op, {int(failed.sum())} failed, "
        f"{int(codegen.sum())} codegen)",
        f"+{int(added.sum())} added / -{int(deleted.sum())} deleted lines ({measure_words})",
    ]
    chars = max(60, int(width_in * 11))
    title = _join_lines(title_parts, chars) + "\n" + _join_lines(sub_parts, chars)
    suptitle = fig.suptitle(title, fontsize=11)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    try:
        _fit_margins(fig, ax, pass_labels, suptitle, xlabel)
        _save(fig, paths, png_compress_level=JOB_PNG_COMPRESSION)
    finally:
        plt.close(fig)


def _bars(ax, x, heights, color, width: float = 0.75) -> None:
    """Bars from 0 to HEIGHTS at X as one collection: what ax.bar draws, without an artist per bar, which
    cost a bar chart a fifth of its time (each bar's patch, its transform and its data limits)."""
    left, right = x - width / 2, x + width / 2
    verts = np.stack(
        [
            np.column_stack([left, np.zeros_like(heights)]),
            np.column_stack([left, heights]),
            np.column_stack([right, heights]),
            np.column_stack([right, np.zeros_like(heights)]),
        ],
        axis=1,
    )
    ax.add_collection(PolyCollection(verts, facecolors=color, edgecolors="none", linewidths=0, zorder=3), autolim=False)


def _join_lines(parts: list[str], chars: int, sep: str = "   ") -> str:
    """Join parts with sep, breaking lines between parts (never inside one) at about ``chars`` characters."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(sep) + len(part) > chars:
            lines.append(part)
        else:
            lines[-1] += sep + part
    return "\n".join(lines)


def _fit_margins(fig, ax, labels_below: list, suptitle, supxlabel, pad_points: float = 3.0) -> None:
    """Place AX so that its labels, legend and texts, SUPTITLE and SUPXLABEL fit the figure, as constrained
    layout would, which took a quarter of a bar chart's time measuring every text with a renderer of its own.
    LABELS_BELOW (the pass labels, one per step) reach down as far as their longest: only the ones of at least 70%
    of the most characters are measured, since measuring a text costs as much as drawing it."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    pad = pad_points * fig.dpi / 72
    for label in labels_below:
        label.set_in_layout(False)
    try:
        inner, outer = ax.get_window_extent(renderer), ax.get_tightbbox(renderer)
    finally:
        for label in labels_below:
            label.set_in_layout(True)
    most = max((len(label.get_text()) for label in labels_below), default=0)
    longest = [label for label in labels_below if len(label.get_text()) >= 0.7 * most]
    outer = mtransforms.Bbox.union([outer, *(label.get_window_extent(renderer) for label in longest)])
    left = inner.x0 - outer.x0 + pad
    right = outer.x1 - inner.x1 + pad
    bottom = inner.y0 - outer.y0 + supxlabel.get_window_extent(renderer).height + 2 * pad
    top = outer.y1 - inner.y1 + suptitle.get_window_extent(renderer).height + 2 * pad
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)
    # the titles, centred on the figure as constrained layout centres them, at the figure's edges
    suptitle.set_y(1 - pad / height)
    supxlabel.set_y(pad / height)


def _grow_top(ax, factor: float, symlog: bool) -> float:
    """A new upper y limit that leaves room for a text box at the top of the axes."""
    lo, hi = ax.get_ylim()
    if symlog:
        return hi * (10 ** (factor * 1.2))
    return hi + (hi - lo) * (factor - 1.0) * 1.3


# ---------------------------------------------------------------------------------------------- heatmap


def _config_labels(jobs: pd.DataFrame) -> list[str]:
    """Column labels: target_name + shape for a kernel that fills the parameter columns (jobs.fills_param_columns),
    plus whatever else varies between such jobs (the kernel, when several fill them; the other columns); another
    kernel's jobs: target_name + their configuration label (the kernel and the parameters it sets)."""
    named = [fills_param_columns(row) for row in jobs.to_dict("records")]
    by_columns = jobs[pd.Series(named, index=jobs.index, dtype=bool)]
    # a version is its entry's name (two entries may import one tilelang_version): named when the jobs have several
    names = {version_name(r) for r in jobs.to_dict("records")}
    version = [lambda r: f"tl {version_name(r)}"] if len(names) > 1 else []
    extra = [lambda r: str(r["kernel"])] if by_columns["kernel"].nunique() > 1 else []
    if by_columns[["block_M", "block_N", "block_K"]].drop_duplicates().shape[0] > 1:
        extra.append(lambda r: f"blk {_block(r)}")
    if by_columns[["dtype", "accum_dtype"]].drop_duplicates().shape[0] > 1:
        extra.append(lambda r: f"{r['dtype']}/{r['accum_dtype']}")
    if by_columns[["threads", "stages"]].drop_duplicates().shape[0] > 1:
        extra.append(lambda r: f"t{r['threads']} s{r['stages']}")
    if by_columns["pass_configs"].nunique() > 1:
        extra.append(lambda r: pass_configs.label(json.loads(r["pass_configs"])).strip() or "[defaults]")
    labels = []
    for by_its_columns, (_, r) in zip(named, jobs.iterrows()):
        if by_its_columns:
            parts = [str(r["target_name"]), _shape(r)] + [f(r) for f in version + extra]
        else:
            parts = [str(r["target_name"]), *_wrapped(str(r["kernel_label"]))] + [f(r) for f in version]
        labels.append("\n".join(parts))
    return labels


LABEL_LINE_CHARS = 40  # a column label's longest line: a user's kernel label (often 100+ characters) wraps


def _wrapped(label: str) -> list[str]:
    """A configuration label in lines of at most LABEL_LINE_CHARS, broken after its commas where it can be, so that
    a long label does not make every column of the heatmap as wide as itself."""
    return textwrap.wrap(label, LABEL_LINE_CHARS, break_on_hyphens=False) or [label]


def _pass_ids(rows: pd.DataFrame) -> pd.Series:
    """Each row's pass identity (a frame made without the column: its pass names)."""
    if "pass_id" not in rows.columns:
        return rows["pass"]
    ids = rows["pass_id"].astype(object)
    return ids.where(ids.notna() & (ids != ""), rows["pass"])


def configuration_matrix(df: pd.DataFrame, mode: str = "trace-env", measure: str = "raw"):
    """(values, failed, row_labels, col_labels) for one mode.

    values[r, c]: added+deleted (float; NaN when the occurrence is absent from the configuration or failed);
    failed[r, c]: the occurrence failed in that configuration. Codegen rows are left out. ``measure``: raw, or
    stripped (the whitespace-insensitive counts).
    """
    df, _ = _measured(_as_frame(df), measure)
    modes = list(dict.fromkeys(df["mode"]))
    df = df[(df["mode"] == mode) & (df["status"] != pt.STATUS_CODEGEN)]
    if df.empty:
        raise ValueError(f"no pass rows of mode {mode!r}; modes present: {modes}")
    df = df.copy()
    groups = frames.job_frames(df)
    cells = []  # per job: {(pass, occurrence): (value, failed)}
    order_per_job = []
    for g in groups:
        seen: dict[str, int] = {}
        cell = {}
        order = []
        for p, st, a, d in zip(_pass_ids(g), g["status"], g["added"].fillna(0), g["deleted"].fillna(0)):
            seen[p] = seen.get(p, 0) + 1
            key = (p, seen[p])
            order.append(key)
            cell[key] = (float(a + d) if st in pt.CHURN_STATUSES else np.nan, st == pt.STATUS_FAILED)
        cells.append(cell)
        order_per_job.append(order)
    ref = max(range(len(groups)), key=lambda j: (len(order_per_job[j]), -j))
    row_keys = list(dict.fromkeys(order_per_job[ref] + [k for o in order_per_job for k in o]))
    repeated = {p for p, occ in row_keys if occ > 1}
    shown = pass_names.display_names(p for p, _ in row_keys)  # tl.Simplify and tirx.Simplify in full, else short
    row_labels = [f"{shown[p]} #{occ}" if p in repeated else shown[p] for p, occ in row_keys]
    jobs = pd.DataFrame([g.iloc[0] for g in groups])
    col_labels = _config_labels(jobs)
    values = np.full((len(row_keys), len(groups)), np.nan)
    failed = np.zeros_like(values, dtype=bool)
    for c, cell in enumerate(cells):
        for r, key in enumerate(row_keys):
            if key in cell:
                values[r, c], failed[r, c] = cell[key]
    return values, failed, row_labels, col_labels


def merge_configurations(values, failed, col_labels, max_columns: int = MAX_HEATMAP_COLUMNS):
    """Columns for a heatmap that stays readable at any number of configurations.

    Configurations with the same cells (churn and failures in every pass occurrence) share one column,
    labelled with the first of them and how many more it stands for. When more than max_columns distinct
    columns remain, the max_columns - 1 shared by the most configurations stay (ties: first in grid order)
    and one last column holds, per pass, the maximum over all the others. Returns (values, failed, labels,
    note), note saying what was merged ("" when nothing was).
    """
    groups: dict[bytes, list[int]] = {}
    for c in range(values.shape[1]):
        key = np.nan_to_num(values[:, c], nan=-1.0).tobytes() + failed[:, c].tobytes()
        groups.setdefault(key, []).append(c)
    columns = list(groups.values())  # in order of first appearance
    rest: list[int] = []
    if len(columns) > max_columns:
        ranked = sorted(columns, key=len, reverse=True)  # stable: equal counts keep grid order
        columns = sorted(ranked[: max_columns - 1], key=lambda group: group[0])
        rest = sorted(c for group in ranked[max_columns - 1 :] for c in group)
    if len(columns) == values.shape[1]:
        return values, failed, col_labels, ""
    firsts = [group[0] for group in columns]
    merged_values, merged_failed = values[:, firsts], failed[:, firsts]
    labels = [col_labels[g[0]] + (f"\n+{len(g) - 1} alike" if len(g) > 1 else "") for g in columns]
    if rest:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a pass absent from all of them stays NaN
            others = np.nanmax(values[:, rest], axis=1)
        merged_values = np.column_stack([merged_values, others])
        merged_failed = np.column_stack([merged_failed, failed[:, rest].any(axis=1)])
        labels.append(f"{len(rest)} others:\nmax per pass")
    columns_word = "column" if len(labels) == 1 else "columns"
    note = f"{values.shape[1]} configurations in {len(labels)} {columns_word}: identical ones merged"
    if rest:
        note += f", the {len(rest)} least common in the last column"
    return merged_values, merged_failed, labels, note


@fs.styled("en", hashsalt=HASHSALT)
def plot_configuration_heatmap(df, paths, mode: str = "trace-env", measure: str = "raw") -> None:
    """Heatmap of pass occurrences x configurations for one mode, saved to every path in ``paths``.
    Identical configurations share a column, and at most MAX_HEATMAP_COLUMNS are drawn (merge_configurations)."""
    values, failed, row_labels, col_labels = configuration_matrix(df, mode, measure)
    values, failed, col_labels, merge_note = merge_configurations(values, failed, col_labels)
    frame = _as_frame(df)
    measure_words = _measured(frame[frame["mode"] == mode], measure)[1]
    nrows, ncols = values.shape
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    label_chars = max(len(s) for s in row_labels)
    col_chars = max(len(line) for label in col_labels for line in label.split("\n"))
    col_lines = max(label.count("\n") + 1 for label in col_labels)
    col_w = max(0.6, 0.068 * col_chars + 0.2)  # inches per column: the widest label line plus a gap
    # labels written across would make the figure wider than a screen: written upwards, a column is as wide as
    # its label's lines and its cell's number
    upright = col_w * ncols > MAX_ACROSS_WIDTH_IN
    if upright:  # in one line: a column is as wide as a line of text and its cell's number
        col_labels = [" ".join(label.split("\n")) for label in col_labels]
        col_chars = max(len(label) for label in col_labels)
        col_w = UPRIGHT_COLUMN_IN
    label_height = 0.068 * col_chars + 0.1 if upright else 0.15 * col_lines
    width = 1.2 + 0.075 * label_chars + col_w * ncols + 1.6
    height = 2.6 + 0.2 * nrows + 2 * label_height  # the column labels above and below the cells
    fig, ax = plt.subplots(figsize=(max(6.0, width), max(4.0, height)), layout="constrained")

    mesh, norm = heatmap.draw_cells(ax, values, failed, UPRIGHT_CELLS if upright else heatmap.CellStyle())
    fs.matrix_axes(
        ax, row_labels, col_labels, row_fontsize=8, col_fontsize=8, col_rotation=90 if upright else None
    )  # fmt: skip  (first pass on top)
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=True, labelbottom=True)
    ax.set_ylabel("pass occurrence (execution order of the longest job)")

    heatmap.colorbar(fig, ax, mesh, norm, CBAR_LABEL, shrink=min(1.0, 12.0 / height) if height > 12 else 0.8)
    handles = heatmap.legend_handles("no-op (0 lines)", "absent in this configuration", "\u2715 failed")
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8.5, frameon=False)
    subtitle = measure_words + (f"; {merge_note}" if merge_note else "")
    fig.suptitle(f"TileLang pass churn per configuration, mode {mode} (codegen excluded)\n{subtitle}", fontsize=12)
    try:
        _save(fig, paths)
    finally:
        plt.close(fig)


def plot_jobs(passes_paths, figure_paths, measure: str = "raw", workers: int = 1) -> None:
    """One bar chart per job: figure_paths[i] from passes_paths[i]. One process imports pandas and matplotlib
    (2 s, more than a figure's 0.1-0.3 s) and forks ``workers`` children that draw the figures."""
    if len(passes_paths) != len(figure_paths):
        raise ValueError(f"{len(passes_paths)} passes.csv file(s) but {len(figure_paths)} figure path(s)")
    tasks = [(passes, figure, measure) for passes, figure in zip(passes_paths, figure_paths)]
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            _plot_one_job(task)
        return
    # a Ctrl-C reaches the workers too: they leave stopping to this process (interrupt.quiet_worker), no traceback
    with multiprocessing.get_context("fork").Pool(min(workers, len(tasks)), interrupt.quiet_worker) as pool:
        pool.map(_plot_one_job, tasks, chunksize=max(1, len(tasks) // (8 * workers)))


def _plot_one_job(task) -> None:
    passes, figure, measure = task
    plot_job_bars(frames.read_frame(passes), figure, measure)


# ----------------------------------------------------------- the command's work (scripts/plot_churn.py)


def draw_bars(passes_paths: list[str], figure_paths: list[str], measure: str = "raw", workers: int = 1) -> int:
    """``plot_jobs`` as an exit status: 0, or 1 with one line on stderr when a table cannot be read or a figure
    cannot be written."""
    return _exit_status(lambda: plot_jobs(passes_paths, figure_paths, measure, workers))


def draw_heatmap(rows: str | list[str], figure_paths: list[str], mode: str = "trace-env", measure: str = "raw") -> int:
    """``plot_configuration_heatmap`` as an exit status, as ``draw_bars``, of ``rows``: churn.csv, or the jobs'
    passes.csv in churn.csv's order. The jobs' tables draw the same figure, and the rule need not wait for
    churn.csv: the heatmap and the table are drawn side by side after the last trace batch."""
    paths = [rows] if isinstance(rows, (str, os.PathLike)) else list(rows)
    return _exit_status(
        lambda: plot_configuration_heatmap(
            frames.to_frame([row for path in paths for row in pt.read_rows(path)]), figure_paths, mode, measure
        )
    )


def _exit_status(draw) -> int:
    try:
        draw()
    except (OSError, ValueError) as exc:
        print(f"plot_churn: error: {exc}", file=sys.stderr)
        return 1
    return 0
