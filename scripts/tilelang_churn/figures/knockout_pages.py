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
or semantics: the page locates, the GPU stage measures.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from tilelang_churn.core import files, knockout_rows, statuses
from tilelang_churn.figures import compare_pages
from tilelang_churn.figures.compare_pages import diff_line_class, html_page, page_name, text_diff
from tilelang_churn.tables import knockout_table

INDEX = "index.html"
PAGES_DIR = "pages"
INDEX_JS = compare_pages.INDEX_JS.replace("#pairs", "#configurations")
# the comparison pages' style, and cells that wrap: pass lists and errors are long
# (anywhere, not break-word: only it lets a long pass name shrink a table's columns, so that at 1000 px nothing
# scrolls sideways)
EXTRA_CSS = (
    "<style>td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:14em;max-width:48em}"
    "td.list{white-space:normal;overflow-wrap:anywhere;min-width:6em;max-width:22em}"
    "#configurations th,#variants th{white-space:normal}"
    "div.switch{color:#1f4e8c}</style>"
)
STATUS_CLASS = {
    statuses.STATUS_LOWERED: "no",
    statuses.STATUS_LOWER_FAILED: "yes",
    statuses.STATUS_TIMEOUT: "yes",
    statuses.STATUS_CRASHED: "yes",
}


def _esc(value) -> str:
    return html.escape("" if value is None else str(value))


def _num(value) -> str:
    return "" if value is None else str(value)


def _names(rows: list[dict], shown: int = 6) -> str:
    names = [row["variant"] for row in rows]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return _esc(", ".join(names[:shown]) + more) if names else '<span class="na">none</span>'


def _changes(rows: list[dict]) -> str:
    if not rows:
        return '<span class="na">none</span>'
    return ", ".join(
        f"{_esc(row['variant'])} <span class=plus>+{row['source_added']}</span>/"
        f"<span class=minus>-{row['source_deleted']}</span>"
        for row in rows
    )


def configuration_page(summary: dict, sources: dict[str, str | None], figure_href: str | None) -> str:
    """One configuration's page: the variants' table, then each variant's source diff against the baseline's."""
    baseline = summary["baseline"] or summary["rows"][0]
    baseline_source = sources.get(knockout_rows.BASELINE)
    title = f"{baseline['kernel_label']} on {baseline['target_name']}, TileLang {baseline['tilelang_version']}"
    trs, diffs = [], []
    on_gpu = any(row.get("gpu_status") for row in summary["rows"])
    for i, row in enumerate(summary["rows"]):
        is_baseline = row["variant"] == knockout_rows.BASELINE
        source = sources.get(row["variant"])
        diff_cell = '<td class="na">—</td>'
        if not is_baseline and source is not None and baseline_source is not None:
            if source == baseline_source:
                diff_cell = '<td class="no">same source</td>'
            else:
                diff_cell = f'<td><a href="#d{i}">diff</a></td>'
                lines = text_diff(baseline_source, source, "baseline", row["variant"], lambda text: text) or []
                spans = "".join(f'<span class="{diff_line_class(line)}">{_esc(line)}</span>' for line in lines)
                diffs.append(
                    f'<details id="d{i}" open><summary>{_esc(row["variant"])}: +{row["source_added"]} '
                    f"/ -{row['source_deleted']} lines of generated source</summary>"
                    f'<pre class="diff">{spans}</pre></details>'
                )
        runs = "" if is_baseline else f"{_num(row['skipped_runs'])}/{_num(row['baseline_runs'])}"
        gpu_cells = _gpu_cells(row) if on_gpu else ""
        gpu_error = f'<div class="yes">GPU: {_esc(row["gpu_error"])}</div>' if row.get("gpu_error") else ""
        switch = _switch_note(row)
        trs.append(
            f'<tr id="v{i}"><td title="{_esc(row.get("knocked_pass_id") or "")}">{_esc(row["variant"])}</td>'
            f'<td class="num">{_num(row["pipeline_step"])}</td>'
            f'<td class="num">{runs}</td>'
            f'<td class="{STATUS_CLASS.get(row["status"], "")}">{_esc(row["status"])}</td>'
            f'<td class="num">{_source_change(row)}</td>{diff_cell}'
            f'<td class="num">{_num(row["churn_total"])}</td>'
            f'{gpu_cells}<td class="wrap">{_esc(row["error"] or row["note"])}{gpu_error}{switch}</td></tr>'
        )
    figure = f' · <a href="{_esc(figure_href)}">figure</a>' if figure_href else ""
    lowered = baseline["status"] == statuses.STATUS_LOWERED
    if lowered:
        baseline_fact = (
            f"{_esc(baseline['status'])}, {_num(baseline['source_lines'])} source lines, IR churn "
            f"{_num(baseline['churn_total'])}, {_num(baseline['pass_runs'])} pass runs"
        )
        sources_part = f"""<h2>Generated source against the baseline's</h2>
{"".join(diffs) or '<p class="na">no variant generated other source</p>'}"""
    else:  # nothing was knocked out: no counts to show, no source to compare with
        baseline_fact = f'<span class="yes">{_esc(baseline["status"])}</span>: {_esc(baseline["error"] or "")}'
        sources_part = (
            f'<p class="na">The baseline lowering ended {_esc(baseline["status"])}, so no pass was knocked out: '
            "the knockout plans its variants from the passes the baseline ran.</p>"
        )
    body = f"""{EXTRA_CSS}<header><h1>{_esc(title)}: what each pass is worth</h1>
<ul class="facts"><li><b>variants</b> {summary["variants"]}</li>
{"".join(f"<li><b>{_esc(s)}</b> {n}</li>" for s, n in summary["counts"].items() if n)}
<li class="wrap"><b>baseline</b> {baseline_fact}</li></ul>
<div class="note">Each row but the baseline lowers the configuration with one pass knocked out (TVM skips it:
runs skipped / runs in the baseline). Source: lines of generated kernel source that differ from the
baseline's; IR churn: +added + -deleted over the lowering's IR passes (pass runs and seconds: knockout.csv).
Rows in pipeline order (the baseline's
step of the first skipped run). <a href="../{INDEX}">all configurations</a>{figure}</div></header>
<main><table id="variants"><thead><tr><th>variant</th><th>step</th><th>runs skipped</th><th>status</th>
<th>source ±</th><th>diff</th><th>IR churn</th>{GPU_HEADER if on_gpu else ""}
<th>error or note</th></tr>
</thead><tbody>
{"".join(trs)}
</tbody></table>
{sources_part}</main>"""
    return html_page(f"knockout: {title}", body)


INDEX_GPU_HEADER = "<th>slower without</th><th>faster without</th><th>not timed on the GPU</th>"
GPU_HEADER = "<th>on the GPU</th><th>latency ×</th><th>ms</th>"


def _gpu_cells(row: dict) -> str:
    """The GPU verdict of a row: status, latency over the baseline's with the repeats' range, latency, error."""
    status = row.get("gpu_status")
    if not status:
        return '<td class="na">—</td><td></td><td></td>'
    ratio = row.get("latency_ratio")
    ratio_text = ""
    if ratio is not None:
        ratio_text = f"{ratio:.3f} ({row['latency_ratio_low']:.3f}–{row['latency_ratio_high']:.3f})"
    latency = "" if row.get("latency_ms") is None else f"{row['latency_ms']:.4f}"
    css = "no" if status == statuses.STATUS_OK else "yes"
    return f'<td class="{css}">{_esc(status)}</td><td class="num">{ratio_text}</td><td class="num">{latency}</td>'


def _ratios(rows: list[dict]) -> str:
    if not rows:
        return '<span class="na">none</span>'
    return ", ".join(f"{_esc(row['variant'])} ×{row['latency_ratio']:.2f}" for row in rows)


def _switch_note(row: dict) -> str:
    """The knocked pass beside TileLang's own switch for it (knockout.csv's switch columns), '' without one."""
    if not row.get("switch"):
        return ""
    settings = ", ".join(f"{key}={json.dumps(value)}" for key, value in json.loads(row["switch"]).items())
    if not row.get("switch_pass_configs"):
        return f'<div class="na">switch {_esc(settings)}: not in the grid (add it to config pass_configs)</div>'
    same = row.get("switch_source_equal")
    verdict = "the same source as" if same else "other source than" if same is False else "compared with"
    latency = f", which runs in {row['switch_latency_ms']:.4g} ms" if row.get("switch_latency_ms") else ""
    return f'<div class="switch">switch {_esc(settings)}: {verdict} the baseline with it on{latency}</div>'


def _source_change(row: dict) -> str:
    if row["source_added"] is None:
        return ""
    return f'<span class="plus">+{row["source_added"]}</span>/<span class="minus">-{row["source_deleted"]}</span>'


def _not_timed(rows: list[dict]) -> str:
    """The variants not timed on the GPU: the wrong ones by name (a wrong result matters most), the rest counted."""
    if not rows:
        return '<span class="na">none</span>'
    wrong = [row for row in rows if row["gpu_status"] == statuses.STATUS_WRONG]
    others = [row["gpu_status"] for row in rows if row["gpu_status"] != statuses.STATUS_WRONG]
    said = [f'<span class="yes">wrong: {_esc(", ".join(row["variant"] for row in wrong))}</span>'] if wrong else []
    said += [f"{others.count(status)} {_esc(status)}" for status in dict.fromkeys(others)]
    return "; ".join(said)


def _counts(summary: dict) -> str:
    found = [f"{n} {status}" for status, n in summary["counts"].items() if n]
    return f"{summary['variants']}: " + ", ".join(found) if found else "0"


def index_page(entries: list[dict]) -> str:
    trs = []
    on_gpu = any(row.get("gpu_status") for entry in entries for row in entry["summary"]["rows"])
    for entry in entries:
        summary, baseline = entry["summary"], entry["summary"]["baseline"] or entry["summary"]["rows"][0]
        lowered_ok = baseline["status"] == statuses.STATUS_LOWERED
        gpu = (
            f'<td class="list">{_ratios(summary["slower_without"])}</td>'
            f'<td class="list">{_ratios(summary["faster_without"])}</td>'
            f'<td class="list">{_not_timed(summary["gpu_failed"])}</td>'
        )
        trs.append(
            f'<tr><td class="list"><a href="{_esc(entry["href"])}">{_esc(baseline["kernel_label"])}</a></td>'
            f"<td>{_esc(baseline['target_name'])}</td><td>{_esc(baseline['tilelang_version'])}</td>"
            f'<td class="{"no" if lowered_ok else "yes"}">{_esc(baseline["status"])}</td>'
            f'<td class="list">{_esc(_counts(summary))}</td>'
            + (gpu if on_gpu else "")
            + f'<td class="list">{_changes(summary["largest_change"])}</td>'
            f'<td class="list">{_names(summary["needed"], 3)}</td>'
            f'<td class="list">{_names(summary["no_effect"] + summary["same_source"], 3)}</td></tr>'
        )
    gpu_note = (
        " Slower without: the knockouts whose kernel is slower than the baseline beyond both timings' range (the "
        "passes that pay most); faster without: the passes that cost most (a variant compiled to the baseline's very "
        "source is left out of both: its ratio is the timing's noise); not timed: wrong (by name), compile_failed, "
        "launch_failed, timeout or crashed on the GPU."
        if on_gpu
        else ""
    )
    body = f"""{EXTRA_CSS}<header><h1>Pass knockout: what each pass is worth</h1>
<div class="note">One row per kernel configuration, target and release ({len(entries)}): its baseline lowering and
one lowering per knocked-out pass (TVM skips it).{gpu_note} Largest source change: the knockouts whose generated
source differs most from the baseline's. Lowering fails without: the passes whose knockout makes tilelang.lower
raise. No effect: no run skipped, or the same source byte for byte. The table: knockout.csv beside this page.
Changed source text is not changed speed or semantics.</div></header>
<main><input id="filter" type="search" placeholder="filter: e.g. cuda-sm90 gemm">
<table id="configurations"><thead><tr><th>configuration</th><th>target</th><th>release</th><th>baseline</th>
<th>variants</th>{INDEX_GPU_HEADER if on_gpu else ""}<th>largest source change</th>
<th>lowering fails without</th><th>no effect</th></tr></thead><tbody>
{"".join(trs)}
</tbody></table></main>"""
    return html_page("Pass knockout", body, INDEX_JS)


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
