"""What each pass is worth: one figure per kernel configuration of the pass knockout (results/knockout/figures/).

    python3 scripts/knockout_figures.py --runs-dir results/knockout/runs --out-dir results/knockout/figures \\
        results/knockout/runs/*/*/*/knockout.json

One row per variant, the knocked-out passes in pipeline order (the baseline's step of the first skipped run),
top to bottom. The bar: lines of generated source that differ from the baseline's when the pass is knocked out
(+added + -deleted, symmetric log scale). A mark instead of a bar says what else happened: lowering failed
without the pass (red x), the lowering crashed or timed out (black x), the knockout took no effect (no run of
the pass was skipped: hollow grey circle), or the source came out byte for byte the baseline's (grey dot).
Changed source text is not changed speed or semantics: the figure locates, the GPU stage measures.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker

from tilelang_churn.core import jobs, knockout_rows, statuses
from tilelang_churn.figures import figure_style as fs  # selects the workflow's backend
from tilelang_churn.tables import knockout_table

HASHSALT = "tilelang-churn/knockout_figures"
BAR_COLOR = "#0072b2"
CRASH_COLOR = "#000000"
RATIO_TICKS = (0.1, 0.25, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100)


def _mark(row: dict) -> tuple[str, str]:
    """(kind, text at the right) of a variant row."""
    status = row["status"]
    if status == statuses.STATUS_LOWER_FAILED:
        return "fails", f"lower_failed: {row['error'] or ''}"
    if status in statuses.UNFINISHED_STATUSES:
        return "unfinished", f"{status}: {row['error'] or ''}"
    if not row["skipped_runs"]:
        return "no_effect", "no effect: no run skipped" + ("" if row["baseline_runs"] else " (not in the baseline)")
    if row["source_equal"]:
        return "same", "same source as the baseline"
    return "bar", f"+{row['source_added']} / -{row['source_deleted']} source lines"


NOTE_FONTSIZE = 7.0
NOTE_LINE_CHARS = 62  # a note's line: what the notes column holds at NOTE_FONTSIZE (the figure's right edge)


def _note(text: str) -> str:
    """A variant's note in at most two lines of NOTE_LINE_CHARS, cut with [...] past them: an error of TVM's runs
    to hundreds of characters, and one line of it ran off the figure."""
    lines = textwrap.wrap(" ".join(text.split()), NOTE_LINE_CHARS) or [""]
    if len(lines) > 2:
        lines = [lines[0], lines[1][: NOTE_LINE_CHARS - 6] + " [...]"]
    return "\n".join(lines)


def plot_configuration(rows: list[dict], paths) -> None:
    """The figure of one configuration's rows (its baseline and variants) into paths."""
    baseline = next((row for row in rows if row["variant"] == knockout_rows.BASELINE), rows[0])
    variants = [row for row in rows if row["variant"] != knockout_rows.BASELINE]
    height = 1.6 + 0.26 * max(1, len(variants))
    on_gpu = any(row.get("gpu_status") for row in rows)
    with fs.context("en", hashsalt=HASHSALT):
        ratios = [3, 3, 2] if on_gpu else [3, 2]
        fig, axes = plt.subplots(
            1, len(ratios), figsize=(16 if on_gpu else 12, height), layout="constrained", sharey=True,
            gridspec_kw={"width_ratios": ratios},
        )  # fmt: skip
        ax, notes = axes[0], axes[-1]
        notes.set_axis_off()
        title = (
            f"{baseline['kernel_label']} on {baseline['target_name']}, TileLang {jobs.version_label(baseline)}: "
            "what each pass is worth"
        )
        if baseline["status"] != statuses.STATUS_LOWERED:
            ax.set_axis_off()
            ax.set_title(title, loc="left")
            ax.text(0.0, 0.5, f"the baseline did not lower ({baseline['status']}): {baseline['error']}",
                    transform=ax.transAxes, va="center", wrap=True)  # fmt: skip
            fs.save(fig, paths)
            plt.close(fig)
            return
        if not variants:
            ax.set_axis_off()
            ax.set_title(title, loc="left")
            ax.text(0.0, 0.5, "no pass to knock out (config knockout.passes)", transform=ax.transAxes, va="center")
            fs.save(fig, paths)
            plt.close(fig)
            return
        largest = max((knockout_table.source_change(row) or 0 for row in variants), default=0)
        decades = max(1, math.ceil(math.log10(max(largest, 1) * 1.2)))
        high = 10.0**decades  # the axis ends at a labelled power of ten
        labels = []
        for y, row in enumerate(variants):
            kind, text = _mark(row)
            runs = f"{row['skipped_runs']}/{row['baseline_runs']} runs"
            labels.append(f"{row['variant']}  ({runs})")
            if kind == "bar":
                ax.barh(y, knockout_table.source_change(row), color=BAR_COLOR, height=0.7)
            elif kind == "fails":
                ax.scatter([0.6], [y], marker="x", color=fs.FAILED_COLOR, s=40, zorder=3)
            elif kind == "unfinished":
                ax.scatter([0.6], [y], marker="X", color=CRASH_COLOR, s=50, zorder=3)
            elif kind == "no_effect":
                ax.scatter([0.6], [y], marker="o", facecolor="none", edgecolor=fs.NOOP_COLOR, s=36, zorder=3)
            else:
                ax.scatter([0.6], [y], marker="o", color=fs.NOOP_COLOR, s=20, zorder=3)
            color = {"fails": fs.FAILED_COLOR, "unfinished": CRASH_COLOR}.get(kind, fs.TEXT_MUTED)
            if on_gpu and row.get("gpu_status"):
                text = f"{_gpu_text(row)}; {text}"
                color = fs.FAILED_COLOR if row["gpu_status"] != statuses.STATUS_OK else color
            notes.text(0.0, y, _note(text), va="center", fontsize=NOTE_FONTSIZE, color=color, clip_on=False,
                       linespacing=1.0)  # fmt: skip
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(0, high)
        ax.set_xticks([0] + [10**k for k in range(decades + 1)])
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda value, _: f"{value:g}"))  # no mathtext (fs.rc)
        ax.xaxis.set_minor_locator(mticker.NullLocator())
        ax.set_yticks(range(len(variants)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_ylim(len(variants) - 0.5, -0.5)
        ax.grid(True, axis="x", color=fs.GRID_COLOR, linewidth=0.6)
        ax.set_axisbelow(True)
        ax.set_xlabel(
            "source lines changed vs the baseline's\n"
            f"(+added + -deleted, symlog; baseline: {baseline['source_lines']} lines)"
        )
        if on_gpu:
            _latency_panel(axes[1], variants, baseline)
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
        handles = [
            plt.Rectangle((0, 0), 1, 1, color=BAR_COLOR),
            plt.Line2D([], [], marker="o", color=fs.NOOP_COLOR, linestyle="", markersize=5),
            plt.Line2D([], [], marker="o", markerfacecolor="none", markeredgecolor=fs.NOOP_COLOR, linestyle=""),
            plt.Line2D([], [], marker="x", color=fs.FAILED_COLOR, linestyle=""),
            plt.Line2D([], [], marker="X", color=CRASH_COLOR, linestyle=""),
        ]
        texts = ["source changed", "same source", "no effect (nothing skipped)", "lower_failed", "crashed / timeout"]
        if on_gpu:
            handles += [
                plt.Line2D([], [], marker="o", color=fs.ADDED_COLOR, linestyle=""),
                plt.Line2D([], [], marker="o", color=fs.DELETED_COLOR, linestyle=""),
            ]
            handles.append(plt.Line2D([], [], marker="o", color=fs.NOOP_COLOR, linestyle=""))
            texts += ["slower without the pass", "faster without the pass", "within the timings' range"]
        fig.legend(handles, texts, loc="outside lower left", ncol=len(texts), fontsize=8, frameon=False)
        fs.save(fig, paths)
        plt.close(fig)


def _gpu_text(row: dict) -> str:
    if row.get("latency_ratio") is not None:
        return f"x{row['latency_ratio']:.3g} latency"
    return f"GPU {row['gpu_status']}" + (f": {row['gpu_error']}" if row.get("gpu_error") else "")


def _latency_panel(ax, variants: list[dict], baseline: dict) -> None:
    """The latency with each pass knocked out over the baseline's, timed side by side (log scale, 1 = baseline),
    the repeats' range as an error bar; a mark where the variant was not timed (why: on the right)."""
    ax.axvline(1.0, color=fs.TEXT_MUTED, linewidth=1)
    timed = [row["latency_ratio"] for row in variants if row.get("latency_ratio") is not None]
    low = min([0.8, *[row["latency_ratio_low"] for row in variants if row.get("latency_ratio_low")]])
    high = max([1.25, *[row["latency_ratio_high"] for row in variants if row.get("latency_ratio_high")]])
    for y, row in enumerate(variants):
        ratio = row.get("latency_ratio")
        if ratio is not None:
            # coloured only beyond the repeats' range of both timings: inside it the knockout changed nothing measurable
            low_, high_ = row["latency_ratio_low"], row["latency_ratio_high"]
            color = fs.ADDED_COLOR if low_ > 1 else fs.DELETED_COLOR if high_ < 1 else fs.NOOP_COLOR
            error = [[ratio - row["latency_ratio_low"]], [row["latency_ratio_high"] - ratio]]
            ax.errorbar([ratio], [y], xerr=error, fmt="o", color=color, markersize=4, capsize=2, zorder=3)
        elif row.get("gpu_status"):  # not timed: compile_failed, launch_failed, wrong, timeout, crashed
            ax.scatter([low * 1.02], [y], marker="x", color=fs.FAILED_COLOR, s=40, zorder=3)
            ax.text(low * 1.08, y, row["gpu_status"], va="center", fontsize=7, color=fs.FAILED_COLOR)
    ax.set_xscale("log")
    ax.set_xlim(low * 0.98, high * 1.05)
    ax.set_xticks([tick for tick in RATIO_TICKS if low * 0.98 <= tick <= high * 1.05])
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.grid(True, axis="x", color=fs.GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    gpu = baseline.get("gpu_name") or "the GPU"
    base = baseline.get("latency_ms")
    said = f"{base:.4g} ms" if base is not None else f"not timed ({baseline.get('gpu_status')})"
    ax.set_xlabel(
        f"latency / the baseline's on {gpu} (log; baseline {said})\n"
        f"> 1: slower without the pass; bar: the repeats' range; {len(timed)} timed"
    )


def figure_paths(record: str | Path, runs_dir: str | Path, out_dir: str | Path, formats=("png",)) -> list[Path]:
    """A configuration's figures: runs/<version>/<target>/<shape>/knockout.json -> <out_dir>/<version>/<target>/
    <shape>.<format>."""
    folder = Path(record).parent.relative_to(runs_dir)
    return [Path(out_dir) / folder.parent / f"{folder.name}.{fmt}" for fmt in formats]


def build(records: list, runs_dir, out_dir, formats=("png",)) -> int:
    """One figure per configuration (its knockout.json, the table beside it checked against it; its GPU job's
    knockout_gpu.json among the records adds the latencies)."""
    drawn = knockout_table.configurations(records)
    for record, rows in drawn:
        plot_configuration(rows, figure_paths(record, runs_dir, out_dir, formats))
    print(f"knockout_figures: {len(drawn)} figures -> {out_dir}")
    return 0


def draw_figures(records: list[str], runs_dir: str | Path, out_dir: str | Path, formats: tuple[str, ...]) -> int:
    """``build``'s exit status: 1 with one line on stderr when a record or its table is refused."""
    try:
        return build(records, runs_dir, out_dir, formats)
    except knockout_rows.TableError as exc:
        print(f"knockout_figures.py: error: {exc}", file=sys.stderr)
        return 1
