"""The comparison of releases as HTML pages: ``index.html`` and one page per configuration and release pair.

Written by ``release_figures.write_all`` (the compare command) beside the tables::

    <out_dir>/index.html                 every configuration x pair of consecutive releases: first divergent
                                         pass, first divergent edit, edits that differ, whether the generated
                                         source differs, a link to its page
    <out_dir>/pages/<configuration>__<old>__<new>.html

A pair's page shows the two pass sequences aligned (``pass_alignment``: kept, added, removed; both sides' +/- and
seconds; nested runs indented, a row per phase), each row marked with what the pass does to the difference between
the releases' IR (``release_tables.ir_states``: I introduces, ≠ edits differently, A absorbs, · carries), with the
first divergent pass (the IR first differs after it) and the first divergent edit (the first kept pair whose edits
differ, ``pass_edits``) highlighted. Choosing a pass (a click, ↑/↓ or j/k, n/p for the next pass that edits
differently, or ``#pass=NAME[.N]`` / ``#pos=N`` in the address) shows below the table each release's before ->
after diff of that run and a third view, one release's edit against the other's; the page's script
(``compare_page.js``) computes that view, the word-level highlights and the whitespace-insensitive variants in the
browser (an LCS over lines, then over words), so the page carries each line once. Below: the IR handed to the first
pass (the frontend's output) of both releases in the same view, and the generated kernel source of both releases
with its diff. IR texts come from the jobs' ``ir.json.gz``; the diffs are over the normalised IR
(``normalize_ir``). Pass names link to their source (``release_figures.resolve_pass_links``).

Every page is one self-contained file: inline CSS and JS, the page's data as JSON inside it, no network
access, nothing but relative links and the links out to TileLang's source, so it opens from ``file://`` and
inside Snakemake's report. Output is deterministic (no dates). Text churn is a clue to locate, not proof of a
semantic or performance change.
"""

from __future__ import annotations

import difflib
import html
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from tilelang_churn.core import files, pass_names
from tilelang_churn.core.releases import release_sort_key, release_text
from tilelang_churn.core.statuses import STATUS_FAILED, STATUS_NOOP
from tilelang_churn.core.trace_modes import KEEPS_IR
from tilelang_churn.tables import pass_edits, release_tables
from tilelang_churn.tables.pass_edits import normalize_ir
from tilelang_churn.tables.release_tables import KEPT, Configuration, align_passes

INDEX = "index.html"
PAGES_DIR = "pages"
# a page's file name in bytes, ".html" included: under NAME_MAX (255) with room for atomic_file's temporary
# (".<name>.<pid>.tmp") and the "_" that tell equal names apart
MAX_PAGE_NAME = 180

CSS = """
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
header{padding:12px 20px;border-bottom:1px solid #d0d7de;background:#f6f8fa}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
main{padding:8px 20px 40px}
a{color:#0969da}
.facts{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 0;padding:0;list-style:none}
.facts li b{font-weight:600}
.note{color:#57606a;font-size:12px;margin-top:6px}
table{border-collapse:collapse}
th,td{padding:2px 6px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;z-index:1;font-weight:600}
#pairs th,#pairs td.wrap,#speed td.wrap{white-space:normal;overflow-wrap:anywhere}#pairs th{vertical-align:bottom}
#pairs th{overflow-wrap:normal}#pairs{width:100%}#pairs td{white-space:normal;overflow-wrap:anywhere}
#pairs td.num{white-space:nowrap}
#speed{width:100%}#speed th,#speed td{white-space:normal;overflow-wrap:break-word}#speed td.wrap{min-width:7em}
#speed td.num{white-space:nowrap}#pairs td:nth-child(4){min-width:12em}#pairs td:nth-child(7){min-width:9em}
.matrix{overflow-x:auto}#matrix td{text-align:center;min-width:1.6em}
#matrix tbody th{text-align:left;white-space:nowrap}#pairs td:nth-child(2){min-width:10em;max-width:30em}
h1{overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.yes{color:#cf222e;font-weight:600}.no{color:#1a7f37}.na{color:#8c959f}
#filter{margin:8px 0;padding:4px 8px;width:28em;font:inherit}
.seq{max-height:40vh;overflow:auto;border:1px solid #d0d7de;border-radius:6px}
.seq table{font-size:12.5px;width:100%}.seq td,.seq th{padding:1px 5px}
.seq tr[data-k]{cursor:pointer}.seq tr[data-k]:hover td{background:#f3f4f6}
.seq tr.sel td{background:#ddf4ff!important;outline:none}
.seq tr.phase td{background:#f6f8fa;color:#57606a;font-size:11.5px;font-weight:600;cursor:default}
.seq tr.added td.new,.seq tr.added td.newc{background:#e6ffec}
.seq tr.removed td.old,.seq tr.removed td.oldc{background:#ffebe9}
.seq tr.added td.old,.seq tr.added td.oldc,.seq tr.removed td.new,.seq tr.removed td.newc{color:#8c959f}
.seq tr.noop td{color:#6e7781}
.seq tr.firstpass td.mark{box-shadow:inset 4px 0 #bf8700}
.seq tr.firstedit td.mark{box-shadow:inset 4px 0 #cf222e}
.seq tr.firstpass.firstedit td.mark{box-shadow:inset 4px 0 #cf222e,inset 8px 0 #bf8700}
.nest{color:#8c959f}
.renamed{color:#8c959f;font-size:90%}
.tools{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:center;margin:8px 0;font-size:13px}
.tools .keys{color:#57606a;font-size:12px}
#finding{width:100%;height:12em;font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
td.mark{width:22px;text-align:center;font-weight:700}
td.mark.diff{color:#cf222e}td.mark.unknown{color:#8c959f}td.mark.absorbed{color:#1a7f37}
.plus{color:#1a7f37}.minus{color:#cf222e}
.legend{font-size:12px;color:#57606a;margin:4px 0}
.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:10px;height:10px;vertical-align:middle;margin-right:3px}
.panes{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,600px),1fr));gap:10px;margin-bottom:10px}
.pane{border:1px solid #d0d7de;border-radius:6px;min-width:0}
.pane h3{margin:0;padding:4px 8px;font-size:13px;background:#f6f8fa;border-bottom:1px solid #d0d7de}
pre.diff{margin:0;padding:4px 0;max-height:70vh;overflow:auto;
 font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.diff span{display:block;padding:0 8px 0 2em;text-indent:-1.2em;white-space:pre-wrap;overflow-wrap:anywhere}
body.nowrap pre.diff span{white-space:pre;overflow-wrap:normal}
pre.diff .a{background:#e6ffec}pre.diff .d{background:#ffebe9}pre.diff .h{background:#ddf4ff;color:#57606a}
pre.diff .a em{background:#abf2bc}pre.diff .d em{background:#ffc1c0}pre.diff em{font-style:normal;border-radius:2px}
pre.diff .o{background:#fff1e5}pre.diff .o em{background:#ffd8b5}pre.diff .n{background:#ddf4ff}
pre.diff .n em{background:#b6e3ff}pre.diff .w{color:#8c959f}
pre.diff b.g{display:inline-block;min-width:5.5em;font-weight:600;color:#57606a;text-indent:0}
pre.diff .m{color:#57606a;font-style:italic;white-space:pre-wrap}
.failure{margin:6px 0 0}.failure pre{margin:2px 0 0;padding:4px 8px;background:#ffebe9;border-radius:6px;
 white-space:pre-wrap;font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.full{display:grid;grid-template-columns:1fr 1fr;gap:10px}
"""

INDEX_JS = """
const f=document.getElementById('filter');
f.addEventListener('input',()=>{const q=f.value.toLowerCase().split(/\\s+/).filter(Boolean);
for(const tr of document.querySelectorAll('#pairs tbody tr')){
const t=(tr.textContent+' '+(tr.dataset.search||'')).toLowerCase();
tr.hidden=!q.every(w=>t.includes(w));}});
"""

# the pair page's script: diffs computed in the browser (whitespace and word level), keys, toggles, permalinks
PAGE_JS = (Path(__file__).parent / "compare_page.js").read_text(encoding="utf-8")


def slug(text: str) -> str:
    """A file-name-safe form of a label: letters, digits, ``. _ -``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "configuration"


def page_name(text: str) -> str:
    """A page's file stem: ``slug(text)``, cut with a stable hash of the whole text where it is too long for a
    file name (a kernel parameter of 300 characters), so that two long labels still get two pages."""
    return files.short_name(slug(text), MAX_PAGE_NAME - len(".html"), text)  # slug is ASCII: characters are bytes


# characters that JSON may hold as they are but HTML's script parser (or old JavaScript) reads: as \uXXXX
# escapes any text survives inside <script> and JSON.parse gives it back unchanged
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _json_script(data) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)


def html_page(title: str, body: str, script: str = "", data=None) -> str:
    parts = [
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>",
        '<meta name=viewport content="width=device-width,initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        body,
    ]
    if data is not None:
        parts.append(f'<script type="application/json" id="data">{_json_script(data)}</script>')
    if script:
        parts.append(f"<script>{script}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _bool_cell(value, yes="yes", no="no") -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return '<td class="na">—</td>'
    return f'<td class="yes">{yes}</td>' if bool(value) else f'<td class="no">{no}</td>'


def _na(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value))


def _num(value) -> str:
    return "" if _na(value) else str(int(value))


def _edit_size(row: dict, side: str) -> str:
    added, deleted = row.get(f"edit_added_{side}"), row.get(f"edit_deleted_{side}")
    return "?" if _na(added) or _na(deleted) else f"+{int(added)}/-{int(deleted)}"


def _first_edit_text(row: dict) -> str:
    name = row.get("first_divergent_edit") or ""
    if not name:
        return ""
    step = _num(row["first_divergent_edit_step_old"])
    return f"{name} (step {step}: {_edit_size(row, 'old')} vs {_edit_size(row, 'new')})"


def _first_edit_cell(row: dict, tag: str = "td") -> str:
    """The first divergent edit, or what its absence means: every kept pass made the same edit, or some edits are
    unknown (no IR to compare them from)."""
    text = _first_edit_text(row)
    if text:
        return f'<{tag} class="wrap">{html.escape(text)}</{tag}>'
    unknown = row.get("edit_unknown_runs")
    if _na(row.get("edit_differs_runs")) or _na(unknown):
        return f'<{tag} class="na">—</{tag}>'
    if int(unknown):
        return f'<{tag} class="na wrap">none found ({int(unknown)} kept runs unknown)</{tag}>'
    return f'<{tag} class="no wrap">none: every kept pass edits alike</{tag}>'


def display_label(row: dict) -> str:
    """A configuration's label as the pages show it: the ``configuration`` column's, with the kernel's name after
    the target where the label lacks it (the GEMM's label names its shape, not its kernel)."""
    label = str(row["configuration"])
    kernel = str(row.get("kernel") or "")
    words = label.split(" ")
    if not kernel or any(word == kernel or word.startswith(f"{kernel}(") for word in words):
        return label
    return " ".join([words[0], kernel, *words[1:]])


def _first_pass_cell(row: dict) -> str:
    """The first divergent pass, or the frontend where the IR differs before any pass (the first pass then only
    carries that difference: its name says nothing)."""
    name = row.get("first_divergent_pass") or ""
    differs = row.get("initial_ir_differs")
    if name and not _na(differs) and bool(differs):
        return f'<td class="wrap" title="first divergent pass: {html.escape(name)}">the frontend</td>'
    return f"<td>{html.escape(name)}</td>"


def text_diff(old: str | None, new: str | None, old_name: str, new_name: str, normalize) -> list[str] | None:
    if old is None or new is None:
        return None
    a, b = normalize(old).splitlines(), normalize(new).splitlines()
    return list(difflib.unified_diff(a, b, old_name, new_name, n=3, lineterm=""))


def diff_line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return ""
    return {"+": "a", "-": "d", "@": "h"}.get(line[:1], "")


def _source_norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


class LineTable:
    """The distinct lines of a page's diffs, each stored once: a diff line is ``index * 4 + kind`` (kind 0
    context, 1 added, 2 removed, 3 hunk header), so the many context and re-indented lines that passes share
    cost a number each (the largest FlashAttention page: 2.8 MB of diff text, 0.26 MB of distinct lines)."""

    KINDS = {" ": 0, "+": 1, "-": 2}

    def __init__(self):
        self.lines: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, line: str) -> int:
        kind = self.KINDS.get(line[:1], 3)
        text = line if kind == 3 else line[1:]
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.lines)
            self.lines.append(text)
        return index * 4 + kind


def _link_names(job) -> dict[str, str]:
    """{the label a run is shown by: the name its pass link is kept under (its short name: an anonymous pass's
    factory)}."""
    return {job.label(run): pass_names.short_name(pass_names.identity_of(run)) for run in job.run_list()}


def _side(run, edit: pass_edits.RunEdit | None, table: LineTable, job) -> dict | None:
    if run is None:
        return None
    out = {
        "step": int(run["step"]),
        "pass": job.label(run),
        "status": str(run["status"]),
        "added": None if _na(run["added"]) else int(run["added"]),
        "deleted": None if _na(run["deleted"]) else int(run["deleted"]),
        "depth": 0 if _na(run.get("depth")) else int(run["depth"]),
        "seconds": None if _na(run.get("seconds")) else float(run["seconds"]),
    }
    if run["status"] == STATUS_FAILED and str(run.get("error") or ""):
        out["error"] = str(run["error"])
    if edit is None:
        out["why"] = "no IR archive"
    elif edit.reason and edit.edit is None:
        out["why"] = edit.reason
    if edit is not None and edit.edit is not None and not edit.edit.empty:
        out["diff"] = [table.code(line) for line in pass_edits.diff_lines(edit)]
    return out


def _failure(job) -> dict | None:
    """The job's first failed row (step, pass, error), or None."""
    if not job.failed:
        return None
    rows = job.rows  # its columns one by one: a selection of the frame copies all 50 of them, per page
    first = int((rows["status"] == STATUS_FAILED).to_numpy().argmax())
    error = rows["error"].iloc[first]
    return {"step": int(rows["step"].iloc[first]), "pass": str(rows["pass_id"].iloc[first]), "error": str(error or "")}


def _no_ir_reason(job, archive, failure: dict | None) -> str | None:
    """Why a job has no IR to diff, in the terms of its own rows: the lowering failed, the release lacks the
    mode, or the mode keeps no IR; else what the archive lookup said (a missing or unreadable file)."""
    if not isinstance(archive, str):
        return None
    release = release_text(job.release)
    mode = str(job.rows["mode"].iloc[0]) if "mode" in job.rows and len(job.rows) else ""
    if failure is not None:
        return f"the lowering failed on {release} at step {failure['step']} {failure['pass']} (error below)"
    if job.unsupported:
        return f"mode {mode} is unsupported in {release}"
    if mode and mode not in KEEPS_IR:
        return f"{archive} (only {', '.join(KEEPS_IR)} jobs keep it, when releases are compared)"
    return archive


def _failure_block(release: str, failure: dict) -> str:
    where = f"step {failure['step']} {failure['pass']}"
    error = failure["error"] or "(no error text recorded)"
    return (
        f'<div class="failure"><b class="yes">{html.escape(release)}: the lowering failed</b> at '
        f"{html.escape(where)}:<pre>{html.escape(error)}</pre></div>"
    )


def _mark(state: str | None, same, op: str) -> tuple[str, str]:
    """A sequence row's mark and its CSS class: the IR difference's mark (MARKS), else ≠ where the edits differ,
    ? where a kept pass's edit is unknown; class ``diff`` whenever the two runs' edits differ."""
    text = MARKS.get(state) or ("≠" if same is False else "?" if (op == KEPT and same is None) else "")
    css = "diff" if same is False else "unknown" if text == "?" else ""
    return text, f"{css} absorbed" if state == release_tables.ABSORBED else css


def _run_cells(side: str, run, job, renamed: str = "") -> str:
    """One release's cells of a sequence row: step and pass (indented by its nesting; RENAMED: how its identity
    differs from the other release's, "named tl.X in 0.1.15"), +/-, seconds."""
    if run is None:
        return f'<td class="{side}"></td><td class="{side}c"></td><td class="{side}c"></td>'
    counts = ""
    if not _na(run["added"]):
        counts = f'<span class="plus">+{int(run["added"])}</span> <span class="minus">-{int(run["deleted"])}</span>'
    elif run["status"] == STATUS_FAILED:
        counts = '<span class="yes">failed</span>'
    depth = 0 if _na(run.get("depth")) else int(run["depth"])
    nest = f'<span class="nest">{"&nbsp;&nbsp;" * depth}↳ </span>' if depth else ""
    name = f"{nest}{int(run['step'])} {html.escape(job.label(run))}"
    if renamed:
        name += f' <span class="renamed">({html.escape(renamed)})</span>'
    ms = "" if _na(run.get("seconds")) else f"{float(run['seconds']) * 1000:.2f}"
    return f'<td class="{side}">{name}</td><td class="{side}c num">{counts}</td><td class="{side}c num">{ms}</td>'


def pair_page(
    config: Configuration, old, new, row: dict, edits: pass_edits.EditCache, links: Mapping | None = None
) -> str:
    """The HTML of one configuration's release pair (``old``/``new`` ReleaseJobs, ``row`` its divergence row;
    ``links``: {release: {pass: (url, kind)}}, each pass's source, None for no links)."""
    o, n = release_text(old.release), release_text(new.release)
    edits_old, edits_new = edits.of(old), edits.of(new)
    ops = align_passes(old.alignment_keys(), new.alignment_keys())
    states = release_tables.ir_states(old, new, ops, edits)
    first_pass = (row.get("first_divergent_step_old"), row.get("first_divergent_step_new"))
    first_edit = (row.get("first_divergent_edit_step_old"), row.get("first_divergent_edit_step_new"))
    data_rows, trs = [], []
    table = LineTable()
    start = None
    phase = None
    for position, ((op, i, j), state) in enumerate(zip(ops, states)):
        run_old = old.run_list()[i] if i is not None else None
        run_new = new.run_list()[j] if j is not None else None
        edit_old = edits_old.get(int(run_old["step"])) if run_old is not None else None
        edit_new = edits_new.get(int(run_new["step"])) if run_new is not None else None
        same = pass_edits.same_edit(edit_old, edit_new) if op == KEPT else None
        sides = {"old": _side(run_old, edit_old, table, old), "new": _side(run_new, edit_new, table, new)}
        renamed = release_tables.renamed_note(run_old, run_new, new) if op == KEPT else ""
        data_rows.append({"op": op, **sides, "same": same, "state": state["difference"]})
        run_phase = str((run_new if run_new is not None else run_old).get("phase") or "")
        if run_phase and run_phase != phase:
            phase = run_phase
            trs.append(f'<tr class="phase"><td colspan="9">phase {html.escape(phase)}</td></tr>')
        steps = (
            int(run_old["step"]) if run_old is not None else None,
            int(run_new["step"]) if run_new is not None else None,
        )
        classes = [op]
        if all(run is None or run["status"] == STATUS_NOOP for run in (run_old, run_new)):
            classes.append("noop")
        if op == KEPT and not _na(first_pass[0]) and steps == (int(first_pass[0]), int(first_pass[1])):
            classes.append("firstpass")
        if op == KEPT and not _na(first_edit[0]) and steps == (int(first_edit[0]), int(first_edit[1])):
            classes.append("firstedit")
            start = position
        mark, mark_class = _mark(state["difference"], same, op)
        why = state["difference"] or ("edits differ" if same is False else "")
        cells = [f'<td class="mark {mark_class}" title="{html.escape(why)}">{mark}</td>']
        cells.append(f'<td class="num">{position}</td><td>{op}</td>')
        cells.append(_run_cells("old", run_old, old) + _run_cells("new", run_new, new, renamed))
        trs.append(f'<tr data-k="{position}" class="{" ".join(classes)}">{"".join(cells)}</tr>')

    # the pass shown first: the first divergent edit, else the first edit that differs, else the first pass one
    # release alone runs that changes the IR (when every kept pass edits alike, what differs is there), else any
    def changes_ir(r):
        return bool((r["old"] or {}).get("diff") or (r["new"] or {}).get("diff"))

    if start is None:
        start = next((k for k, r in enumerate(data_rows) if r["same"] is False), None)
    if start is None:
        start = next((k for k, r in enumerate(data_rows) if r["op"] != KEPT and changes_ir(r)), None)
    if start is None:
        start = next((k for k, r in enumerate(data_rows) if changes_ir(r)), 0)

    archive_old, archive_new = edits.archive(old), edits.archive(new)
    loaded = isinstance(archive_old, dict) and isinstance(archive_new, dict)
    source_old = archive_old.get("kernel_source") if isinstance(archive_old, dict) else None
    source_new = archive_new.get("kernel_source") if isinstance(archive_new, dict) else None

    def initial_lines(archive) -> list[int] | None:
        """The frontend's IR as indices into the page's line table (normalised as every diff here)."""
        if not loaded or archive.get("initial") is None:
            return None
        return [table.code(" " + line) >> 2 for line in normalize_ir(archive["texts"][archive["initial"]]).splitlines()]

    def pre(lines, empty, ident=""):
        inner = (
            "".join(f'<span class="{diff_line_class(ln)}">{html.escape(ln)}</span>' for ln in lines)
            if lines
            else f'<span class="m">{html.escape(empty)}</span>'
        )
        return f'<pre class="diff"{f" id={ident!r}" if ident else ""}>{inner}</pre>'

    source_diff = text_diff(source_old, source_new, f"{o} kernel source", f"{n} kernel source", _source_norm)
    failures = [_failure(job) for job in (old, new)]
    reasons = [
        _no_ir_reason(job, archive, failure)
        for job, archive, failure in zip((old, new), (archive_old, archive_new), failures)
    ]
    no_ir = "; ".join(reason for reason in reasons if reason)
    no_ir_note = f'<p class="note">No IR to diff: {html.escape(no_ir)}.</p>' if no_ir else ""
    failure_blocks = "".join(
        _failure_block(release, failure) for release, failure in zip((o, n), failures) if failure is not None
    )
    source_empty = (
        "identical (trailing whitespace ignored)" if source_diff == [] else "no generated source on one side or both"
    )

    def fact(name, value):
        return f"<li><b>{html.escape(name)}:</b> {value}</li>"

    def yes_no(value):
        return (
            '<span class="na">unknown</span>'
            if _na(value)
            else ('<span class="yes">yes</span>' if value else '<span class="no">no</span>')
        )

    facts = [
        fact("difference", html.escape(row.get("difference_summary") or "unknown")),
        fact("first divergent edit", _first_edit_cell(row, tag="span")),
        fact("kept runs whose edit differs", _num(row.get("edit_differs_runs")) or "—"),
        fact("generated source differs", yes_no(row.get("source_differs"))),
        fact("kept / removed / added runs", f"{row['kept_runs']} / {row['removed_runs']} / {row['added_runs']}"),
    ]
    label = display_label(row)
    body = f"""<header><div><a href="../{INDEX}">← all configurations</a></div>
<h1>{html.escape(label)}: {html.escape(o)} → {html.escape(n)}</h1>
<ul class="facts">{"".join(facts)}</ul>
<div class="note">{html.escape(row.get("note") or "")}</div>{failure_blocks}</header>
<main>
<div class="legend"><span><i class="sw" style="background:#e6ffec"></i>added in {html.escape(n)}</span>
<span><i class="sw" style="background:#ffebe9"></i>removed in {html.escape(n)}</span>
<span><i class="sw" style="background:#bf8700"></i>first divergent pass (IR differs after it)</span>
<span><i class="sw" style="background:#cf222e"></i>first divergent edit</span>
<span><b class="yes">I</b> introduces a difference (equal before, not after)</span>
<span><b class="yes">≠</b> edits differently</span><span><b class="no">A</b> absorbs one (equal after)</span>
<span>· carries it forward</span><span><b class="na">?</b> edit unknown</span>
<span>↳ a pass run inside the pass above; ms: its seconds × 1000</span></div>
{no_ir_note}
<div class="seq"><table id="seq"><thead><tr><th></th><th>#</th><th>op</th>
<th>{html.escape(o)}: step pass</th><th>+/-</th><th>ms</th>
<th>{html.escape(n)}: step pass</th><th>+/-</th><th>ms</th></tr></thead><tbody>
{"".join(trs)}
</tbody></table></div>
<div class="tools"><label><input type="checkbox" id="opt-hide"> hide passes that edit alike</label>
<label><input type="checkbox" id="opt-wrap" checked> wrap lines</label>
<label><input type="checkbox" id="opt-ws"> ignore whitespace</label>
<button type="button" id="copy">copy finding</button>
<span class="keys">keys: ↑/↓ or j/k the next pass, n/p the next/previous pass that edits differently</span></div>
<div id="verdict" class="legend"></div>
<div class="panes">
<div class="pane"><h3><span id="old-title">{html.escape(o)}</span> <a id="old-src" hidden></a></h3>
<pre class="diff" id="old-diff"></pre></div>
<div class="pane"><h3><span id="new-title">{html.escape(n)}</span> <a id="new-src" hidden></a></h3>
<pre class="diff" id="new-diff"></pre></div>
</div>
<div class="pane"><h3 id="edit-title">the two edits</h3><pre class="diff" id="edit-diff"></pre></div>
<textarea id="finding" readonly hidden></textarea>
<h2>IR before the first pass (the frontend's output)</h2>
<div class="pane"><pre class="diff" id="initial-diff"></pre></div>
<h2>Generated kernel source</h2>
{pre(source_diff, source_empty, "source-diff")}
<details><summary>both releases' generated source</summary><div class="full">
<div class="pane"><h3>{html.escape(o)}</h3>{pre([" " + ln for ln in (source_old or "").splitlines()], "none")}</div>
<div class="pane"><h3>{html.escape(n)}</h3>{pre([" " + ln for ln in (source_new or "").splitlines()], "none")}</div>
</div></details>
</main>"""
    data = {
        "old": o,
        "new": n,
        "label": label,
        "start": start,
        "rows": data_rows,
        "init": {"old": initial_lines(archive_old), "new": initial_lines(archive_new)},
        "src": {
            side: {
                label: list(release_links[name])
                for label, name in _link_names(job).items()
                if name in (release_links := (links or {}).get(job.release) or {})
            }
            for side, job in (("old", old), ("new", new))
        },
        "lines": table.lines,
    }
    return html_page(f"{label}: {o} → {n}", body, PAGE_JS, data)


def _passes_moved(row: dict, side: str) -> str:
    """A speed_attribution row's passes of one side (new, old), their shares of the way, the knockout's state."""
    names, shares = row[f"passes_back_{side}"], row[f"back_{side}"]
    if names:
        pairs = zip(names.split(";"), (shares or "").split(";"))
        listed = ", ".join(f"{html.escape(name)} ({float(share):.0%})" for name, share in pairs)
    else:
        listed = "—" if row.get("note") else '<span class="na">none</span>'
    return f'{listed}<div class="na">knockout {html.escape(row[f"knockout_{side}"])}</div>'


def _links(names: Sequence[str]) -> str:
    return ", ".join(f'<a href="{html.escape(name)}">{html.escape(name)}</a>' for name in names) or "none"


SHOWN_PASSES = 6  # of a difference cell's list of passes; the cell's tooltip names them all


def _difference_cell(row: dict) -> str:
    """Where the pair's IR starts to differ and where it reconverges, and which passes introduce a difference or
    edit differently on IR that already differs (divergence.csv's difference columns)."""
    summary = row.get("difference_summary") or ""
    if not summary:
        return '<td class="na">—</td>'
    parts = [f"<b>{html.escape(summary)}</b>"]
    for key, words in (("introduced_by", "introduced by"), ("edits_differ_at", "edits differ at")):
        if row.get(key):
            names = row[key].split(";")
            shown = ", ".join(names[:SHOWN_PASSES])
            more = f" and {len(names) - SHOWN_PASSES} more" if len(names) > SHOWN_PASSES else ""
            parts.append(f'<span title="{html.escape(", ".join(names))}">{words} {html.escape(shown)}{more}</span>')
    css = "no wrap" if summary.startswith("the IR is equal") else "wrap"
    return f'<td class="{css}">{"<br>".join(parts)}</td>'


def attribution_section(rows: Sequence[dict] | None) -> str:
    """The index's section of speed_attribution.csv (None: no GPU timings, no section)."""
    if rows is None:
        return ""
    if not rows:
        return (
            '<h2>Speed between releases</h2><p class="na">No configuration\'s GPU latency moved between consecutive '
            "releases by more than the two timings' spread (speed_attribution.csv has no rows).</p>"
        )
    trs = []
    for row in rows:
        edit = row.get("first_divergent_edit") or row.get("first_divergent_pass") or "—"
        trs.append(
            f'<tr><td class="wrap">{html.escape(str(row["target_name"]))} {html.escape(str(row["kernel_label"]))}</td>'
            f"<td>{html.escape(release_text(row['release_old']))} → "
            f"{html.escape(release_text(row['release_new']))}</td>"
            f'<td class="num">{row["latency_old_ms"]:.4g} → {row["latency_new_ms"]:.4g} ms '
            f"(×{row['latency_change']:.3f})</td><td>{html.escape(str(edit))}</td>"
            f'<td class="wrap">{_passes_moved(row, "new")}</td><td class="wrap">{_passes_moved(row, "old")}</td>'
            f'<td class="wrap">{html.escape(row.get("note") or "")}</td></tr>'
        )
    return f"""<h2>Speed between releases</h2>
<div class="note">Configurations whose GPU latency moved between consecutive releases by more than the two timings'
spread (speed_attribution.csv). Newer's passes back: the passes whose knockout in the newer release moves its latency
back to the older release's, between half and one and a half times the way (the share in brackets); older's passes:
those whose knockout in the older release moves it so towards the newer's.</div>
<div class="matrix"><table id="speed"><thead><tr><th>configuration</th><th>releases</th><th>latency</th>
<th>first divergent edit</th>
<th>newer's passes back</th><th>older's passes towards</th><th>note</th></tr></thead>
<tbody>{"".join(trs)}</tbody></table></div>"""


FIGURES = ("release_heatmap.png", "release_heatmap.svg", "release_trend.png", "release_trend.svg")


def index_page(
    entries: Sequence[dict],
    attribution: Sequence[dict] | None = None,
    tables: Sequence[str] = (),
    links: Mapping | None = None,
) -> str:
    """The index: one row per configuration x release pair (``entries``: divergence rows plus ``href`` and their
    ``marks``), after the configurations whose speed moved (``attribution``: speed_attribution.csv's rows; None:
    no GPU stage) and the pass x pair matrix of marks (its pass names linked to the newest release's source,
    ``links``); ``tables``: the CSV files beside it, linked."""
    trs = []
    for number, row in enumerate(entries, 1):
        # what the filter finds beyond the cells' text: the kernel's name and settings, every pass a cell shortens
        keys = ("kernel", "params", "pass_configs", "introduced_by", "edits_differ_at")
        search = " ".join(str(row.get(key) or "").replace(";", " ") for key in keys)
        trs.append(
            f'<tr data-search="{html.escape(search)}"><td class="num">{number}</td>'
            + (
                f'<td class="wrap"><a href="{html.escape(row["href"])}">{html.escape(display_label(row))}</a></td>'
                if row.get("href")
                else f'<td class="wrap">{html.escape(display_label(row))}<div class="yes">'
                f"page not written: {html.escape(row.get('page_error') or '')}</div></td>"
            )
            + f"<td>{html.escape(release_text(row['release_old']))} → "
            f"{html.escape(release_text(row['release_new']))}</td>"
            + _difference_cell(row)
            + _bool_cell(row.get("initial_ir_differs"))
            + _first_pass_cell(row)
            + _first_edit_cell(row)
            + f'<td class="num">{_num(row.get("edit_differs_runs"))}</td>'
            + _bool_cell(row.get("source_differs"))
            + f'<td class="num">{row["kept_runs"]}/{row["removed_runs"]}/{row["added_runs"]}</td>'
            "</tr>"
        )
    body = f"""<header><h1>TileLang releases compared, pass by pass</h1>
<div class="note">One row per configuration and pair of consecutive releases ({len(entries)}). Difference: where the
IR after each pass starts to differ between the releases (the frontend: before the first pass) and the pass after
which it is equal again to the end; introduced by: passes after which it differs where it was equal before; edits
differ at: passes that edit differently on IR that already differs (the others carry the difference forward).
First divergent pass: the first aligned pass after which the printed IR differs. First divergent edit: the first
aligned pass whose edit (lines removed and added) differs, with both edits' sizes. Lines of IR text are compared
after normalisation (trailing blanks, TVMScript's import comments); +/-: lines added/removed; step: a pass run's
row in the job's passes.csv. Text churn is a clue to locate, not proof of a semantic or performance change.</div>
<div class="note">Tables: {_links(tables)}. Figures: {_links(FIGURES)}.</div></header>
<main>{attribution_section(attribution)}{difference_matrix(entries, links)}<h2>Pass by pass</h2>
<input id="filter" type="search" placeholder="filter: e.g. cuda-sm90 instrument 0.1.15">
<table id="pairs"><thead><tr><th>#</th><th>configuration</th><th>releases</th><th>difference</th>
<th title="the IR differs before the first pass">frontend differs</th>
<th>first divergent pass</th><th>first divergent edit</th><th>edits differ</th><th>source differs</th>
<th>kept / removed / added</th></tr></thead><tbody>
{"".join(trs)}
</tbody></table></main>"""
    return html_page("TileLang releases compared", body, INDEX_JS)


def write_pages(
    configs: Sequence[Configuration],
    diverging: pd.DataFrame,
    edits: pass_edits.EditCache,
    out_dir,
    attribution: Sequence[dict] | None = None,
    tables: Sequence[str] = (),
    links: Mapping | None = None,
) -> list[Path]:
    """Write ``index.html`` (with ``attribution``'s section, links to ``tables``: the CSV files written beside it)
    and every pair's page under ``out_dir``; returns the paths (index first). ``links``: {release: {pass: (url,
    kind)}}, where each pass name links to (release_figures.resolve_pass_links); None: no links out."""
    out_dir = Path(out_dir)
    by_pair = {
        (r["configuration"], r["release_old"], r["release_new"]): r
        for r in diverging.astype(object).where(diverging.notna(), None).to_dict("records")
    }
    entries, written, used = [], [], set()
    for config in configs:
        for old, new in config.pairs():
            row = by_pair[(config.label, old.release, new.release)]
            name = page_name(f"{config.label}__{old.release}__{new.release}")
            while name in used:
                name += "_"
            used.add(name)
            path = out_dir / PAGES_DIR / f"{name}.html"
            try:
                with files.atomic_file(path) as handle:
                    handle.write(pair_page(config, old, new, row, edits, links))
            except OSError as exc:  # one page lost, not the comparison: the index and stderr say which and why
                what = f"{config.label}: {release_text(old.release)} → {release_text(new.release)}"
                print(f"compare_pages: the page of {what} was not written: {exc}", file=sys.stderr)
                entries.append({**row, "href": None, "page_error": str(exc)})
                continue
            written.append(path)
            entries.append({**row, "href": f"{PAGES_DIR}/{name}.html", "marks": pair_marks(old, new, edits)})
    index = out_dir / INDEX
    with files.atomic_file(index) as handle:
        handle.write(index_page(entries, attribution, tables, links))
    return [index, *written]


# the index's pass x pair matrix: one mark per pass name and pair, the strongest of its runs' (release_tables)
MARKS = {
    release_tables.INTRODUCED: "I",
    release_tables.ABSORBED: "A",
    release_tables.EDITS_DIFFER: "≠",
    release_tables.CARRIED: "·",
}
MARK_ORDER = list(MARKS)  # the strongest first


def pair_marks(old, new, edits: pass_edits.EditCache) -> dict[str, str]:
    """{pass name: its strongest difference in the pair (MARK_ORDER)}, for the passes that are not equal."""
    ops = align_passes(old.alignment_keys(), new.alignment_keys())
    marks: dict[str, str] = {}
    for (_, i, j), state in zip(ops, release_tables.ir_states(old, new, ops, edits)):
        difference = state["difference"]
        if difference not in MARKS:
            continue
        name = new.label(new.run_list()[j]) if j is not None else old.label(old.run_list()[i])
        if name not in marks or MARK_ORDER.index(difference) < MARK_ORDER.index(marks[name]):
            marks[name] = difference
    return marks


def _newest_link(name: str, links: Mapping | None) -> tuple[str, str] | None:
    """The pass's link in the newest release that has one."""
    for release in sorted(links or {}, key=release_sort_key, reverse=True):
        if name in links[release]:
            return links[release][name]
    return None


def difference_matrix(entries: Sequence[dict], links: Mapping | None = None) -> str:
    """The passes that introduce, absorb or edit a difference somewhere (rows, in order of first appearance) x
    the pairs (columns, as the table below): which pass does what where; a pass's name links to its source in
    the newest release (``links``)."""
    rows = list(
        dict.fromkeys(n for e in entries for n, d in (e.get("marks") or {}).items() if d != release_tables.CARRIED)
    )
    if not rows:
        return ""
    head = "".join(
        f'<th title="{html.escape(display_label(e))}: {html.escape(release_text(e["release_old"]))} → '
        f'{html.escape(release_text(e["release_new"]))}">{k + 1}</th>'
        for k, e in enumerate(entries)
    )
    body = []
    for name in rows:
        cells = []
        for entry in entries:
            difference = (entry.get("marks") or {}).get(name)
            mark = MARKS.get(difference, "")
            css = {"I": "yes", "A": "no", "≠": "yes"}.get(mark, "na")
            cells.append(f'<td class="{css}" title="{html.escape(difference or "equal")}">{mark}</td>')
        link = _newest_link(pass_names.short_name(name), links)  # links are kept by short name (tl.Simplify's too)
        title = html.escape(name)
        if link is not None:
            url, kind = link
            what = "its definition" if kind == "definition" else "a search for it"
            title = f'<a href="{html.escape(url)}" title="{what} in TileLang\'s source">{title}</a>'
        body.append(f"<tr><th>{title}</th>{''.join(cells)}</tr>")
    return f"""<h2>Which pass does what to the difference</h2>
<div class="note">One row per pass that introduces (I), absorbs (A) or edits differently (≠) a difference between two
releases somewhere; one column per pair, numbered as the rows of the table below (its tooltip names it). · : it
carries the difference forward with the same edit; empty: the IR is equal before and after it (or unknown).</div>
<div class="matrix"><table id="matrix"><thead><tr><th>pass</th>{head}</tr></thead><tbody>{"".join(body)}</tbody>
</table></div>"""
