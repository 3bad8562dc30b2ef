"""What each pass run did to the printed IR (its *edit*), and whether two releases' runs of a pass did the same.

The comparison of releases (``release_tables``) asks, per aligned pair of pass runs, whether the two runs made
the same edit, not whether they produced the same IR: once the frontend prints a kernel differently, every
later IR differs, yet most passes still do exactly what they did before. From Python::

    edits = EditCache(archives)                  # {job key: ir.json.gz path}, archives read lazily, once
    job_edits = edits.of(job)                    # {step: RunEdit} of one ReleaseJob
    same_edit(job_edits[3], other_edits[5])      # True / False / None (unknown)

Terms
-----

- edit of a pass run: the lines the run removed and the lines it added, in order (``Edit.removed``,
  ``Edit.added``), from ``difflib.SequenceMatcher`` opcodes over the lines of the IR printed before and
  after the run (autojunk on, as ``line_churn.sequence_matcher_counts``, the counter of the ``instrument``
  mode's ``added``/``deleted``). The lines are taken after ``normalize_ir`` (trailing whitespace, the
  import prelude and blank lines at either end dropped; nothing else), so an edit says *what* changed and
  not where: the same edit made on different surrounding IR is the same edit. A no-op run's edit is empty;
  a failed run has none (``None``).
- same edit: both runs have an edit and their ``removed`` and ``added`` line lists are equal. Unknown
  (``None``) when either side's edit is unknown.
- the IR a run started from: the archived ``before`` of its step (written by the instrument mode since the
  archive has it). An older archive lacks it; then, for a top-level run (depth 0), the ``after`` of the last
  top-level run before it (a parent finishes after the runs nested in it; the first run starts from the
  archive's ``initial``), checked against the job's own counts: the edit's sizes must equal passes.csv's
  ``added``/``deleted`` of the run (source ``pass_instrument``), else the start is unknown (a run outside the
  pipeline handed an older module, such as the second ``Filter``). A nested run of such an archive starts from
  IR its parent built: unknown (``RunEdit.reason``).

``RunEdit.diff`` keeps the run's unified diff (3 lines of context) for the comparison pages, so each run is
diffed once. Standard library and pandas only; no TileLang.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tilelang_churn.core import ir_archive, line_churn
from tilelang_churn.core.statuses import STATUS_FAILED, STATUS_NOOP

COUNTED_BY = "pass_instrument"  # the source whose added/deleted count exactly as the edit's opcodes
CONTEXT = 3


@dataclass(frozen=True)
class Edit:
    """The normalised lines a pass run removed and added, in order."""

    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.removed and not self.added

    def size(self) -> str:
        return f"+{len(self.added)}/-{len(self.removed)}"


@dataclass
class RunEdit:
    """One pass run's texts and edit. ``edit`` is None when unknown (``reason`` says why) or failed."""

    step: int
    name: str
    status: str
    before: str | None = None
    after: str | None = None
    edit: Edit | None = None
    reason: str = ""
    diff: list = field(default_factory=list)  # unified-diff body lines over the normalised IR (diff_lines)


_PRELUDE_RE = re.compile(r"^#?\s*from\s+tvm\.script\s+import\s+[\w.]+(?:\s+as\s+\w+)?$")


def normalize_ir(text: str) -> str:
    """Printed IR without the noise listed in the module docstring (trailing blanks, import prelude, blank
    lines at both ends)."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = 0
    while start < len(lines) and (not lines[start] or _PRELUDE_RE.match(lines[start].strip())):
        start += 1
    lines = lines[start:]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _prelude_free(text: str) -> list[str]:
    # the documented normalisation, line by line (import prelude, trailing blanks, blank ends)
    normalized = normalize_ir(text)
    return normalized.splitlines() if normalized else []


def edit_of(before: str, after: str, count: bool = True, lines=None) -> tuple[Edit, list[str], tuple | None]:
    """(the edit, its unified-diff body lines, raw (added, deleted) counts or None) of before -> after.

    The diff lines (``@@`` headers, then `` ``/``-``/``+`` lines, 3 lines of context) are over the normalised
    lines; ``count=False`` skips the raw count (no second diff); ``lines`` maps a text to its normalised lines
    (a job's cache: consecutive runs share texts)."""
    if before == after:
        return Edit(), [], (0, 0)
    counts = None
    if count:
        counts = line_churn.sequence_matcher_counts(before, after)
    lines = lines or _prelude_free
    old, new = lines(before), lines(after)
    if old == new:
        return Edit(), [], counts
    matcher = difflib.SequenceMatcher(None, old, new)
    removed_lines: list[str] = []
    added_lines: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            removed_lines.extend(old[i1:i2])
        if tag in ("insert", "replace"):
            added_lines.extend(new[j1:j2])
    diff = []
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        diff.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                diff.extend(" " + line for line in old[a1:a2])
                continue
            if tag in ("replace", "delete"):
                diff.extend("-" + line for line in old[a1:a2])
            if tag in ("replace", "insert"):
                diff.extend("+" + line for line in new[b1:b2])
    return Edit(tuple(removed_lines), tuple(added_lines)), diff, counts


def diff_lines(run: RunEdit) -> list[str]:
    """The run's before -> after as unified-diff body lines (``@@``, `` ``, ``-``, ``+`` prefixes), normalised."""
    return run.diff


def _int(value) -> int | None:
    return None if value is None or value is pd.NA or pd.isna(value) else int(value)


def job_edits(runs, archive: dict | None, problem: str = "") -> dict[int, RunEdit]:
    """{step: RunEdit} of one job's pass runs (a DataFrame, or a list of dicts, of rows with step, pass, status,
    added, deleted, depth, source)."""
    out: dict[int, RunEdit] = {}
    steps = {s.get("step"): s for s in archive["steps"]} if archive else {}
    known: dict[int, list[str]] = {}  # id of an archive text -> its normalised lines (runs share texts)

    def normalized(text: str) -> list[str]:
        lines = known.get(id(text))
        if lines is None:
            lines = known[id(text)] = _prelude_free(text)
        return lines

    last_top: RunEdit | None = None  # the last top-level run: it finished after any run nested in it
    for k, row in enumerate(runs.to_dict("records") if isinstance(runs, pd.DataFrame) else runs):
        step, name, status = int(row["step"]), str(row["pass"]), str(row["status"])
        depth = _int(row.get("depth"))
        item = RunEdit(step=step, name=name, status=status)
        out[step] = item
        if archive is None:
            item.reason = problem or "no IR archive"
            last_top = item if not depth else last_top
            continue
        archived = steps.get(step)
        if archived is None or archived.get("pass") != name:
            item.reason = f"the archive lacks step {step} {name}"
            last_top = item if not depth else last_top
            continue
        item.after = ir_archive.text_at(archive, archived.get("after"))
        if archived.get("before") is not None:
            item.before = _text(archive, archived.get("before"))
        elif not depth and last_top is None and k == 0:
            item.before = ir_archive.text_at(archive, archive.get("initial"))
        elif not depth and last_top is not None:
            item.before = last_top.after
        if status == STATUS_FAILED:
            item.reason = "the pass failed"
        elif status == STATUS_NOOP:
            item.edit = Edit()
            if item.before is None:
                item.before = item.after
        elif item.before is None:
            item.reason = (
                "a nested run: the archive lacks the IR it started from"
                if depth
                else "the archive lacks the IR this run started from"
            )
        elif item.after is not None:
            check = row.get("source") == COUNTED_BY and archived.get("before") is None  # an inferred start
            edit, diff, counts = edit_of(item.before, item.after, count=check, lines=normalized)
            recorded = (_int(row.get("added")), _int(row.get("deleted")))
            if check and counts != recorded:
                # the previous after is not what this run was handed (a module from outside the pipeline)
                item.before = None
                item.reason = "the archive lacks the IR this run started from (counts disagree)"
            else:
                item.edit, item.diff = edit, diff
        last_top = item if not depth else last_top
    return out


def _text(archive: dict, index) -> str | None:
    texts = archive["texts"]
    return texts[index] if isinstance(index, int) and 0 <= index < len(texts) else None


def same_edit(old: RunEdit | None, new: RunEdit | None) -> bool | None:
    """Whether two runs made the same edit: None when unknown, False when only one side failed."""
    if old is None or new is None:
        return None
    if old.status == STATUS_FAILED or new.status == STATUS_FAILED:
        return True if old.status == new.status == STATUS_FAILED else False
    if old.edit is None or new.edit is None:
        return None
    return old.edit == new.edit


class EditCache:
    """Each job's archive read once and its edits computed once, for the tables and the pages; ``pair_states``:
    what release_tables.ir_states found for a pair of jobs (keys of both), computed once for the alignment, the
    divergence and the index."""

    def __init__(self, archives: Mapping[tuple, str | os.PathLike] | None = None):
        self.archives = dict(archives or {})
        self._archives: dict[tuple, dict | str] = {}
        self._edits: dict[tuple, dict[int, RunEdit]] = {}
        self.pair_states: dict[tuple, list[dict]] = {}

    def archive(self, job) -> dict | str:
        """The job's loaded archive, or a string saying why there is none."""
        if job.key not in self._archives:
            path = self.archives.get(job.key)
            from tilelang_churn.core.releases import release_text

            if path is None:
                self._archives[job.key] = f"no IR archive given for {release_text(job.release)}"
            elif not Path(path).is_file():
                self._archives[job.key] = f"no IR archive for {release_text(job.release)} ({path})"
            else:
                try:
                    self._archives[job.key] = ir_archive.read(path)
                except (OSError, ValueError) as exc:
                    self._archives[job.key] = f"IR archive of {release_text(job.release)} unreadable ({path}: {exc})"
        return self._archives[job.key]

    def of(self, job) -> dict[int, RunEdit]:
        if job.key not in self._edits:
            archive = self.archive(job)
            loaded = archive if isinstance(archive, dict) else None
            runs = job.run_list() if hasattr(job, "run_list") else job.runs
            self._edits[job.key] = job_edits(runs, loaded, "" if loaded else archive)
        return self._edits[job.key]
