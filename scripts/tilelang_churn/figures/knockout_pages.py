"""The pass knockout as HTML pages: ``index.html`` and one page per kernel configuration.

    python3 scripts/knockout_pages.py --runs-dir results/knockout/runs --out-dir results/knockout \\
        results/knockout/runs/*/*/*/knockout.json

    <out_dir>/index.html          every configuration: its variants by status, the passes whose knockout
                                  changes the generated source most, the passes lowering fails without,
                                  the knockouts without effect, a link to its page
    <out_dir>/pages/<version>__<target>__<configuration>.html
                                  every variant in pipeline order (runs skipped, status, source lines
                                  changed, IR churn beside the baseline's, the error), each linked to the
                                  diff of its generated source against the baseline's

Every page is one self-contained file (inline CSS, no network, relative links only): it opens from
``file://`` and inside Snakemake's report. Output is deterministic. Changed source text is not changed speed
or semantics: the page locates, the GPU stage measures. The markup is Jinja2 templates (``templates/knockout_*``,
autoescaped, in the comparison pages' frame and style); this module computes what they show.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tilelang_churn.core import files, jobs, knockout_rows, statuses
from tilelang_churn.figures.page_templates import diff_spans, page_name, render, text_diff
from tilelang_churn.tables import knockout_table

INDEX = "index.html"
PAGES_DIR = "pages"
STATUS_CLASS = {
    statuses.STATUS_LOWERED: "good",
    statuses.STATUS_LOWER_FAILED: "bad",
    statuses.STATUS_TIMEOUT: "bad",
    statuses.STATUS_CRASHED: "bad",
}


def _names(rows: list[dict], shown: int = 6) -> str:
    """The first ``shown`` variants' names and how many more ('' for none)."""
    names = [row["variant"] for row in rows]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more if names else ""


def configuration_page(summary: dict, sources: dict[str, str | None], figure_href: str | None) -> str:
    """One configuration's page: the variants' table, then each variant's source diff against the baseline's."""
    baseline = summary["baseline"] or summary["rows"][0]
    baseline_source = sources.get(knockout_rows.BASELINE)
    title = f"{baseline['kernel_label']} on {baseline['target_name']}, TileLang {jobs.version_label(baseline)}"
    rows, diffs = [], []
    on_gpu = any(row.get("gpu_status") for row in summary["rows"])
    for i, row in enumerate(summary["rows"]):
        is_baseline = row["variant"] == knockout_rows.BASELINE
        source = sources.get(row["variant"])
        diff = None  # no diff to show: the baseline, or a side without source
        if not is_baseline and source is not None and baseline_source is not None:
            diff = "same" if source == baseline_source else "diff"
            if diff == "diff":
                lines = text_diff(baseline_source, source, "baseline", row["variant"], lambda text: text) or []
                diffs.append(
                    {
                        "index": i,
                        "variant": row["variant"],
                        "added": row["source_added"],
                        "deleted": row["source_deleted"],
                        "lines": diff_spans(lines),
                    }
                )
        rows.append(
            {
                "index": i,
                "variant": row["variant"],
                "knocked": row.get("knocked_pass_id"),
                "step": row["pipeline_step"],
                "runs": "" if is_baseline else f"{_num(row['skipped_runs'])}/{_num(row['baseline_runs'])}",
                "status": row["status"],
                "status_css": STATUS_CLASS.get(row["status"], ""),
                "added": row["source_added"],
                "deleted": row["source_deleted"],
                "diff": diff,
                "churn": row["churn_total"],
                "gpu": _gpu(row),
                "error": row["error"] or row["note"],
                "gpu_error": row.get("gpu_error"),
                "switch": _switch_note(row),
            }
        )
    return render(
        "knockout_configuration.html.j2",
        title=f"knockout: {title}",
        heading=title,
        variants=summary["variants"],
        counts=[(status, n) for status, n in summary["counts"].items() if n],
        baseline={
            "lowered": baseline["status"] == statuses.STATUS_LOWERED,
            "status": baseline["status"],
            "error": baseline["error"],
            "source_lines": baseline["source_lines"],
            "churn": baseline["churn_total"],
            "pass_runs": baseline["pass_runs"],
        },
        figure=figure_href,
        on_gpu=on_gpu,
        rows=rows,
        diffs=diffs,
    )


def _num(value) -> str:
    return "" if value is None else str(value)


def _gpu(row: dict) -> dict | None:
    """The GPU verdict of a row: status, latency over the baseline's with the repeats' range, latency; None
    where it was not timed."""
    status = row.get("gpu_status")
    if not status:
        return None
    ratio = row.get("latency_ratio")
    ratio_text = ""
    if ratio is not None:
        ratio_text = f"{ratio:.3f} ({row['latency_ratio_low']:.3f}–{row['latency_ratio_high']:.3f})"
    latency = "" if row.get("latency_ms") is None else f"{row['latency_ms']:.4f}"
    css = "good" if status == statuses.STATUS_OK else "bad"
    return {"status": status, "css": css, "ratio": ratio_text, "latency": latency}


def _ratios(rows: list[dict]) -> list[tuple[str, str]]:
    return [(row["variant"], f"{row['latency_ratio']:.2f}") for row in rows]


def _switch_note(row: dict) -> dict | None:
    """The knocked pass beside TileLang's own switch for it (knockout.csv's switch columns), None without one."""
    if not row.get("switch"):
        return None
    settings = ", ".join(f"{key}={json.dumps(value)}" for key, value in json.loads(row["switch"]).items())
    if not row.get("switch_pass_configs"):
        return {"css": "muted", "settings": settings, "verdict": "not in the grid (add it to config pass_configs)"}
    same = row.get("switch_source_equal")
    verdict = "the same source as" if same else "other source than" if same is False else "compared with"
    latency = f", which runs in {row['switch_latency_ms']:.4g} ms" if row.get("switch_latency_ms") else ""
    return {"css": "switch", "settings": settings, "verdict": f"{verdict} the baseline with it on{latency}"}


def _counts(summary: dict) -> str:
    found = [f"{n} {status}" for status, n in summary["counts"].items() if n]
    return f"{summary['variants']}: " + ", ".join(found) if found else "0"


def index_page(entries: list[dict]) -> str:
    rows = []
    on_gpu = any(row.get("gpu_status") for entry in entries for row in entry["summary"]["rows"])
    for entry in entries:
        summary, baseline = entry["summary"], entry["summary"]["baseline"] or entry["summary"]["rows"][0]
        # not timed on the GPU: the wrong ones by name (a wrong result matters most), the rest counted
        wrong = [row["variant"] for row in summary["gpu_failed"] if row["gpu_status"] == statuses.STATUS_WRONG]
        others = [row["gpu_status"] for row in summary["gpu_failed"] if row["gpu_status"] != statuses.STATUS_WRONG]
        rows.append(
            {
                "href": entry["href"],
                "kernel_label": baseline["kernel_label"],
                "target": baseline["target_name"],
                "release": jobs.version_name(baseline),
                "lowered": baseline["status"] == statuses.STATUS_LOWERED,
                "status": baseline["status"],
                "counts": _counts(summary),
                "slower": _ratios(summary["slower_without"]),
                "faster": _ratios(summary["faster_without"]),
                "wrong": ", ".join(wrong) if wrong else None,
                "untimed": [f"{others.count(status)} {status}" for status in dict.fromkeys(others)],
                "changes": [(r["variant"], r["source_added"], r["source_deleted"]) for r in summary["largest_change"]],
                "needed": _names(summary["needed"], 3),
                "no_effect": _names(summary["no_effect"] + summary["same_source"], 3),
            }
        )
    return render("knockout_index.html.j2", title="Pass knockout", rows=rows, on_gpu=on_gpu, table="configurations")


def write_pages(records: list, runs_dir, out_dir, figures_dir=None) -> list[Path]:
    """index.html and a page per configuration (its knockout.json; sources.json.gz beside it) under out_dir."""
    out_dir = Path(out_dir)
    entries, written, used = [], [], set()
    configurations = knockout_table.configurations(records)
    # each variant beside its pass's switch, which may be another configuration's baseline
    beside = iter(knockout_table.add_switches([row for _, rows in configurations for row in rows]))
    for record, rows in configurations:
        summary = knockout_table.summarize([next(beside) for _ in rows])[0]
        folder = record.parent.relative_to(runs_dir)
        name = page_name("__".join(folder.parts))
        while name in used:
            name += "_"
        used.add(name)
        sources = knockout_rows.read_sources(record.with_name(knockout_rows.SOURCES))
        figure = None
        if figures_dir is not None:
            figure_path = Path(figures_dir) / folder.parent / f"{folder.name}.png"
            figure = Path("..") / figure_path.relative_to(out_dir) if figure_path.is_relative_to(out_dir) else None
        path = out_dir / PAGES_DIR / f"{name}.html"
        with files.atomic_file(path) as handle:
            handle.write(configuration_page(summary, sources, figure and figure.as_posix()))
        written.append(path)
        entries.append({"summary": summary, "href": f"{PAGES_DIR}/{name}.html"})
    index = out_dir / INDEX
    with files.atomic_file(index) as handle:
        handle.write(index_page(entries))
    return [index, *written]


def publish_pages(records: list[str], runs_dir: str | Path, out_dir: str | Path, figures_dir: str | None) -> int:
    """``write_pages``, then one line counting the pages; 1 with one line on stderr when a record or its table is
    refused or a page cannot be written."""
    try:
        paths = write_pages(records, runs_dir, out_dir, figures_dir)
    except (knockout_rows.TableError, ValueError, OSError) as exc:
        print(f"knockout_pages.py: error: {exc}", file=sys.stderr)
        return 1
    print(f"knockout_pages: {len(paths)} pages -> {out_dir}")
    return 0
