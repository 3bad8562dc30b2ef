"""The book's figures (chapter 12, example 4): a fixed set, sized for a page, in Chinese or English.

Usage::

    python scripts/book_figures.py --churn results/churn.csv \\
        --reference results/runs/0.1.15/cuda-sm90/1024x1024x1024/trace-env/passes.csv \\
        [--by-version results/compare/churn_by_version.csv] \\
        --out-dir results/book/en [--language en|zh] [--width-cm 15]

``--passes PASSES_CSV ...`` in place of ``--churn``: the tables of the jobs to draw from, read one after another
(the rule passes the jobs of the reference's release, mode and kernel, so that editing another kernel's file
reruns nothing of the book).

Writes, under ``--out-dir``, each figure as ``<stem>.png`` (300 dpi), ``<stem>.svg`` and ``<stem>.pdf``,
and ``FIGURES.md``, the list of what was written and what was not, and why:

- ``fig1_reference_passes``: per-pass churn of the reference job (``--reference``: the 1024^3 GEMM on
  cuda-sm90, mode trace-env, by default), passes in execution order, +added to the right, -deleted to the
  left; a run of consecutive no-op passes is one grey row, so every pass is accounted for.
- ``fig2_pass_heatmap``: passes (by name: the lines of all runs of a pass summed) x configurations (every job
  of the reference's release and mode), grouped by target; only passes that changed a line somewhere.
- ``fig3_releases``: with ``--by-version`` (the comparison of releases, ``compare_releases.py``): pass runs
  and lines changed per TileLang release, the reference's kernel on every target, in mode ``instrument``
  (the one mode of every release) when present. Without it the figure is not made and FIGURES.md says so.
- ``fig4_variants``: one change at a time: for every configuration that differs from the reference in
  exactly one respect (target, shape, block, dtype, threads or stages), the lines of each pass minus the
  reference's; only passes whose lines differ somewhere. Without such a configuration (a grid of the reference
  alone) the figure is not made and FIGURES.md says so.

A figure not made has its files of an earlier run removed, so that none contradicts FIGURES.md.

The codegen step (TIR -> source) is never churn and is left out of every figure; failed passes are
marked. Styling, fonts and saving come from ``figure_style``: same tables -> same bytes, and a glyph
missing from the fonts stops the figure (exit status 1). Exit status: 0 written, 1 bad input or a file that
cannot be written (one line naming it, e.g. a full disk), 2 bad arguments (a width that is not a finite
number in the config's range: refused before anything is read or drawn). Text churn is a clue to locate,
not proof of a semantic or performance change.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import csv
import json
import math
import sys
from pathlib import Path

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from tilelang_churn.core import files, pass_configs, pass_names  # noqa: E402
from tilelang_churn.core import passes_table as pt  # noqa: E402
from tilelang_churn.core.jobs import group_rows, job_key, version_label, version_name, version_order  # noqa: E402
from tilelang_churn.figures import figure_style as fs  # noqa: E402
from tilelang_churn.figures import heatmap  # noqa: E402

FIGURES = ("fig1_reference_passes", "fig2_pass_heatmap", "fig3_releases", "fig4_variants")
FORMATS = ("png", "svg", "pdf")
MANIFEST = "FIGURES.md"
DEFAULT_WIDTH_CM = 15.0
MAX_HEIGHT_CM = 22.0  # a book page's text block; rows get thinner rather than the figure taller
RELEASE_MODE = "instrument"  # the one trace mode that works in every supported release
HASHSALT = "tilelang-churn/book"

# kernel parameters of a job; the "axes" a configuration can differ in from the reference, in label order
KERNEL = ("M", "N", "K", "block_M", "block_N", "block_K", "dtype", "accum_dtype", "threads", "stages")
AXES = pt.KERNEL_AXES
# the range of config book_figure_width_cm (workflow/schemas/config.schema.yaml; a test keeps them in step)
MIN_WIDTH_CM = 4.0  # exclusive
MAX_WIDTH_CM = 40.0

TEXT = {
    "en": {
        "fig1_title": "Per-pass IR churn of the {shape} GEMM on {target} ({mode})",
        "fig1_sub": "{changed} of {passes} passes changed the IR: +{added} / \u2212{deleted} lines\n"
        "block {block}, {dtype}, {threads} threads, {stages} stages, TileLang {version}",
        "lines": "lines of IR text (\u2212deleted | +added)",
        "added": "+added lines",
        "deleted": "\u2212deleted lines",
        "noop_run": "{n} no-op passes (0 lines)",
        "noop_one": "1 no-op pass (0 lines)",
        "noop": "no-op pass (0 lines)",
        "failed": "failed",
        "codegen": "codegen: TIR \u2192 source, not churn (+{added} / \u2212{deleted})",
        "fig2_title": "Lines changed per pass and configuration ({mode}, TileLang {version})",
        "fig2_sub": "all runs of a pass summed; {hidden} passes changed nothing in any configuration and are not shown",
        "cbar": "lines changed (+added + \u2212deleted)",
        "zero": "0: ran, no change",
        "absent": "did not run",
        "pass": "pass",
        "fig3_title": "The {shape} GEMM across TileLang releases ({mode})",
        "pass_runs": "pass runs",
        "changed_runs": "of which changed the IR",
        "churn": "lines changed (+added + \u2212deleted)",
        "release": "TileLang release",
        "unsupported": "mode unsupported",
        "job_failed": "lowering failed",
        "fig4_title": "One change at a time: lines per pass minus the reference's",
        "fig4_sub": "reference: {reference}\nnot shown: {hidden} passes with the same lines everywhere (0 lines "
        "where they do not run)",
        "more": "more lines than the reference",
        "fewer": "fewer lines",
        "only_variant": "runs only here",
        "only_reference": "does not run here",
        "same": "same",
        "stages": "{n} stages",
        "stages_one": "1 stage",
        "stages_none": "no pipelining (0 stages)",
        "threads": "{n} threads",
        "block": "block {block}",
        "axes": {
            "target": "target",
            "shape": "shape",
            "block": "block",
            "dtype": "dtype",
            "threads": "threads",
            "stages": "pipeline",
            "pass_configs": "pass configs",
        },
        "describe": "{shape}, {target}, block {block}, {dtype}, {threads} threads, {stages} stages",
        "kernel": "block {block}, {dtype}, {threads} threads, {stages} stages",
    },
    "zh": {
        "fig1_title": "{shape} GEMM 在 {target} 上逐 pass 的 IR 改动行数（{mode}）",
        "fig1_sub": "{passes} 个 pass 中有 {changed} 个改动了 IR：+{added} / \u2212{deleted} 行\n"
        "分块 {block}，{dtype}，{threads} 线程，{stages} 级流水，TileLang {version}",
        "lines": "IR 文本行数（左：删除，右：新增）",
        "added": "新增行",
        "deleted": "删除行",
        "noop_run": "{n} 个无改动的 pass（0 行）",
        "noop_one": "1 个无改动的 pass（0 行）",
        "noop": "无改动的 pass（0 行）",
        "failed": "失败",
        "codegen": "codegen：TIR \u2192 源码，不计入改动（+{added} / \u2212{deleted}）",
        "fig2_title": "每个 pass 在各配置下的改动行数（{mode}，TileLang {version}）",
        "fig2_sub": "同名 pass 的多次运行已合计；{hidden} 个 pass 在所有配置下都未改动 IR，未列出",
        "cbar": "改动行数（新增与删除之和）",
        "zero": "0：运行了，无改动",
        "absent": "未运行",
        "pass": "pass",
        "fig3_title": "{shape} GEMM 在各 TileLang 版本下的变化（{mode}）",
        "pass_runs": "pass 运行次数",
        "changed_runs": "其中改动了 IR 的",
        "churn": "改动行数（新增与删除之和）",
        "release": "TileLang 版本",
        "unsupported": "该版本不支持此模式",
        "job_failed": "lowering 失败",
        "fig4_title": "每次只改一处：各 pass 的改动行数减去参照配置的",
        "fig4_sub": "参照：{reference}\n未列出：{hidden} 个在各配置下改动行数都相同的 pass（不运行按 0 行计）",
        "more": "比参照多",
        "fewer": "比参照少",
        "only_variant": "仅在此配置运行",
        "only_reference": "此配置不运行",
        "same": "相同",
        "stages": "{n} 级流水",
        "stages_one": "1 级流水",
        "stages_none": "不流水（0 级）",
        "threads": "{n} 线程",
        "block": "分块 {block}",
        "axes": {
            "target": "目标",
            "shape": "形状",
            "block": "分块",
            "dtype": "数据类型",
            "threads": "线程数",
            "stages": "流水级数",
            "pass_configs": "pass 配置",
        },
        "describe": "{shape}，{target}，分块 {block}，{dtype}，{threads} 线程，{stages} 级流水",
        "kernel": "分块 {block}，{dtype}，{threads} 线程，{stages} 级流水",
    },
}


class BookError(ValueError):
    """A missing or unusable input table: the message names it."""


# ------------------------------------------------------------------------------------------------ data


def churn_of(row: dict) -> int:
    return (row["added"] or 0) + (row["deleted"] or 0)


def pass_totals(job: list[dict]) -> dict[str, dict]:
    """Per pass (its identity: tl.Simplify and tirx.Simplify apart), in order of first run: lines over its
    changed/noop runs, runs, whether one failed."""
    totals: dict[str, dict] = {}
    for row in job:
        if row["status"] == pt.STATUS_CODEGEN or row["status"] == pt.STATUS_UNSUPPORTED:
            continue
        entry = totals.setdefault(pass_names.identity_of(row), {"lines": 0, "runs": 0, "failed": False})
        entry["runs"] += 1
        if row["status"] == pt.STATUS_FAILED:
            entry["failed"] = True
        else:
            entry["lines"] += churn_of(row)
    return totals


def shape_text(job: dict) -> str:
    m, n, k = job["M"], job["N"], job["K"]
    return f"{m}\u00b3" if m == n == k else f"{m}\u00d7{n}\u00d7{k}"


def block_text(job: dict) -> str:
    return f"{job['block_M']}\u00d7{job['block_N']}\u00d7{job['block_K']}"


def dtype_text(job: dict) -> str:
    return f"{job['dtype']}\u2192{job['accum_dtype']}"


def axis_text(axis: str, job: dict, language: str) -> str:
    words = TEXT[language]
    if axis == "target":
        return str(job["target_name"])
    if axis == "shape":
        return shape_text(job)
    if axis == "block":
        return words["block"].format(block=block_text(job))
    if axis == "dtype":
        return job["dtype"] if job["accum_dtype"] == "float32" else dtype_text(job)
    if axis == "threads":
        return words["threads"].format(n=job["threads"])
    if axis == "pass_configs":
        return pass_configs.label(json.loads(job["pass_configs"])).strip(" []") or "{}"
    if job["stages"] == 0:
        return words["stages_none"]
    if job["stages"] == 1:
        return words["stages_one"]
    return words["stages"].format(n=job["stages"])


differing_axes = pt.differing_axes


def reference_job(paths: Path | list[Path]) -> dict:
    """The reference job's provenance (first row of its passes.csv). Given several (the same configuration in each
    mode its release may have, in order of preference: a release not probed before its environment was built), the
    first whose job ran: a mode the release lacks leaves one unsupported row, nothing to draw."""
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(path) for path in paths]
    for path in paths:
        try:
            rows = pt.read_rows(path)
        except (OSError, pt.TableError) as exc:
            raise BookError(f"reference job: {exc}") from None
        if len({job_key(row) for row in rows}) != 1:
            raise BookError(f"{path}: the reference must be one job's passes.csv")
        if [row["status"] for row in rows] != [pt.STATUS_UNSUPPORTED]:
            return rows[0]
    modes = ", ".join(str(path.parent.name) for path in paths)
    raise BookError(
        f"the reference release {version_label(rows[0])} has the tool of none of the modes its jobs ran in ({modes});"
        " add mode instrument, which every release has"
    )


def same_release_and_mode(jobs: dict[tuple, list[dict]], reference: dict) -> dict[tuple, list[dict]]:
    return {
        key: job
        for key, job in jobs.items()
        if version_name(job[0]) == version_name(reference)
        and job[0]["mode"] == reference["mode"]
        and job[0]["kernel"] == reference["kernel"]  # the book's figures are its reference kernel's
    }


# --------------------------------------------------------------------------------------------- figures


def _words(language: str) -> dict:
    return TEXT[fs.check_language(language)]


def _finish(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.{fmt}" for fmt in FORMATS]
    try:
        for path in paths:
            fs.save(fig, [path], dpi=fs.PRINT_DPI, strict=True)
    finally:
        plt.close(fig)
    return paths


def _height(rows: float, per_row_cm: float, fixed_cm: float) -> tuple[float, float]:
    """(figure height, row height) in cm: rows of per_row_cm, thinner when the page would overflow."""
    per_row = min(per_row_cm, (MAX_HEIGHT_CM - fixed_cm) / max(rows, 1.0))
    return fixed_cm + per_row * rows, per_row


def plot_reference(job: list[dict], out_dir: Path, language: str, width_cm: float) -> list[Path]:
    """fig1: the reference job's passes in execution order, no-op runs collapsed into one row each."""
    words = _words(language)
    first = job[0]
    entries = []  # ("pass", row) | (STATUS_NOOP, [rows]) | (STATUS_CODEGEN, row)
    for row in job:
        if row["status"] == pt.STATUS_NOOP:
            if entries and entries[-1][0] == pt.STATUS_NOOP:
                entries[-1][1].append(row)
            else:
                entries.append((pt.STATUS_NOOP, [row]))
        elif row["status"] == pt.STATUS_CODEGEN:
            entries.append((pt.STATUS_CODEGEN, row))
        elif row["status"] in (pt.STATUS_CHANGED, pt.STATUS_FAILED):
            entries.append(("pass", row))
    if not entries:
        raise BookError("the reference job has no pass row")
    shown_names = pass_names.display_names(map(pass_names.identity_of, job))
    weights = [1.0 if kind == "pass" else 0.62 for kind, _ in entries]
    y = np.cumsum([0.0] + weights[:-1]) + np.array(weights) / 2
    total_rows = float(sum(weights))
    height_cm, _ = _height(total_rows, 0.3, 3.2)
    churn_rows = [r for r in job if r["status"] in pt.CHURN_STATUSES]
    added = sum(r["added"] or 0 for r in churn_rows)
    deleted = sum(r["deleted"] or 0 for r in churn_rows)
    widest = max([r["added"] or 0 for r in churn_rows] + [r["deleted"] or 0 for r in churn_rows] + [1])
    with fs.context(language, book=True, hashsalt=HASHSALT):
        fig, ax = plt.subplots(figsize=fs.book_size(width_cm, height_cm), layout="constrained")
        labels = []
        for (kind, item), yy in zip(entries, y):
            if kind == "pass":
                if item["status"] == pt.STATUS_FAILED:
                    ax.plot([0], [yy], marker="x", color=fs.FAILED_COLOR, markersize=6, markeredgewidth=1.6)
                    ax.text(widest * 0.04, yy, words["failed"], color=fs.FAILED_COLOR, va="center", fontsize=6.5)
                else:
                    a, d = item["added"] or 0, item["deleted"] or 0
                    ax.barh(yy, a, height=0.72, color=fs.ADDED_COLOR, zorder=3)
                    ax.barh(yy, -d, height=0.72, color=fs.DELETED_COLOR, zorder=3)
                    if a:
                        ax.text(a + widest * 0.01, yy, f"+{a}", va="center", ha="left", fontsize=5.5)
                    if d:
                        ax.text(-d - widest * 0.01, yy, f"\u2212{d}", va="center", ha="right", fontsize=5.5)
                name = shown_names[pass_names.identity_of(item)]
                labels.append((f"{item['step']}  {name}", "black" if item["changed"] else fs.FAILED_COLOR))
            elif kind == pt.STATUS_NOOP:
                n = len(item)
                steps = f"{item[0]['step']}" if n == 1 else f"{item[0]['step']}\u2013{item[-1]['step']}"
                text = words["noop_one"] if n == 1 else words["noop_run"].format(n=n)
                ax.plot([0], [yy], marker="o", color=fs.NOOP_COLOR, markersize=2.5, zorder=4)
                labels.append((f"{steps}  {text}", fs.NOOP_COLOR))
            else:
                labels.append((f"{item['step']}  codegen", fs.CODEGEN_COLOR))
                text = words["codegen"].format(added=item["added"] or 0, deleted=item["deleted"] or 0)
                ax.text(widest * 0.04, yy, text, va="center", ha="left", fontsize=6, color=fs.CODEGEN_COLOR)
        ax.set_yticks(y)
        ax.set_yticklabels([text for text, _ in labels])
        for tick, (_, color) in zip(ax.get_yticklabels(), labels):
            tick.set_color(color)
            if color != "black":
                tick.set_fontsize(5.8)
        ax.tick_params(axis="y", length=0)
        ax.set_ylim(total_rows, 0)
        ax.set_xlim(-widest * 1.18, widest * 1.18)
        ax.axvline(0, color="black", linewidth=0.6, zorder=4)
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{abs(v):g}"))
        ax.xaxis.set_major_locator(mticker.MaxNLocator(nbins=8, integer=True, symmetric=True))
        ax.set_xlabel(words["lines"])
        ax.grid(axis="x", color=fs.GRID_COLOR, linewidth=0.5, zorder=0)
        ax.set_axisbelow(True)
        ax.spines["left"].set_visible(False)
        handles = [
            Patch(color=fs.ADDED_COLOR, label=words["added"]),
            Patch(color=fs.DELETED_COLOR, label=words["deleted"]),
            Line2D([], [], linestyle="none", marker="o", markersize=2.5, color=fs.NOOP_COLOR, label=words["noop"]),
        ]
        ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, borderaxespad=0.3)
        passes = sum(1 for r in job if r["status"] in (*pt.CHURN_STATUSES, pt.STATUS_FAILED))
        changed = sum(1 for r in job if r["status"] == pt.STATUS_CHANGED)
        title = words["fig1_title"].format(shape=shape_text(first), target=first["target_name"], mode=first["mode"])
        sub = words["fig1_sub"].format(
            changed=changed,
            passes=passes,
            added=added,
            deleted=deleted,
            block=block_text(first),
            dtype=dtype_text(first),
            threads=first["threads"],
            stages=first["stages"],
            version=version_label(first),
        )
        fig.suptitle(f"{title}\n{sub}", fontsize=8)
        return _finish(fig, out_dir, FIGURES[0])


def _column_label(job: dict, reference: dict, language: str) -> str:
    """A configuration's column label: its shape, then whatever else differs from the reference."""
    parts = [shape_text(job)]
    for axis in ("block", "dtype", "threads", "stages", "pass_configs"):
        if axis in differing_axes(job, reference):
            parts.append(axis_text(axis, job, language))
    return "  ".join(parts)


def _label_column_groups(ax, groups, *, line_color, line_width: float) -> None:
    """A label above each run of adjacent columns and a vertical line between runs; groups: (label, columns),
    in column order (a group of no column is skipped)."""
    start = 0
    for label, count in groups:
        if not count:
            continue
        ax.text(start + (count - 1) / 2, -0.7, label, ha="center", va="bottom", fontsize=7)
        if start:
            ax.axvline(start - 0.5, color=line_color, linewidth=line_width)
        start += count


def _cell_text(ax, x, y, text, rgba, fontsize) -> None:
    lum = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color="black" if lum > 0.5 else "white")


def plot_pass_heatmap(
    jobs: dict[tuple, list[dict]], reference: dict, out_dir: Path, language: str, width_cm: float
) -> list[Path]:
    """fig2: pass names x configurations of the reference's release and mode, grouped by target."""
    words = _words(language)
    mine = same_release_and_mode(jobs, reference)
    targets = list(dict.fromkeys(job[0]["target_name"] for job in mine.values()))
    columns = [key for target in targets for key, job in mine.items() if job[0]["target_name"] == target]
    totals = [pass_totals(mine[key]) for key in columns]
    names = list(pass_totals(mine[job_key(reference)]))
    for table in totals:
        names += [name for name in table if name not in names]
    shown = [n for n in names if any(t.get(n, {}).get("lines", 0) > 0 or t.get(n, {}).get("failed") for t in totals)]
    hidden = len(names) - len(shown)
    values = np.full((len(shown), len(columns)), np.nan)
    failed = np.zeros(values.shape, dtype=bool)
    for c, table in enumerate(totals):
        for r, name in enumerate(shown):
            if name in table:
                values[r, c] = table[name]["lines"]
                failed[r, c] = table[name]["failed"]
    labels = [_column_label(mine[key][0], reference, language) for key in columns]
    label_cm = 0.16 * max(len(s) for s in labels) + 0.4
    height_cm, _ = _height(len(shown), 0.36, 3.4 + label_cm)
    with fs.context(language, book=True, hashsalt=HASHSALT):
        fig, ax = plt.subplots(figsize=fs.book_size(width_cm, height_cm), layout="constrained")
        mesh, norm = heatmap.draw_cells(ax, values, failed, heatmap.BOOK_CELLS)
        # target groups: a label above each group, a white gap between groups
        groups = [(t, sum(1 for key in columns if mine[key][0]["target_name"] == t)) for t in targets]
        _label_column_groups(ax, groups, line_color="white", line_width=2.5)
        row_names = pass_names.display_names(names)
        fs.matrix_axes(ax, [row_names[name] for name in shown], labels, col_rotation=90)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        heatmap.colorbar(fig, ax, mesh, norm, words["cbar"], shrink=0.6, aspect=25)
        failed_entry = words["failed"] if failed.any() else None
        handles = heatmap.legend_handles(words["zero"], words["absent"], failed_entry, heatmap.BOOK_CELLS)
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
        title = words["fig2_title"].format(mode=reference["mode"], version=version_label(reference))
        fig.suptitle(f"{title}\n{words['fig2_sub'].format(hidden=hidden)}", fontsize=8)
        return _finish(fig, out_dir, FIGURES[1])


FAILED, NOT_REACHED = 3, 4  # plot_variants' cell states beyond its three differences


def plot_variants(
    jobs: dict[tuple, list[dict]], reference: dict, out_dir: Path, language: str, width_cm: float
) -> list[Path] | None:
    """fig4: every configuration that differs from the reference in one respect, lines per pass minus the
    reference's; a pass that runs on one side only is marked as such. None (nothing drawn) when no
    configuration differs from the reference in exactly one respect."""
    words = _words(language)
    mine = same_release_and_mode(jobs, reference)
    ref_key = job_key(reference)
    variants = []  # (axis, key)
    for axis in AXES:
        variants += [(axis, key) for key, job in mine.items() if differing_axes(job[0], reference) == [axis]]
    if not variants:
        return None
    ref_totals = pass_totals(mine[ref_key])
    totals = [pass_totals(mine[key]) for _, key in variants]
    names = list(ref_totals)
    for table in totals:
        names += [name for name in table if name not in names]
    delta = np.zeros((len(names), len(variants)))
    # 0 both ran (or neither), 1 only in the variant, 2 only in the reference, FAILED failed in the variant,
    # NOT_REACHED not run by a variant that failed before it (no difference to show: a failure is data)
    state = np.zeros(delta.shape, dtype=int)
    for c, table in enumerate(totals):
        failed_job = any(entry["failed"] for entry in table.values())
        for r, name in enumerate(names):
            mine_entry, ref_entry = table.get(name), ref_totals.get(name)
            if mine_entry is not None and mine_entry["failed"]:
                state[r, c] = FAILED
            elif mine_entry is not None and ref_entry is not None:
                delta[r, c] = mine_entry["lines"] - ref_entry["lines"]
            elif mine_entry is not None:
                delta[r, c], state[r, c] = mine_entry["lines"], 1
            elif ref_entry is not None:
                if failed_job:
                    state[r, c] = NOT_REACHED
                else:
                    delta[r, c], state[r, c] = -ref_entry["lines"], 2
    keep = [r for r in range(len(names)) if (delta[r] != 0).any() or (state[r] == FAILED).any()]
    hidden = len(names) - len(keep)
    names = [names[r] for r in keep]
    delta, state = delta[keep], state[keep]
    labels = [axis_text(axis, mine[key][0], language) for axis, key in variants]
    label_cm = 0.16 * max(len(s) for s in labels) + 0.4
    height_cm, _ = _height(len(names), 0.36, 3.6 + label_cm)
    limit = max(2.0, float(np.abs(delta).max(initial=0.0)))
    norm = mcolors.SymLogNorm(linthresh=1.0, linscale=0.4, vmin=-limit, vmax=limit)
    cmap = plt.get_cmap(fs.DIVERGING_CMAP_NAME)
    with fs.context(language, book=True, hashsalt=HASHSALT):
        fig, ax = plt.subplots(figsize=fs.book_size(width_cm, height_cm), layout="constrained")
        shown = np.ma.masked_where(delta == 0, delta)
        edges_x, edges_y = np.arange(len(variants) + 1) - 0.5, np.arange(len(names) + 1) - 0.5
        ax.set_facecolor("white")
        mesh = ax.pcolormesh(edges_x, edges_y, shown, cmap=cmap, norm=norm, edgecolors="#eeeeee", linewidth=0.5)
        for r in range(len(names)):
            for c in range(len(variants)):
                value = int(delta[r, c])
                if state[r, c] == FAILED:
                    ax.text(c, r, "\u00d7", ha="center", va="center", fontsize=7, color=fs.FAILED_COLOR)
                    continue
                if state[r, c] == NOT_REACHED:
                    ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=fs.ABSENT_COLOR,
                                           edgecolor=fs.ABSENT_EDGE, hatch="////", linewidth=0))  # fmt: skip
                    continue
                if state[r, c]:
                    ax.add_patch(
                        Rectangle(
                            (c - 0.44, r - 0.44),
                            0.88,
                            0.88,
                            fill=False,
                            edgecolor="black",
                            linewidth=0.7,
                            linestyle="-" if state[r, c] == 1 else ":",
                        )
                    )
                if value:
                    text = f"+{value}" if value > 0 else f"\u2212{-value}"
                    _cell_text(ax, c, r, text, cmap(norm(value)), 5.0)
                elif not state[r, c]:
                    ax.text(c, r, "\u00b7", ha="center", va="center", fontsize=6, color="#999999")
        # group the columns by axis
        groups = [(words["axes"][axis], sum(1 for a, _ in variants if a == axis)) for axis in AXES]
        _label_column_groups(ax, groups, line_color=fs.TEXT_MUTED, line_width=0.8)
        row_names = pass_names.display_names(names)
        fs.matrix_axes(ax, [row_names[name] for name in names], labels, col_rotation=90)
        cbar = fig.colorbar(mesh, ax=ax, shrink=0.6, aspect=25, pad=0.02)
        ticks = [t for t in (1, 10, 100, 1000) if t <= limit]
        cbar.set_ticks([-t for t in reversed(ticks)] + [0] + ticks)
        cbar.ax.yaxis.set_major_formatter(
            mticker.FuncFormatter(lambda v, _: f"+{v:g}" if v > 0 else (f"\u2212{-v:g}" if v < 0 else "0"))
        )
        cbar.ax.yaxis.set_minor_formatter(mticker.NullFormatter())
        cbar.set_label(f"{words['fewer']}  \u2190  \u2192  {words['more']}")
        handles = [Line2D([], [], linestyle="none", marker=".", markersize=3, color="#999999", label=words["same"])]
        if (state == 1).any():
            handles.append(Patch(facecolor="white", edgecolor="black", label=words["only_variant"]))
        if (state == 2).any():
            handles.append(Patch(facecolor="white", edgecolor="black", linestyle=":", label=words["only_reference"]))
        if (state == FAILED).any():
            handles.append(Line2D([], [], linestyle="none", marker="x", color=fs.FAILED_COLOR, label=words["failed"]))
        if (state == NOT_REACHED).any():
            handles.append(Patch(facecolor=fs.ABSENT_COLOR, edgecolor=fs.ABSENT_EDGE, hatch="////",
                                 label=words["absent"]))  # fmt: skip
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
        sub = words["fig4_sub"].format(reference=_describe(reference, language), hidden=hidden)
        fig.suptitle(f"{words['fig4_title']}\n{sub}", fontsize=8)
        return _finish(fig, out_dir, FIGURES[3])


def _describe(job: dict, language: str = "en") -> str:
    """The kernel of a job in one line: shape, target, block, dtype, threads, stages."""
    return TEXT[language]["describe"].format(
        shape=shape_text(job),
        target=job["target_name"],
        block=block_text(job),
        dtype=job["dtype"],
        threads=job["threads"],
        stages=job["stages"],
    )


# ------------------------------------------------------------------------------------------ releases


def read_by_version(path: Path, kernel: str) -> list[dict]:
    """churn_by_version.csv's rows of the reference's kernel (compare_releases.py; a table without the kernel
    column holds only its), typed enough for the figure: the book names its configurations by the parameter
    columns, which another kernel's rows may leave empty."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise BookError(f"comparison of releases: {exc}") from None
    need = {"target_name", "tilelang_version", "mode", "pass_runs", "changed_runs", "churn_total", *KERNEL}
    if not rows or need - set(rows[0]):
        raise BookError(f"{path}: not a churn_by_version.csv with rows (needs {sorted(need)})")
    rows = [row for row in rows if row.get("kernel", kernel) == kernel]
    for row in rows:
        for column in KERNEL:
            if column not in ("dtype", "accum_dtype"):
                row[column] = int(row[column])
        for column in ("pass_runs", "changed_runs", "churn_total"):
            row[column] = int(float(row[column])) if row[column] not in ("", None) else None
        for column in ("failed", "unsupported"):
            row[column] = row.get(column) == "True"
    return rows


def plot_releases(by_version: list[dict], reference: dict, out_dir: Path, language: str, width_cm: float):
    """fig3: pass runs and lines changed per release, the reference's kernel on every target."""
    words = _words(language)
    kernel = [row for row in by_version if all(row[c] == reference[c] for c in KERNEL)]
    modes = list(dict.fromkeys(row["mode"] for row in kernel))
    mode = RELEASE_MODE if RELEASE_MODE in modes else reference["mode"]
    rows = [row for row in kernel if row["mode"] == mode]
    if not rows:
        raise BookError(
            f"the comparison of releases has no job of the reference kernel ({_describe(reference)}) in mode "
            f"{mode}; modes with that kernel: {modes or 'none'}"
        )
    # a version is its entry's name (a table written before the column: its tilelang_version), in version order
    order = {version_name(row): version_order(row) for row in rows}
    releases = sorted(order, key=order.__getitem__)
    targets = list(dict.fromkeys(row["target_name"] for row in rows))
    x_of = {release: x for x, release in enumerate(releases)}
    with fs.context(language, book=True, hashsalt=HASHSALT):
        fig, axes = plt.subplots(
            1, 2, figsize=fs.book_size(width_cm, max(7.0, width_cm * 0.5)), layout="constrained", sharex=True
        )
        shift = min(0.08, 0.3 / max(1, len(targets)))
        for k, target in enumerate(targets):
            color = fs.SERIES_COLORS[k % len(fs.SERIES_COLORS)]
            mine = sorted((r for r in rows if r["target_name"] == target), key=lambda r: x_of[version_name(r)])
            dx = (k - (len(targets) - 1) / 2) * shift
            data = [r for r in mine if not r["unsupported"]]
            xs = [x_of[version_name(r)] + dx for r in data]
            axes[0].plot(xs, [r["pass_runs"] for r in data], marker="o", color=color, label=target)
            axes[0].plot(xs, [r["changed_runs"] for r in data], marker="o", color=color, linestyle="--", mfc="white")
            axes[1].plot(xs, [r["churn_total"] for r in data], marker="o", color=color)
            for ax in axes:
                for r in mine:
                    x = x_of[version_name(r)] + dx
                    if r["unsupported"]:
                        ax.plot([x], [0], marker="s", mfc="white", mec=fs.UNSUPPORTED_EDGE, linestyle="none")
            for r in (r for r in data if r["failed"]):
                x = x_of[version_name(r)] + dx
                axes[0].plot([x], [r["pass_runs"]], marker="x", color=fs.FAILED_COLOR, markersize=6, mew=1.5)
                axes[1].plot([x], [r["churn_total"]], marker="x", color=fs.FAILED_COLOR, markersize=6, mew=1.5)
        axes[0].set_title(words["pass_runs"])
        axes[1].set_title(words["churn"])
        for ax, metric in zip(axes, ("pass_runs", "churn_total")):
            ax.set_xticks(range(len(releases)))
            ax.set_xticklabels(releases, rotation=45, ha="right")
            ax.set_xlim(-0.5, len(releases) - 0.5)
            ax.set_ylim(0, 1.12 * max([r[metric] or 0 for r in rows] + [1]))  # room above the highest point
            ax.yaxis.set_major_locator(mticker.MaxNLocator(integer=True))
            ax.grid(axis="y", color=fs.GRID_COLOR, linewidth=0.5)
            ax.set_axisbelow(True)
            ax.set_xlabel(words["release"])
        handles = [Line2D([], [], color=fs.SERIES_COLORS[k % 8], marker="o", label=t) for k, t in enumerate(targets)]
        handles.append(
            Line2D([], [], color="black", linestyle="--", marker="o", mfc="white", label=words["changed_runs"])
        )
        if any(r["failed"] for r in rows):
            handles.append(
                Line2D([], [], linestyle="none", marker="x", color=fs.FAILED_COLOR, mew=1.5, label=words["job_failed"])
            )
        if any(r["unsupported"] for r in rows):
            handles.append(
                Line2D(
                    [],
                    [],
                    linestyle="none",
                    marker="s",
                    mfc="white",
                    mec=fs.UNSUPPORTED_EDGE,
                    label=words["unsupported"],
                )
            )
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
        title = words["fig3_title"].format(shape=shape_text(reference), mode=mode)
        kernel = words["kernel"].format(
            block=block_text(reference),
            dtype=reference["dtype"],
            threads=reference["threads"],
            stages=reference["stages"],
        )
        fig.suptitle(f"{title}\n{kernel}", fontsize=8)
        return _finish(fig, out_dir, FIGURES[2])


# ---------------------------------------------------------------------------------------------- driver


def write_manifest(out_dir: Path, written: dict, skipped: dict, reference: dict, language: str, width_cm: float):
    """FIGURES.md: what each figure shows and where it comes from; what was not made and why (no dates)."""
    about = {
        FIGURES[0]: "per-pass churn of the reference job, passes in execution order (+added right, -deleted "
        "left); each run of consecutive no-op passes is one grey row",
        FIGURES[1]: "pass names (all runs summed) x configurations of the reference's release and mode, grouped "
        "by target; only passes that changed a line in some configuration",
        FIGURES[2]: f"pass runs (dashed: of which changed the IR) and lines changed per TileLang release, the "
        f"reference's kernel on every target (mode {RELEASE_MODE} when compared, else the reference's)",
        FIGURES[3]: "for each configuration that differs from the reference in one respect, lines per pass minus "
        "the reference's; solid box: the pass runs only there, dotted: it does not run there",
    }
    lines = [
        "# Book figures (chapter 12, example 4)",
        "",
        f"Language: {language}. Width: {width_cm:g} cm. PNG at {fs.PRINT_DPI} dpi, SVG (text as paths) and PDF "
        "(fonts embedded).",
        f"Font: {'Noto Sans CJK SC (mplfonts, OFL), DejaVu Sans fallback' if language == 'zh' else 'DejaVu Sans'}."
        " Missing glyphs: none (a missing glyph stops the figure).",
        f"Reference job: {_describe(reference)}, mode {reference['mode']}, TileLang {version_label(reference)}.",
        "Regenerated from the same tables, every file is byte-identical.",
        "",
        "| figure | files | what it shows |",
        "| --- | --- | --- |",
    ]
    for stem in FIGURES:
        if stem in written:
            names = ", ".join(f"`{p.name}`" for p in written[stem])
            lines.append(f"| {stem} | {names} | {about[stem]} |")
        else:
            lines.append(f"| {stem} | not made | {skipped[stem]} |")
    lines += ["", "Text churn is a clue to locate, not proof of a semantic or performance change.", ""]
    path = out_dir / MANIFEST
    with files.atomic_file(path) as handle:
        handle.write("\n".join(lines))
    return path


def width_problem(width_cm) -> str | None:
    """Why a figure width cannot be used (not a finite number in the config's range), or None."""
    try:
        width = float(width_cm)
    except (TypeError, ValueError):
        return f"width {width_cm!r} cm: not a number"
    if not math.isfinite(width) or not MIN_WIDTH_CM < width <= MAX_WIDTH_CM:
        return (
            f"width {width_cm!r} cm: must be a finite number above {MIN_WIDTH_CM:g} and at most {MAX_WIDTH_CM:g} "
            "(config book_figure_width_cm, --width-cm)"
        )
    return None


def check_style(language: str, width_cm) -> None:
    """A language and a width the figures can be drawn in, before anything is read or drawn: BookError (or
    figure_style's error for an unknown language) otherwise."""
    fs.check_language(language)
    problem = width_problem(width_cm)
    if problem:
        raise BookError(problem)


def read_tables(paths: list[Path]) -> list[dict]:
    """The rows of churn.csv, or of jobs' passes.csv files one after another, through the strict reader (a
    half-written or changed file is refused, named: BookError)."""
    rows = []
    for path in paths:
        try:
            rows += pt.read_rows(path)
        except (OSError, pt.TableError) as exc:
            raise BookError(str(exc)) from None
    return rows


def build(
    churn: Path | list[Path],
    reference: Path,
    out_dir: Path,
    language: str = "en",
    width_cm: float = DEFAULT_WIDTH_CM,
    by_version: Path | None = None,
    releases_apart: bool = False,
    workers: int = 1,
) -> dict:
    """Read the tables (``churn``: churn.csv, or the passes.csv files of the jobs to draw from, in the order
    churn.csv would hold them) and write every figure and FIGURES.md; returns {"written": {stem: paths},
    "skipped": {stem: why}}. With ``releases_apart`` figure 3 is drawn by ``build_releases`` (the workflow's job
    of its own, which reruns alone when a release is added): FIGURES.md lists its files, and they are left as
    they are. The figures are drawn side by side by ``workers`` processes (figure_style.side_by_side), to the same
    bytes. Raises BookError (bad input, a bad width: before anything is read or drawn),
    figure_style.MissingGlyphError, or files.WriteError (a full disk: names the file)."""
    check_style(language, width_cm)
    out_dir = Path(out_dir)
    tables = [churn] if isinstance(churn, (str, Path)) else list(churn)
    rows = read_tables(tables)
    jobs = group_rows(rows)
    ref = reference_job(reference)
    if job_key(ref) not in jobs:
        where = tables[0] if len(tables) == 1 else f"the {len(tables)} passes.csv files"
        raise BookError(f"the reference job ({_describe(ref)}, {ref['mode']}) is not in {where}")
    draws = {
        FIGURES[0]: (plot_reference, (jobs[job_key(ref)], out_dir, language, width_cm)),
        FIGURES[1]: (plot_pass_heatmap, (jobs, ref, out_dir, language, width_cm)),
        FIGURES[3]: (plot_variants, (jobs, ref, out_dir, language, width_cm)),
    }
    if by_version is not None:
        by_version_rows = read_by_version(Path(by_version), ref["kernel"])
        draws[FIGURES[2]] = (plot_releases, (by_version_rows, ref, out_dir, language, width_cm))
    drawn = dict(zip(draws, fs.side_by_side(list(draws.values()), workers)))
    if by_version is None and releases_apart:
        drawn[FIGURES[2]] = [out_dir / f"{FIGURES[2]}.{fmt}" for fmt in FORMATS]
    written: dict[str, list[Path]] = {stem: drawn[stem] for stem in FIGURES if drawn.get(stem) is not None}
    skipped: dict[str, str] = {}
    if FIGURES[2] not in drawn:
        order = {version_label(row): version_order(row) for row in rows}
        releases = sorted(order, key=order.__getitem__)
        skipped[FIGURES[2]] = (
            f"the config compares no releases (the tables hold TileLang {', '.join(releases)} only): "
            "set config `versions` to two or more releases to get it"
        )
    if drawn[FIGURES[3]] is None:
        skipped[FIGURES[3]] = (
            f"no configuration of TileLang {version_label(ref)}, mode {ref['mode']} differs from the reference "
            f"({_describe(ref)}) in exactly one respect (target, shape, block, dtype, threads or stages): add a "
            "target, or a shape that changes one of them, to get it"
        )
    for stem in skipped:  # a figure of an earlier grid would contradict FIGURES.md
        for fmt in FORMATS:
            (out_dir / f"{stem}.{fmt}").unlink(missing_ok=True)
    write_manifest(out_dir, written, skipped, ref, language, width_cm)
    for stem, why in skipped.items():
        print(f"book_figures: {stem} not made: {why}")
    return {"written": written, "skipped": skipped}


def build_releases(reference: Path, by_version: Path, out_dir: Path, language: str = "en",
                   width_cm: float = DEFAULT_WIDTH_CM) -> dict:  # fmt: skip
    """Figure 3 alone, from the comparison's churn_by_version.csv and the reference job's passes.csv, as ``build``
    draws it (FIGURES.md, written by ``build`` with ``releases_apart``, lists it); returns ``build``'s dict."""
    check_style(language, width_cm)
    ref = reference_job(reference)
    rows = read_by_version(Path(by_version), ref["kernel"])
    return {"written": {FIGURES[2]: plot_releases(rows, ref, Path(out_dir), language, width_cm)}, "skipped": {}}


def draw_book(
    churn: Path | list[Path] | None,
    reference: Path,
    out_dir: Path,
    language: str,
    width_cm: float,
    by_version: Path | None,
    releases_apart: bool = False,
    workers: int = 1,
) -> int:
    """``build`` (``churn`` None: ``build_releases``), one line per figure written; 2 with one line on stderr for a
    width that cannot be used (nothing read, drawn or removed), 1 with one line on stderr when a figure cannot be
    made or written."""
    problem = width_problem(width_cm)
    if problem:  # a bad argument: nothing read, drawn or removed
        print(f"book_figures: error: {problem}", file=sys.stderr)
        return 2
    try:
        if churn is None:
            result = build_releases(reference, by_version, out_dir, language, width_cm)
        else:
            result = build(churn, reference, out_dir, language, width_cm, by_version, releases_apart, workers)
    except (BookError, fs.MissingGlyphError, fs.FontNotInstalled, OSError) as exc:
        print(f"book_figures: error: {exc}", file=sys.stderr)
        return 1
    for stem, paths in result["written"].items():
        if releases_apart and churn is not None and stem == FIGURES[2]:
            print(f"book_figures: {stem}: listed in {MANIFEST}, drawn by its own job (--releases-only)")
        else:
            print(f"book_figures: {stem}: {', '.join(str(p) for p in paths)}")
    return 0
