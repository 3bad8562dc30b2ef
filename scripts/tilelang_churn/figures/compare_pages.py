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
differently, or ``#pass=NAME[.N]`` / ``#pos=N`` in the address) shows below the table each release's before -> after
diff of that run and a third view, one release's edit against the other's; the page's script
(``templates/compare_page.js``) computes that view, the word-level highlights and the whitespace-insensitive
variants in the browser (an LCS over lines, then over words), so the page carries each line once. Below: the IR
handed to the first pass (the frontend's output) of both releases in the same view, and the generated kernel source
of both releases with its diff. IR texts come from the jobs' ``ir.json.gz``; the diffs are over the normalised IR
(``normalize_ir``). Pass names link to their source (``release_figures.resolve_pass_links``).

Every page is one self-contained file: inline CSS and JS, the page's data as JSON inside it, no network
access, nothing but relative links and the links out to TileLang's source, so it opens from ``file://`` and
inside Snakemake's report. Output is deterministic (no dates). Text churn is a clue to locate, not proof of a
semantic or performance change.

The markup, the style and the scripts are Jinja2 templates (``templates/``: the pair page, the index, their
macros), autoescaped; this module computes what they show, row by row and note by note.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from tilelang_churn.core import files, pass_names
from tilelang_churn.core.releases import release_text
from tilelang_churn.core.statuses import STATUS_CHANGED, STATUS_FAILED, STATUS_NOOP
from tilelang_churn.core.trace_modes import KEEPS_IR
from tilelang_churn.figures.page_templates import TEMPLATES, diff_spans, page_name, render, text_diff
from tilelang_churn.tables import pass_edits, release_tables
from tilelang_churn.tables.pass_edits import normalize_ir
from tilelang_churn.tables.release_tables import KEPT, Configuration, align_passes

INDEX = "index.html"
PAGES_DIR = "pages"
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _json_script(data) -> Markup:
    """The page's data as JSON to put inside <script> as it is (safe: HTML's entities there would corrupt it)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Markup(re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text))


TEMPLATES.filters["json_script"] = _json_script


def _flag(value) -> bool | None:
    """A yes/no fact of a table row: None where it is unknown."""
    return None if _na(value) else bool(value)


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


def _first_edit(row: dict) -> dict:
    """The first divergent edit, or what its absence means: every kept pass made the same edit, or some edits are
    unknown (no IR to compare them from); {css, text}."""
    text = _first_edit_text(row)
    if text:
        return {"css": "wrap", "text": text}
    unknown = row.get("edit_unknown_runs")
    if _na(row.get("edit_differs_runs")) or _na(unknown):
        return {"css": "muted", "text": "—"}
    if int(unknown):
        return {"css": "muted wrap", "text": f"none found ({int(unknown)} kept runs unknown)"}
    return {"css": "good wrap", "text": "none: every kept pass edits alike"}


def display_label(row: dict) -> str:
    """A configuration's label as the pages show it: the ``configuration`` column's, with the kernel's name after
    the target where the label lacks it (the GEMM's label names its shape, not its kernel)."""
    label = str(row["configuration"])
    kernel = str(row.get("kernel") or "")
    words = label.split(" ")
    if not kernel or any(word == kernel or word.startswith(f"{kernel}(") for word in words):
        return label
    return " ".join([words[0], kernel, *words[1:]])


def _first_pass(row: dict) -> dict:
    """The first divergent pass, or the frontend where the IR differs before any pass (the first pass then only
    carries that difference: its name says nothing); {name, frontend}."""
    name = row.get("first_divergent_pass") or ""
    differs = row.get("initial_ir_differs")
    return {"name": name, "frontend": bool(name and not _na(differs) and bool(differs))}


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


def _failure_note(release: str, failure: dict) -> dict:
    """A release whose lowering failed: where (step and pass) and its error."""
    error = failure["error"] or "(no error text recorded)"
    return {"release": release, "where": f"step {failure['step']} {failure['pass']}", "error": error}


def _mark(state: str | None, same, op: str) -> tuple[str, str]:
    """A sequence row's mark and its CSS class: the IR difference's mark (MARKS), else ≠ where the edits differ,
    ? where a kept pass's edit is unknown; class ``diff`` whenever the two runs' edits differ."""
    text = MARKS.get(state) or ("≠" if same is False else "?" if (op == KEPT and same is None) else "")
    css = "diff" if same is False else "unknown" if text == "?" else ""
    return text, f"{css} absorbed" if state == release_tables.ABSORBED else css


def _run_cell(run, job, renamed: str = "") -> dict | None:
    """One release's cells of a sequence row (the template's run_cells): step and pass (indented by its nesting;
    RENAMED: how its identity differs from the other release's, "named tl.X in 0.1.15"), +/-, seconds."""
    if run is None:
        return None
    counted = not _na(run["added"])
    return {
        "step": int(run["step"]),
        "label": job.label(run),
        "renamed": renamed,
        "added": int(run["added"]) if counted else None,
        "deleted": int(run["deleted"]) if counted else None,
        "failed": run["status"] == STATUS_FAILED,
        "depth": 0 if _na(run.get("depth")) else int(run["depth"]),
        "ms": "" if _na(run.get("seconds")) else f"{float(run['seconds']) * 1000:.2f}",
    }


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
    data_rows, trs = [], []  # the page's data and the sequence table's rows
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
            trs.append({"phase": phase})
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
        trs.append(
            {
                "position": position,
                "classes": " ".join(classes),
                "mark": mark,
                "mark_class": mark_class,
                "why": state["difference"] or ("edits differ" if same is False else ""),
                "op": op,
                "old": _run_cell(run_old, old),
                "new": _run_cell(run_new, new, renamed),
            }
        )

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

    source_diff = text_diff(source_old, source_new, f"{o} kernel source", f"{n} kernel source", _source_norm)
    failures = [_failure(job) for job in (old, new)]
    reasons = [
        _no_ir_reason(job, archive, failure)
        for job, archive, failure in zip((old, new), (archive_old, archive_new), failures)
    ]
    no_ir = "; ".join(reason for reason in reasons if reason)
    source_empty = (
        "identical (trailing whitespace ignored)" if source_diff == [] else "no generated source on one side or both"
    )
    facts = {
        "difference": row.get("difference_summary") or "unknown",
        "first_edit": _first_edit(row),
        "edits_differ": _num(row.get("edit_differs_runs")) or "—",
        "source_differs": _flag(row.get("source_differs")),
        "runs": f"{row['kept_runs']} / {row['removed_runs']} / {row['added_runs']}",
    }
    label = display_label(row)
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
    return render(
        "compare_pair.html.j2",
        title=f"{label}: {o} → {n}",
        label=label,
        old=o,
        new=n,
        facts=facts,
        note=row.get("note") or "",
        failures=[_failure_note(release, failure) for release, failure in zip((o, n), failures) if failure is not None],
        no_ir=no_ir,
        rows=trs,
        source_diff=diff_spans(source_diff),
        source_empty=source_empty,
        source_old=diff_spans(" " + line for line in (source_old or "").splitlines()),
        source_new=diff_spans(" " + line for line in (source_new or "").splitlines()),
        data=data,
    )


def _passes_moved(row: dict, side: str) -> dict:
    """A speed_attribution row's passes of one side (new, old), their shares of the way, the knockout's state;
    ``noted``: no passes, for the reason the row's note gives."""
    names, shares = row[f"passes_back_{side}"], row[f"back_{side}"]
    passes = []
    if names:
        passes = [(name, f"{float(share):.0%}") for name, share in zip(names.split(";"), (shares or "").split(";"))]
    return {"passes": passes, "noted": bool(row.get("note")), "knockout": row[f"knockout_{side}"]}


SHOWN_PASSES = 6  # of a difference cell's list of passes; the cell's tooltip names them all


def _difference(row: dict) -> dict:
    """Where the pair's IR starts to differ and where it reconverges, and which passes introduce a difference or
    edit differently on IR that already differs (divergence.csv's difference columns)."""
    summary = row.get("difference_summary") or ""
    parts = []
    for key, words in (("introduced_by", "introduced by"), ("edits_differ_at", "edits differ at")):
        if summary and row.get(key):
            names = row[key].split(";")
            more = f" and {len(names) - SHOWN_PASSES} more" if len(names) > SHOWN_PASSES else ""
            parts.append(
                {"title": ", ".join(names), "words": words, "shown": ", ".join(names[:SHOWN_PASSES]), "more": more}
            )
    css = "good wrap" if summary.startswith("the IR is equal") else "wrap"
    return {"summary": summary, "css": css, "parts": parts}


def _speed_rows(rows: Sequence[dict] | None) -> list[dict] | None:
    """The index's section of speed_attribution.csv, a row each (None: no GPU timings, no section)."""
    if rows is None:
        return None
    return [
        {
            "configuration": f"{row['target_name']} {row['kernel_label']}",
            "releases": f"{release_text(row['release_old'])} → {release_text(row['release_new'])}",
            "latency": f"{row['latency_old_ms']:.4g} → {row['latency_new_ms']:.4g} ms (×{row['latency_change']:.3f})",
            "edit": str(row.get("first_divergent_edit") or row.get("first_divergent_pass") or "—"),
            "new": _passes_moved(row, "new"),
            "old": _passes_moved(row, "old"),
            "note": row.get("note") or "",
        }
        for row in rows
    ]


FIGURES = ("release_heatmap.png", "release_heatmap.svg", "release_trend.png", "release_trend.svg")


def index_page(
    entries: Sequence[dict],
    attribution: Sequence[dict] | None = None,
    tables: Sequence[str] = (),
    links: Mapping | None = None,
    alone: Sequence[tuple[str, str]] = (),
) -> str:
    """The index: first each configuration's pairs in a sentence each (divergence.csv's ``statement``, linked to the
    pair's page; ``alone``: (label, sentence) of each configuration one version alone has), then one row per
    configuration x release pair (``entries``: divergence rows plus ``href`` and their ``marks``), after the
    configurations whose speed moved (``attribution``: speed_attribution.csv's rows; None: no GPU stage) and the
    pass x pair matrix of marks (its pass names linked to the newest version's source, ``links``); ``tables``: the
    CSV files beside it, linked."""
    rows = []
    review: dict[str, list[dict]] = {}  # configuration: its pairs' statements (divergence.csv), as a review reads
    for row in entries:
        if row.get("statement"):
            review.setdefault(display_label(row), []).append({"statement": row["statement"], "href": row.get("href")})
        # what the filter finds beyond the cells' text: the kernel's name and settings, every pass a cell shortens
        keys = ("kernel", "params", "pass_configs", "introduced_by", "edits_differ_at")
        rows.append(
            {
                "search": " ".join(str(row.get(key) or "").replace(";", " ") for key in keys),
                "href": row.get("href"),
                "label": display_label(row),
                "page_error": row.get("page_error") or "",
                "releases": f"{release_text(row['release_old'])} → {release_text(row['release_new'])}",
                "difference": _difference(row),
                "frontend_differs": _flag(row.get("initial_ir_differs")),
                "first_pass": _first_pass(row),
                "first_edit": _first_edit(row),
                "edits_differ": _num(row.get("edit_differs_runs")),
                "source_differs": _flag(row.get("source_differs")),
                "runs": f"{row['kept_runs']}/{row['removed_runs']}/{row['added_runs']}",
            }
        )
    for label, statement in alone:
        review.setdefault(label, []).append({"statement": statement, "href": None})
    return render(
        "compare_index.html.j2",
        title="TileLang releases compared",
        rows=rows,
        review=[{"label": label, "pairs": pairs} for label, pairs in review.items()],
        tables=tables,
        figures=FIGURES,
        attribution=_speed_rows(attribution),
        matrix=difference_matrix(entries, links),
        table="pairs",
    )


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
    (out_dir / PAGES_DIR).mkdir(parents=True, exist_ok=True)  # the rule's output, also where no pair has a page
    alone = [(display_label(config.columns()), alone_statement(config.jobs[0])) for config in configs
             if len(config.jobs) == 1]  # fmt: skip
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
        handle.write(index_page(entries, attribution, tables, links, alone))
    return [index, *written]


def alone_statement(job) -> str:
    """The "In short" sentence of a configuration that one version alone has (no pair): a kernel that another
    version cannot import or build, or pass configs that one version's kernel brings."""
    release = release_text(job.release)
    if job.failed:
        failed = job.rows[job.rows["status"] == STATUS_FAILED]
        error = str(failed["error"].iloc[0]) if len(failed) else ""
        return f"only {release} has this configuration, and its job failed: {error[:300]}"
    if job.unsupported:
        return f"only {release} has this configuration, and its mode is unsupported there"
    changed = int((job.runs["status"] == STATUS_CHANGED).sum())
    return f"only {release} has this configuration: {len(job.runs)} pass runs, {changed} changed the IR"


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
    """The pass's link in the newest version that has one (``links`` in version order: resolve_pass_links), its
    definition before a search (a user's build, which has no tag to link into, comes after the release it is of)."""
    found = [links[version][name] for version in reversed(list(links or {})) if name in links[version]]
    return next((link for link in found if link[1] == "definition"), found[0] if found else None)


def difference_matrix(entries: Sequence[dict], links: Mapping | None = None) -> dict | None:
    """The passes that introduce, absorb or edit a difference somewhere (rows, in order of first appearance) x
    the pairs (columns, as the table below): which pass does what where; a pass's name links to its source in
    the newest release (``links``)."""
    rows = list(
        dict.fromkeys(n for e in entries for n, d in (e.get("marks") or {}).items() if d != release_tables.CARRIED)
    )
    if not rows:
        return None
    head = [f"{display_label(e)}: {release_text(e['release_old'])} → {release_text(e['release_new'])}" for e in entries]
    body = []
    for name in rows:
        cells = []
        for entry in entries:
            difference = (entry.get("marks") or {}).get(name)
            mark = MARKS.get(difference, "")
            css = {"I": "bad", "A": "good", "≠": "bad"}.get(mark, "muted")
            cells.append({"css": css, "title": difference or "equal", "mark": mark})
        link = _newest_link(pass_names.short_name(name), links)  # links are kept by short name (tl.Simplify's too)
        if link is not None:
            url, kind = link
            link = (url, "its definition" if kind == "definition" else "a search for it")
        body.append({"name": name, "link": link, "cells": cells})
    return {"head": head, "rows": body}
