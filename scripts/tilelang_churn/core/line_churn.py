"""Line churn between two texts, counted the two ways TileLang counts it, raw or ignoring re-indentation.

- ``sequence_matcher_counts``: difflib.SequenceMatcher opcodes over the lines, as TileLang's lower_trace core
  counts for its report.html (a replaced line is one + and one -). The ``run_record`` (trace-env) and
  ``pass_instrument`` (instrument) sources count this way.
- ``unified_diff_counts``: the +/- lines of difflib.unified_diff (context 3), as
  ``tilelang.utils.pass_diff.pass_diff`` counts (lines without their endings) and, with ``keepends=True``,
  as ``tilelang.tools.lower_trace.lower_trace`` counts (lines with their endings, so a last line without a
  newline differs from the same line with one).

``strip=True`` compares lines without their leading and trailing whitespace, with the same method: a pass
that only wraps or unwraps a block re-indents every line inside it, which raw counts report as churn. These
are the ``added_stripped`` / ``deleted_stripped`` columns of passes.csv. Standard library only.
"""

from __future__ import annotations

import difflib


def _lines(text: str, strip: bool) -> list[str]:
    lines = text.splitlines()
    return [line.strip() for line in lines] if strip else lines


def sequence_matcher_counts(before: str, after: str, strip: bool = False) -> tuple[int, int]:
    """(added, deleted) lines from SequenceMatcher opcodes (autojunk on, as TileLang's core)."""
    old, new = _lines(before, strip), _lines(after, strip)
    if old == new:
        return 0, 0
    added = deleted = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag in ("insert", "replace"):
            added += j2 - j1
        if tag in ("delete", "replace"):
            deleted += i2 - i1
    return added, deleted


def _lines_with_ends(text: str, strip: bool) -> list[str]:
    lines = text.splitlines(keepends=True)
    if not strip:
        return lines
    return [line.strip() + line[len(line.rstrip("\r\n")) :] for line in lines]


def unified_diff_counts(before: str, after: str, strip: bool = False, keepends: bool = False) -> tuple[int, int]:
    """(added, deleted) lines of a unified diff with 3 lines of context, headers excluded."""
    if keepends:
        # lower_trace joins the diff of lines-with-endings and splits it again: a last line without a newline
        # runs into the next diff line, which then is not counted; reproduced, so counts match the tool's
        old, new = _lines_with_ends(before, strip), _lines_with_ends(after, strip)
        diff = "".join(difflib.unified_diff(old, new, "before", "after", n=3)).splitlines()
    else:
        diff = difflib.unified_diff(_lines(before, strip), _lines(after, strip), "before", "after", n=3, lineterm="")
    added = deleted = 0
    for line in diff:
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            deleted += 1
    return added, deleted
