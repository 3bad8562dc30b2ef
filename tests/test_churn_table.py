"""Unit tests of scripts/churn_table.py (gather, summarize, CLI)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import entry, job_provenance, make_row, write_passes
from tilelang_churn.core import passes_table as pt
from tilelang_churn.tables import churn_table

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "churn_table.py"

KERNEL = dict(N=512, K=256, block_N=64)
JOB = job_provenance("cuda-sm90", **KERNEL)
LLVM_JOB = job_provenance("llvm", **KERNEL)


def row(step, name, status, added=None, deleted=None, error="", phase="pipeline_cuda", job=None, mode=None, **kernel):
    if mode or kernel:
        job = job_provenance("cuda-sm90", mode or "trace-env", **{**KERNEL, **kernel})
    return make_row(step, name, status, added, deleted, job=job or JOB, error=error, phase=phase)


# a job with every status; codegen has the largest numbers so that counting it would show
OK_ROWS = [
    row(1, "BindTarget", "noop", 0, 0, phase="unscoped"),
    row(2, "Simplify", "changed", 7, 3),
    row(3, "LayoutInference", "changed", 11, 5),
    row(4, "Simplify", "noop", 0, 0),
    row(5, "LowerTileOp", "changed", 40, 2),
    row(6, "Simplify", "changed", 1, 13),
    row(7, "codegen", "codegen", 900, 700, phase="codegen"),
]
FAIL_ROWS = [
    row(1, "BindTarget", "changed", 2, 1, job=LLVM_JOB, phase="unscoped"),
    row(2, "Simplify", "noop", 0, 0, job=LLVM_JOB),
    row(3, "LayoutInference", "failed", error="InternalError: cannot infer layout", job=LLVM_JOB),
]


write = write_passes


def churn_sum(rows, key):
    return sum(r[key] or 0 for r in rows if r["status"] in pt.CHURN_STATUSES)


def test_gather_concatenates_in_input_order(tmp_path):
    a = write(tmp_path, "a", OK_ROWS)
    b = write(tmp_path, "b", FAIL_ROWS)
    df = churn_table.gather([b, a])
    assert list(df.columns) == pt.COLUMNS
    assert len(df) == len(OK_ROWS) + len(FAIL_ROWS)
    assert list(df["pass"]) == [r["pass"] for r in FAIL_ROWS + OK_ROWS]
    assert list(df["step"]) == [r["step"] for r in FAIL_ROWS + OK_ROWS]
    assert df["added"].isna().sum() == 1  # the failed row has no numbers


def test_summary_sums_exclude_codegen(tmp_path):
    df = churn_table.gather([write(tmp_path, "a", OK_ROWS)])
    s = churn_table.summarize(df)
    assert list(s.columns) == pt.SUMMARY_COLUMNS
    assert len(s) == 1
    r = s.iloc[0]
    assert r["pass_steps"] == 7
    assert r["churn_steps"] == 6
    assert (r["changed_steps"], r["noop_steps"], r["failed_steps"], r["codegen_steps"]) == (4, 2, 0, 1)
    assert r["added_total"] == churn_sum(OK_ROWS, "added") == 59
    assert r["deleted_total"] == churn_sum(OK_ROWS, "deleted") == 23
    assert r["churn_total"] == 82
    assert (r["top_pass"], r["top_pass_step"], r["top_pass_churn"]) == ("LowerTileOp", 5, 42)
    assert r["first_error"] == ""
    assert (r["target"], r["source"], r["M"], r["block_N"]) == (JOB["target"], "run_record", 1024, 64)


def test_failed_job_counted(tmp_path):
    s = churn_table.summarize(churn_table.gather([write(tmp_path, "f", FAIL_ROWS)]))
    r = s.iloc[0]
    assert (r["pass_steps"], r["churn_steps"], r["failed_steps"], r["codegen_steps"]) == (3, 2, 1, 0)
    assert (r["added_total"], r["deleted_total"], r["churn_total"]) == (2, 1, 3)
    assert r["first_error"] == "InternalError: cannot infer layout"
    assert (r["top_pass"], r["top_pass_step"]) == ("BindTarget", 1)


def test_top_pass_tie_takes_earliest_step(tmp_path):
    # rows written out of step order: the tie (10 lines at steps 3 and 5) must go to step 3
    rows = [
        row(5, "LowerTileOp", "changed", 4, 6),
        row(1, "BindTarget", "changed", 1, 0),
        row(3, "LayoutInference", "changed", 9, 1),
        row(4, "codegen", "codegen", 50, 50, phase="codegen"),
    ]
    r = churn_table.summarize(churn_table.gather([write(tmp_path, "t", rows)])).iloc[0]
    assert (r["top_pass"], r["top_pass_step"], r["top_pass_churn"]) == ("LayoutInference", 3, 10)


def test_top_pass_is_named_by_its_identity_where_its_short_name_is_shared(tmp_path):
    rows = [
        {**row(1, "Simplify", "changed", 1, 0), "pass_id": "tl.Simplify"},
        {**row(2, "Simplify", "changed", 9, 9), "pass_id": "tirx.Simplify"},
        {**row(3, "pass_fn", "changed", 1, 0), "pass_id": "tilelang.transform.HoistBroadcastValues"},
    ]
    r = churn_table.summarize(churn_table.gather([write(tmp_path, "s", rows)])).iloc[0]
    assert (r["top_pass"], r["top_pass_step"]) == ("tirx.Simplify", 2)
    rows[2] = {**rows[2], "added": 40}
    r = churn_table.summarize(churn_table.gather([write(tmp_path, "h", rows)])).iloc[0]
    assert (r["top_pass"], r["top_pass_step"]) == ("HoistBroadcastValues", 3)


def test_no_churn_job_has_empty_top_pass(tmp_path):
    rows = [row(1, "BindTarget", "noop", 0, 0), row(2, "Simplify", "failed", error="boom")]
    r = churn_table.summarize(churn_table.gather([write(tmp_path, "n", rows)])).iloc[0]
    assert r["top_pass"] == "" and pd.isna(r["top_pass_step"]) and r["top_pass_churn"] == 0
    assert r["first_error"] == "boom"


def test_jobs_keep_order_of_first_appearance(tmp_path):
    j1 = [row(1, "A", "changed", 1, 1, M=64), row(2, "B", "noop", 0, 0, M=64)]
    j2 = [row(1, "A", "changed", 2, 2, M=32)]
    j3 = [row(1, "A", "changed", 3, 3, mode="trace-api", M=64)]
    # one file holds job 64 step 1 and job 32; a second file holds job 64 step 2 and job 3
    a = write(tmp_path, "a", [j1[0]] + j2)
    b = write(tmp_path, "b", [j1[1]] + j3)
    s = churn_table.summarize(churn_table.gather([a, b]))
    assert list(zip(s["M"], s["mode"])) == [(64, "trace-env"), (32, "trace-env"), (64, "trace-api")]
    assert list(s["pass_steps"]) == [2, 1, 1]
    assert list(s["churn_total"]) == [2, 4, 6]


def test_header_error_names_file(tmp_path):
    bad = tmp_path / "bad" / "passes.csv"
    bad.parent.mkdir()
    bad.write_text("step,phase,pass\n1,x,Simplify\n")
    good = write(tmp_path, "good", OK_ROWS)
    with pytest.raises(ValueError, match=r"bad[/\\]passes\.csv.*schema"):
        churn_table.gather([good, bad])


def test_empty_file_errors_name_file(tmp_path):
    header_only = tmp_path / "h" / "passes.csv"
    pt.write_rows(header_only, [])
    with pytest.raises(ValueError, match=r"h[/\\]passes\.csv: no rows"):
        churn_table.gather([header_only])
    zero_bytes = tmp_path / "z.csv"
    zero_bytes.write_text("")
    with pytest.raises(ValueError, match=r"z\.csv"):
        churn_table.gather([zero_bytes])


def test_unknown_status_and_duplicate_steps_rejected(tmp_path):
    bad = write(tmp_path, "s", [row(1, "A", "skipped", 0, 0)])
    with pytest.raises(ValueError, match=r"s[/\\]passes\.csv.*skipped"):
        churn_table.gather([bad])
    a = write(tmp_path, "a", OK_ROWS)
    with pytest.raises(ValueError, match="more than once"):
        churn_table.gather([a, a])


def test_cli_writes_both_tables(tmp_path):
    a = write(tmp_path, "a", OK_ROWS)
    b = write(tmp_path, "b", FAIL_ROWS)
    out = tmp_path / "results" / "churn.csv"
    summary = tmp_path / "results" / "churn_summary.csv"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--summary", str(summary), str(a), str(b)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = pt.read_rows(out)  # churn.csv keeps the passes.csv schema
    assert [r["pass"] for r in rows] == [r["pass"] for r in OK_ROWS + FAIL_ROWS]
    assert rows[-1]["added"] is None and rows[1]["changed"] is True
    s = pd.read_csv(summary, keep_default_na=False)
    assert list(s.columns) == pt.SUMMARY_COLUMNS
    assert list(s["target_name"]) == ["cuda-sm90", "llvm"]
    assert list(s["churn_total"]) == [82, 3]
    assert list(s["first_error"]) == ["", "InternalError: cannot infer layout"]
    assert not list(out.parent.glob("*.tmp"))


def test_cli_error_exit_names_file(tmp_path):
    empty = tmp_path / "empty.csv"
    pt.write_rows(empty, [])
    out = tmp_path / "churn.csv"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), "--summary", str(tmp_path / "s.csv"), str(empty)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "empty.csv" in proc.stderr
    assert not out.exists()
    assert entry("churn_table").main(["--out", str(out), "--summary", str(tmp_path / "s.csv"), str(empty)]) == 1


def test_churn_json_records_the_unchanged_bytes_of_churn_csv(tmp_path):
    a = write(tmp_path, "a", OK_ROWS)
    b = write(tmp_path, "b", FAIL_ROWS)
    out = tmp_path / "results" / "churn.csv"
    assert entry("churn_table").main(["--out", str(out), "--summary", str(tmp_path / "s.csv"), str(a), str(b)]) == 0
    texts = [path.read_text() for path in (a, b)]
    # churn.csv: the header, then each passes.csv's data lines as the job wrote them
    assert out.read_text() == texts[0] + texts[1].split("\n", 1)[1]
    manifest = json.loads(pt.manifest_path(out).read_text())
    assert pt.manifest_path(out) == out.parent / "churn.json"
    assert {k: manifest[k] for k in ("rows", "sha256")} == pt.fingerprint(out)
    assert (manifest["table"], manifest["written_by"]) == ("churn.csv", "churn_table.py")
    assert [part["lines"] for part in manifest["parts"]] == [
        [2, 1 + len(OK_ROWS)],
        [2 + len(OK_ROWS), 1 + len(OK_ROWS) + len(FAIL_ROWS)],
    ]
    body_b = texts[1].split("\n", 1)[1].encode()
    assert manifest["parts"][1] == {
        "passes_csv": str(b),
        "lines": manifest["parts"][1]["lines"],
        "sha256": hashlib.sha256(body_b).hexdigest(),
    }
    assert len(pt.read_rows(out)) == len(OK_ROWS) + len(FAIL_ROWS)  # the check passes on the table as written
    assert not list(out.parent.glob(".*.tmp"))


def test_a_churn_csv_cut_or_edited_after_churn_table_is_refused(tmp_path):
    a = write(tmp_path, "a", OK_ROWS)
    b = write(tmp_path, "b", FAIL_ROWS)
    out = tmp_path / "churn.csv"
    assert entry("churn_table").main(["--out", str(out), "--summary", str(tmp_path / "s.csv"), str(a), str(b)]) == 0
    text = out.read_text()
    rows = len(OK_ROWS) + len(FAIL_ROWS)
    out.write_text(text[: text.rstrip("\n").rindex("\n") + 1])  # the last row removed: a table that parses
    said = f"{out}: changed after churn_table.py wrote it (churn.json records its sha256): "
    fix = f"; delete {out} to rebuild it from the jobs' passes.csv"
    with pytest.raises(pt.TableError) as caught:
        pt.read_rows(out)
    assert str(caught.value) == f"{said}{rows - 1} rows where it wrote {rows}{fix}"
    lines = text.splitlines(keepends=True)
    lines[2] = lines[2].replace(",Simplify,changed,True,7,3,", ",Simplify,changed,True,8,3,")  # one cell of job a
    assert "".join(lines) != text
    out.write_text("".join(lines))
    with pytest.raises(pt.TableError) as caught:
        pt.read_rows(out)
    first, last = 2, 1 + len(OK_ROWS)  # job a: the rows after the header
    assert str(caught.value) == f"{said}its {rows} rows, but other bytes in lines {first}-{last} (the rows of {a}){fix}"
    pt.manifest_path(out).write_text("{")
    with pytest.raises(pt.TableError, match="churn.json: not readable JSON"):
        pt.read_rows(out)
