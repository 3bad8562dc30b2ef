"""Unit tests of scripts/compare_releases.py: release order, alignment, divergence, tables, figures, CLI."""

from __future__ import annotations

import difflib
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from conftest import entry, job_provenance
from tilelang_churn.core import jobs, releases
from tilelang_churn.core import passes_table as pt
from tilelang_churn.figures import release_figures
from tilelang_churn.tables import pass_edits
from tilelang_churn.tables import release_tables as cr

# one configuration: a job's provenance without its release
CONFIG = {key: value for key, value in job_provenance(K=1024).items() if key != "tilelang_version"}
LABEL = "cuda-sm90 1024x1024x1024 b128x128x32 float16/float32 t128 s3 trace-env"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_releases.py"


def run(name, status="changed", added=1, deleted=0, error=""):
    return (name, status, added, deleted, error)


def job_rows(version, runs, **config):
    """passes.csv rows of one job: runs are (pass, status, added, deleted, error), steps 0, 1, ..."""
    rows = []
    for step, (name, status, added, deleted, error) in enumerate(runs):
        counted = status in ("changed", "noop", "codegen")
        rows.append(
            dict(
                CONFIG,
                **config,
                tilelang_version=version,
                step=step,
                phase="pipeline",
                depth=0,
                status=status,
                error=error,
                changed=(added + deleted > 0) if counted else None,
                added=added if counted else None,
                deleted=deleted if counted else None,
                **{"pass": name},
            )
        )
    return rows


def frame(*jobs) -> pd.DataFrame:
    """An in-memory churn table (it may hold statuses the passes.csv reader does not know yet)."""
    return pd.DataFrame([row for rows in jobs for row in rows], columns=pt.COLUMNS)


def write_archive(
    path: Path,
    initial: str | None,
    afters: list[str | None],
    source: str | None = "int main;\n",
    names: list[str] | None = None,
) -> Path:
    """An IR archive whose step k (k = 0, 1, ...) has the IR text afters[k] (None: the pass failed)."""
    texts: list[str] = []

    def index(text):
        if text is None:
            return None
        if text not in texts:
            texts.append(text)
        return texts.index(text)

    names = names or [f"P{k}" for k in range(len(afters))]
    data = {
        "format": 1,
        "initial": index(initial),
        "steps": [{"step": k, "pass": names[k], "after": index(t)} for k, t in enumerate(afters)],
        "texts": texts,
        "kernel_source": source,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(data, handle)
    return path


def ops(old, new):
    return [(op, i, j) for op, i, j in cr.align_passes(old, new)]


# -------------------------------------------------------------------------------------------- releases


VERSIONS = ["0.1.10", "0.1.9", "0.1.7.post3", "0.1.8", "0.1.7", "", "0.1.8rc1", "0.1.15", "0.1.8.dev2"]
ORDERED = ["0.1.7", "0.1.7.post3", "0.1.8.dev2", "0.1.8rc1", "0.1.8", "0.1.9", "0.1.10", "0.1.15", ""]


def test_release_order_packaging():
    assert releases._HAVE_PACKAGING
    assert releases.sort_releases(VERSIONS) == ORDERED


def test_release_order_fallback(monkeypatch):
    monkeypatch.setattr(releases, "_HAVE_PACKAGING", False)
    assert releases.sort_releases(VERSIONS) == ORDERED
    assert releases.sort_releases(["not a version", "0.1.9"]) == ["0.1.9", "not a version"]


# ------------------------------------------------------------------------------------------- alignment


def test_align_identical():
    names = ["BindTarget", "Simplify", "LowerTileOp", "Simplify"]
    assert ops(names, names) == [("kept", k, k) for k in range(4)]


def test_align_pass_inserted():
    # the earliest Simplify stays paired; the new pass comes with its own Simplify
    assert ops(["A", "Simplify", "B"], ["A", "Simplify", "X", "Simplify", "B"]) == [
        ("kept", 0, 0),
        ("kept", 1, 1),
        ("added", None, 2),
        ("added", None, 3),
        ("kept", 2, 4),
    ]


def test_align_pass_removed():
    assert ops(["A", "Simplify", "B", "Simplify", "C"], ["A", "Simplify", "C"]) == [
        ("kept", 0, 0),
        ("kept", 1, 1),
        ("removed", 2, None),
        ("removed", 3, None),
        ("kept", 4, 2),
    ]


def test_align_repeated_name_groups_gaps():
    # two Simplify runs vanish: the alignment removes them as one block rather than two scattered rows
    old = ["S", "A", "S", "S", "B", "S"]
    new = ["S", "A", "B", "S"]
    assert ops(old, new) == [
        ("kept", 0, 0),
        ("kept", 1, 1),
        ("removed", 2, None),
        ("removed", 3, None),
        ("kept", 4, 2),
        ("kept", 5, 3),
    ]


def test_align_full_replacement_is_removed_then_added():
    assert ops(["A", "B"], ["C", "D", "E"]) == [
        ("removed", 0, None),
        ("removed", 1, None),
        ("added", None, 0),
        ("added", None, 1),
        ("added", None, 2),
    ]


def test_align_empty_sides():
    assert ops([], []) == []
    assert ops([], ["A"]) == [("added", None, 0)]
    assert ops(["A"], []) == [("removed", 0, None)]


def test_align_keeps_more_than_difflib():
    # a moved block of three passes is difflib's longest block; a maximum alignment keeps the four singles
    old = "LayoutInference LowerTileOp Simplify A Verify B Verify C Verify D".split()
    new = "A Check B Check C Check D LayoutInference LowerTileOp Simplify".split()
    greedy = difflib.SequenceMatcher(None, old, new, autojunk=False)
    assert sum(block.size for block in greedy.get_matching_blocks()) == 3
    assert sum(op == "kept" for op, _, _ in ops(old, new)) == 4


def _lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def test_align_random_sequences_are_complete_ordered_and_maximal():
    rng = random.Random(7)
    for _ in range(150):
        old = [rng.choice("SSSABCD") for _ in range(rng.randrange(0, 14))]
        new = [rng.choice("SSSABCE") for _ in range(rng.randrange(0, 14))]
        result = ops(old, new)
        assert [i for _, i, _ in result if i is not None] == list(range(len(old)))
        assert [j for _, _, j in result if j is not None] == list(range(len(new)))
        assert all(old[i] == new[j] for op, i, j in result if op == "kept")
        assert sum(op == "kept" for op, _, _ in result) == _lcs(old, new)


def test_pass_alignment_table():
    old = job_rows(
        "0.1.8",
        [
            run("A", added=2, deleted=1),
            run("Simplify", "noop", 0, 0),
            run("B", added=5),
            run("codegen", "codegen", 100, 50),
        ],
    )
    new = job_rows(
        "0.1.9",
        [
            run("A", added=3, deleted=3),
            run("X", added=4),
            run("Simplify", "noop", 0, 0),
            run("B", "failed", error="InternalError: boom"),
        ],
    )
    table = cr.pass_alignment(frame(new, old))  # input order does not matter
    assert list(table.columns) == cr.ALIGNMENT_COLUMNS
    assert set(table["configuration"]) == {LABEL}
    assert list(table["op"]) == ["kept", "added", "kept", "kept"]  # codegen is not a pass run
    assert list(table["release_old"].unique()) == ["0.1.8"] and list(table["release_new"].unique()) == ["0.1.9"]
    assert list(table["position"]) == [0, 1, 2, 3]
    first, added, _, failed = (table.iloc[k] for k in range(4))
    assert first["churn_delta"] == 3 and first["step_old"] == 0 and first["step_new"] == 0
    assert pd.isna(added["step_old"]) and added["pass_new"] == "X" and pd.isna(added["churn_delta"])
    assert failed["status_new"] == "failed" and pd.isna(failed["churn_delta"]) and failed["added_old"] == 5


def with_identities(rows: list[dict], identities: list[str]) -> list[dict]:
    return [{**row, "pass_id": identity} for row, identity in zip(rows, identities)]


def test_passes_align_by_identity_and_a_pass_named_in_the_newer_release_pairs_with_itself():
    """tl.Simplify and tirx.Simplify share the name Simplify and are two passes; 0.1.12's anonymous pass_fn made by
    AddWrapperForSingleBufStore is 0.1.14's tl.AddWrapperForSingleBufStore."""
    old = with_identities(
        job_rows("0.1.12", [run("pass_fn"), run("Simplify"), run("pass_fn", "noop", 0, 0)]),
        ["tilelang.transform.AddWrapperForSingleBufStore", "tl.Simplify", "tilelang.transform.HoistBroadcastValues"],
    )
    new = with_identities(
        job_rows("0.1.14", [run("AddWrapperForSingleBufStore"), run("Simplify"), run("pass_fn", "noop", 0, 0)]),
        ["tl.AddWrapperForSingleBufStore", "tirx.Simplify", "tilelang.transform.HoistBroadcastValues"],
    )
    table = cr.pass_alignment(frame(old, new))
    assert list(zip(table["op"], table["pass_id_old"].fillna(""), table["pass_id_new"].fillna(""))) == [
        ("kept", "tilelang.transform.AddWrapperForSingleBufStore", "tl.AddWrapperForSingleBufStore"),
        ("removed", "tl.Simplify", ""),
        ("added", "", "tirx.Simplify"),
        ("kept", "tilelang.transform.HoistBroadcastValues", "tilelang.transform.HoistBroadcastValues"),
    ]
    assert list(table["renamed"]) == ["named tl.AddWrapperForSingleBufStore in 0.1.14", "", "", ""]
    # a table written before identities: each pass is its name, as before
    plain = cr.pass_alignment(frame(job_rows("0.1.12", [run("Simplify")]), job_rows("0.1.14", [run("Simplify")])))
    assert list(plain["op"]) == ["kept"] and list(plain["pass_id_old"]) == ["Simplify"]


# ------------------------------------------------------------------------------------------ divergence


HEADER = "# from tvm.script import ir as I\n# from tvm.script import tir as T\n\n"
HEADER_X = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
IR0 = "@I.ir_module\nclass Module:\n    pass\n"
NAMES = ["P0", "P1", "P2", "P3"]


def ir(k: int, extra: str = "") -> str:
    return HEADER + f"@I.ir_module\nclass Module:\n    x = {k}{extra}\n"


def pair_setup(
    tmp_path,
    old_afters,
    new_afters,
    old_initial=HEADER + IR0,
    new_initial=HEADER + IR0,
    old_source="int main;\n",
    new_source="int main;\n",
    names_new=None,
    write_new=True,
):
    names_new = names_new or NAMES[: len(new_afters)]
    old = job_rows("0.1.8", [run(n) for n in NAMES[: len(old_afters)]])
    new = job_rows("0.1.9", [run(n) for n in names_new])
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "old" / "ir.json.gz", old_initial, old_afters, old_source, NAMES),
        cr.job_key(new[0]): tmp_path / "new" / "ir.json.gz",
    }
    if write_new:
        write_archive(tmp_path / "new" / "ir.json.gz", new_initial, new_afters, new_source, names_new)
    table = cr.divergence(frame(old, new), archives)
    assert list(table.columns) == cr.DIVERGENCE_COLUMNS and len(table) == 1
    return table.iloc[0]


def test_divergence_identical(tmp_path):
    row = pair_setup(tmp_path, [ir(0), ir(1), ir(2)], [ir(0), ir(1), ir(2)])
    assert row["initial_ir_differs"] is not pd.NA and not row["initial_ir_differs"]
    assert pd.isna(row["first_divergent_step_old"]) and row["first_divergent_pass"] == ""
    assert bool(row["ir_identical_throughout"]) and not row["final_ir_differs"] and not row["source_differs"]
    assert (row["kept_runs"], row["removed_runs"], row["added_runs"]) == (3, 0, 0)
    assert row["note"] == ""


def test_divergence_first_at_step_k(tmp_path):
    row = pair_setup(tmp_path, [ir(0), ir(1), ir(2), ir(3)], [ir(0), ir(1), ir(9), ir(10)])
    assert not row["initial_ir_differs"]
    assert (row["first_divergent_step_old"], row["first_divergent_step_new"], row["first_divergent_pass"]) == (
        2,
        2,
        "P2",
    )
    assert row["final_ir_differs"] and not row["ir_identical_throughout"]


def test_divergence_only_in_normalised_noise(tmp_path):
    noisy = [ir(0).replace(HEADER, HEADER_X), ir(1).replace("x = 1", "x = 1   "), ir(2) + "\n\n"]
    row = pair_setup(tmp_path, [ir(0), ir(1), ir(2)], noisy, new_initial=HEADER_X + IR0)
    assert not row["initial_ir_differs"] and pd.isna(row["first_divergent_step_old"])
    assert row["ir_identical_throughout"]
    assert "normalised noise" in row["note"]


def test_normalize_ir_keeps_body_spelling():
    assert pass_edits.normalize_ir(HEADER + IR0) == pass_edits.normalize_ir(HEADER_X + IR0 + "  \n\n")
    assert pass_edits.normalize_ir(HEADER + "with T.block():") != pass_edits.normalize_ir(HEADER + "with T.sblock():")
    # a comment inside the module body is IR printing, not prelude: kept
    body = IR0 + "# from tvm.script import tir as T\n"
    assert pass_edits.normalize_ir(body).endswith("# from tvm.script import tir as T")
    assert pass_edits.normalize_ir("    x  \r\n    y\r\n") == "    x\n    y"  # indentation is kept


def test_divergence_initial_ir_differs(tmp_path):
    row = pair_setup(tmp_path, [ir(0), ir(1)], [ir(5), ir(6)], new_initial=HEADER + IR0 + "    y = 1\n")
    assert row["initial_ir_differs"] and not row["ir_identical_throughout"]
    assert row["first_divergent_step_old"] == 0 and "before the first pass" in row["note"]


def test_divergence_source_differs_only(tmp_path):
    row = pair_setup(tmp_path, [ir(0), ir(1)], [ir(0), ir(1)], new_source="int main2;\n")
    assert row["ir_identical_throughout"] and row["source_differs"]
    row = pair_setup(tmp_path / "b", [ir(0), ir(1)], [ir(0), ir(1)], new_source=None)
    assert row["source_differs"] and "only 0.1.8 generated a source" in row["note"]


def test_divergence_missing_archive(tmp_path):
    row = pair_setup(tmp_path, [ir(0)], [ir(0)], write_new=False)
    assert "no IR archive for 0.1.9" in row["note"]
    for column in ("initial_ir_differs", "ir_identical_throughout", "source_differs"):
        assert pd.isna(row[column])
    assert row["kept_runs"] == 1  # the pass alignment is still known


def test_divergence_after_added_pass_and_failure(tmp_path):
    # P1 is new in 0.1.9 and changes the IR, so the kept P2 after it diverges; P3 fails in 0.1.9 only
    old_names = ["P0", "P2", "P3"]
    new_names = ["P0", "P1", "P2", "P3"]
    old = job_rows("0.1.8", [run(n) for n in old_names])
    new = job_rows("0.1.9", [run(n) for n in new_names[:3]] + [run("P3", "failed", error="E: x")])
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.json.gz", IR0, [ir(0), ir(2), ir(3)], names=old_names),
        cr.job_key(new[0]): write_archive(tmp_path / "n.json.gz", IR0, [ir(0), ir(1), ir(7), None], names=new_names),
    }
    row = cr.divergence(frame(old, new), archives).iloc[0]
    assert (row["first_divergent_step_old"], row["first_divergent_step_new"], row["first_divergent_pass"]) == (
        1,
        2,
        "P2",
    )
    assert "first divergence follows added P1 (0.1.9 step 1)" in row["note"]
    assert "0.1.9 fails at step 3 P3" in row["note"]


def test_divergence_failure_outside_any_pass(tmp_path):
    # both releases fail in tilelang.lower after their passes: the "lower" row has no archived step
    old = job_rows("0.1.8", [run("P0"), run("lower", "failed", error="E: no layout")])
    new = job_rows("0.1.9", [run("P0"), run("lower", "failed", error="E: no layout")])
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.json.gz", IR0, [ir(0)], None, ["P0"]),
        cr.job_key(new[0]): write_archive(tmp_path / "n.json.gz", IR0, [ir(0)], None, ["P0"]),
    }
    row = cr.divergence(frame(old, new), archives).iloc[0]
    assert row["ir_identical_throughout"] and pd.isna(row["source_differs"])
    assert "0.1.8 fails at step 1 lower" in row["note"] and "lacks" not in row["note"]


def test_divergence_unreadable_archive(tmp_path):
    old = job_rows("0.1.8", [run("P0")])
    new = job_rows("0.1.9", [run("P0")])
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    row = cr.divergence(frame(old, new), {cr.job_key(old[0]): bad, cr.job_key(new[0]): bad}).iloc[0]
    assert "unreadable" in row["note"] and pd.isna(row["source_differs"])
    row = cr.divergence(frame(old, new), {}).iloc[0]
    assert "no IR archive given for 0.1.8" in row["note"]


# ------------------------------------------------------------------------------------ churn_by_version


def tiny_table():
    ok = job_rows(
        "0.1.9",
        [
            run("A", added=2, deleted=1),
            run("B", "noop", 0, 0),
            run("C", added=4, deleted=4),
            run("codegen", "codegen", 300, 200),
        ],
    )
    failed = job_rows("0.1.10", [run("A", added=2, deleted=2), run("B", "failed", error="InternalError: no layout")])
    unsupported = job_rows("0.1.8", [run("trace-env", "unsupported", error="no TL_LOWER_TRACE in 0.1.8")])
    other = job_rows("0.1.9", [run("A", "noop", 0, 0)], target_name="cuda-sm80")
    return frame(failed, ok, unsupported, other)


def test_churn_by_version(tmp_path):
    churn = tiny_table()
    ok_key = cr.job_key(churn[churn["tilelang_version"] == "0.1.9"].iloc[0])
    archives = {ok_key: write_archive(tmp_path / "ir.json.gz", IR0, [ir(0)] * 3, "a\nb\nc\n")}
    table = cr.churn_by_version(churn, archives)
    assert list(table.columns) == cr.BY_VERSION_COLUMNS
    assert list(table["target_name"]) == ["cuda-sm80", "cuda-sm90", "cuda-sm90", "cuda-sm90"]
    assert list(table["tilelang_version"]) == ["0.1.9", "0.1.8", "0.1.9", "0.1.10"]  # release order, not text
    rows = {(r.target_name, r.tilelang_version): r for r in table.itertuples(index=False)}
    ok = rows[("cuda-sm90", "0.1.9")]
    assert (ok.pass_runs, ok.changed_runs, ok.added_total, ok.deleted_total, ok.churn_total) == (3, 2, 6, 5, 11)
    assert not ok.failed and not ok.unsupported and ok.first_error == "" and ok.generated_source_lines == 3
    failed = rows[("cuda-sm90", "0.1.10")]
    assert (failed.pass_runs, failed.churn_total) == (2, 4) and failed.failed
    assert failed.first_error == "InternalError: no layout" and pd.isna(failed.generated_source_lines)
    unsupported = rows[("cuda-sm90", "0.1.8")]
    assert unsupported.unsupported and not unsupported.failed
    assert pd.isna(unsupported.pass_runs) and pd.isna(unsupported.churn_total)
    assert unsupported.first_error == "no TL_LOWER_TRACE in 0.1.8"
    assert table["seconds_total"].isna().all()


def test_churn_by_version_seconds_and_source_line_columns():
    churn = tiny_table()
    churn["seconds"] = 0.5
    churn["generated_source_lines"] = 42
    table = cr.churn_by_version(churn)
    ok = table[(table["tilelang_version"] == "0.1.9") & (table["target_name"] == "cuda-sm90")].iloc[0]
    assert ok["seconds_total"] == 1.5 and ok["generated_source_lines"] == 42  # 3 pass runs, codegen excluded


def test_alignment_and_divergence_with_unsupported_release():
    churn = tiny_table()
    alignment = cr.pass_alignment(churn)
    first = alignment[alignment["release_old"] == "0.1.8"]
    assert list(first["op"]) == ["added"] * 3  # unsupported 0.1.8 has no pass run
    table = cr.divergence(churn)
    assert list(zip(table["release_old"], table["release_new"])) == [("0.1.8", "0.1.9"), ("0.1.9", "0.1.10")]
    assert "mode unsupported in 0.1.8" in table.iloc[0]["note"]


# ---------------------------------------------------------------------------------------------- figures


def test_release_matrix_union_and_states():
    jobs = [
        job_rows("0.1.8", [run("A"), run("S"), run("Gone", added=7), run("B")]),
        job_rows("0.1.9", [run("A"), run("S"), run("B", "failed", error="E")]),
        job_rows("0.1.10", [run("A"), run("S"), run("Gone", added=3), run("B")]),
        job_rows("0.1.11", [run("trace-env", "unsupported")]),
        job_rows("0.1.12", [run("Z1"), run("Z2")]),
        job_rows("0.1.13", [run("A")], target_name="cuda-sm80"),  # a release without this configuration
    ]
    data = release_figures.release_matrix(frame(*jobs), LABEL)
    assert data["releases"] == ["0.1.8", "0.1.9", "0.1.10", "0.1.11", "0.1.12", "0.1.13"]
    assert data["row_labels"] == ["A", "S", "Gone", "B", "Z1", "Z2"]  # Gone keeps its row when it comes back
    assert data["states"] == ["", "failed", "", "unsupported", "shares no pass", "no job"]
    assert data["values"][2, 0] == 7 and data["values"][2, 2] == 3 and not data["present"][2, 1]
    assert data["failed"][3, 1] and np.isnan(data["values"][3, 1])


def test_the_heatmaps_second_panel_holds_the_alignments_differences(tmp_path):
    """Three releases: per row of the union alignment and pair of consecutive releases, the mark is
    pass_alignment.csv's difference of the run in that row (the newer release's, or the older's where removed)."""
    jobs = [
        job_rows("0.1.13", [run("P0"), run("P2")]),
        job_rows("0.1.14", [run("P0"), run("P2")]),
        job_rows("0.1.15", [run("P0"), run("P1", added=2, deleted=1), run("P2")]),
    ]
    archives = {
        cr.job_key(jobs[0][0]): write_archive(tmp_path / "a.gz", "a\nb", ["a\nb\nx", "a\nb\nx\ny"], names=["P0", "P2"]),
        cr.job_key(jobs[1][0]): write_archive(tmp_path / "b.gz", "a\nb", ["a\nb\nx", "a\nb\nx\nz"], names=["P0", "P2"]),
        cr.job_key(jobs[2][0]): write_archive(
            tmp_path / "c.gz", "a\nc", ["a\nc\nx", "q\nc\nx", "q\nc\nx\nz"], names=["P0", "P1", "P2"]
        ),
    }
    churn = frame(*jobs)
    edits = pass_edits.EditCache(archives)
    data = release_figures.release_matrix(churn, LABEL, edits)
    alignment = cr.pass_alignment(churn, archives, pass_edits.EditCache(archives))
    assert data["pairs"] == [("0.1.13", "0.1.14"), ("0.1.14", "0.1.15")]
    assert data["row_labels"] == ["P0", "P1", "P2"]
    for c, (old, new) in enumerate(data["pairs"]):
        pair = alignment[(alignment["release_old"] == old) & (alignment["release_new"] == new)]
        by_pass = {row.pass_new or row.pass_old: row.difference for row in pair.itertuples()}
        shown = {name: row[c] for name, row in zip(data["row_labels"], data["differences"]) if row[c] is not None}
        assert shown == by_pass
    # 0.1.14 edits P2 differently on equal IR; 0.1.15's frontend differs, P1 (its own) edits it, P2 carries it
    assert [row[0] for row in data["differences"]] == [cr.EQUAL, None, cr.INTRODUCED]
    assert [row[1] for row in data["differences"]] == [cr.CARRIED, cr.EDITS_DIFFER, cr.CARRIED]
    release_figures.plot_release_heatmap(churn, [tmp_path / "h.png"], LABEL, edits)
    assert mpimg.imread(tmp_path / "h.png").shape[1] > release_figures.DPI * 7  # the panel widened the figure


def test_heatmap_unknown_configuration():
    with pytest.raises(ValueError, match="no configuration labelled 'nope'"):
        release_figures.release_matrix(tiny_table(), "nope")


def write_jobs(root: Path) -> list[Path]:
    """A small release grid on disk: passes.csv + ir.json.gz per job (one job without an archive)."""
    runs = {
        "0.1.8": [run("BindTarget"), run("Simplify", "noop", 0, 0), run("LowerTileOp", added=30, deleted=12)],
        "0.1.9": [
            run("BindTarget"),
            run("Simplify", "noop", 0, 0),
            run("NewPass", added=3),
            run("LowerTileOp", added=32, deleted=12),
        ],
        "0.1.10": [run("BindTarget"), run("Simplify", "noop", 0, 0), run("NewPass", "failed", error="E: boom")],
    }
    paths = []
    for target in ("cuda-sm90", "hip"):
        for version, job in runs.items():
            folder = root / version / target
            pt.write_rows(folder / "passes.csv", job_rows(version, job, target_name=target))
            paths.append(folder / "passes.csv")
            if (version, target) != ("0.1.10", "hip"):
                afters = [ir(k, version if k >= 2 else "") for k in range(len(job))]
                if job[-1][1] == "failed":
                    afters[-1] = None
                write_archive(
                    folder / "ir.json.gz",
                    HEADER + IR0,
                    afters,
                    None if version == "0.1.10" else "src\n",
                    [name for name, *_ in job],
                )
    return paths


def test_cli_writes_everything_deterministically(tmp_path):
    paths = [str(p) for p in write_jobs(tmp_path / "runs")]
    outputs = [tmp_path / "a", tmp_path / "b"]
    assert entry("compare_releases").main(["--out-dir", str(outputs[0]), *paths]) == 0
    # the second run in a fresh interpreter with another hash seed: no set or dict order may leak out
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(SCRIPT.parent))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out-dir", str(outputs[1]), *paths],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in outputs[0].iterdir())
    assert names == sorted(
        [*cr.OUTPUT_TABLES, "release_heatmap.png", "release_heatmap.svg", "release_trend.png", "release_trend.svg"]
        + ["index.html", "pages"]
    )
    written = sorted(str(p.relative_to(outputs[0])) for p in outputs[0].rglob("*") if p.is_file())
    assert len([name for name in written if name.startswith("pages/")]) == 4  # 2 configurations x 2 pairs
    for name in written:
        assert (outputs[0] / name).read_bytes() == (outputs[1] / name).read_bytes(), name
    svg = (outputs[0] / "release_heatmap.svg").read_text()
    assert "<dc:date>" not in svg
    for name in ("release_heatmap.png", "release_trend.png"):
        img = mpimg.imread(outputs[0] / name)
        assert float(np.var(img[..., :3])) > 0
    diverging = pd.read_csv(outputs[0] / "divergence.csv", keep_default_na=False)
    sm90 = diverging[diverging["target_name"] == "cuda-sm90"]
    assert list(sm90["first_divergent_pass"]) == ["LowerTileOp", "NewPass"]
    hip = diverging[diverging["target_name"] == "hip"]
    assert "no IR archive for 0.1.10" in hip.iloc[1]["note"]
    by_version = pd.read_csv(outputs[0] / "churn_by_version.csv", keep_default_na=False)
    assert list(by_version["generated_source_lines"]) == ["1", "1", "", "1", "1", ""]


def test_cli_heatmap_config_and_errors(tmp_path, capsys):
    paths = [str(p) for p in write_jobs(tmp_path / "runs")]
    label = LABEL.replace("cuda-sm90", "hip")
    assert (
        entry("compare_releases").main(
            ["--out-dir", str(tmp_path / "out"), "--heatmap-config", label, "--formats", "png", *paths]
        )
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [*cr.OUTPUT_TABLES, "release_heatmap.png", "release_trend.png", "index.html", "pages"]
    )
    assert entry("compare_releases").main(["--out-dir", str(tmp_path / "bad"), "--heatmap-config", "nope", *paths]) == 1
    assert "no configuration labelled 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # nothing written before the inputs are known good
    assert entry("compare_releases").main(["--out-dir", str(tmp_path / "dup"), paths[0], paths[0]]) == 1
    assert "appears in" in capsys.readouterr().err


def test_align_shortcut_for_common_ends_equals_the_whole_programme():
    """align_passes fixes common leading names (and trailing names found nowhere else) before its dynamic
    programme: the same alignment, tie-breaking included, as the programme over the whole lists."""
    rng = random.Random(19)
    for _ in range(3000):
        letters = "ABCSDEF"[: rng.choice([3, 4, 6])]
        old = [rng.choice(letters) for _ in range(rng.randint(0, 9))]
        new = [rng.choice(letters) for _ in range(rng.randint(0, 9))]
        if rng.random() < 0.5:
            common = [rng.choice(letters) for _ in range(rng.randint(0, 5))]
            old, new = common + old + common[::-1], common + new + common[::-1]
        assert cr.align_passes(old, new) == cr._align_dp(old, new), (old, new)


def test_a_difference_from_the_frontend_absorbed_by_a_pass_is_said_so(tmp_path):
    # the new release's frontend prints one more line; P0 edits differently on it, P1 gives equal IR again
    new_initial = HEADER + IR0 + "    y = 1\n"
    row = pair_setup(tmp_path, [ir(0), ir(1), ir(2)], [ir(0, "  # y"), ir(1), ir(2)], new_initial=new_initial)
    assert (row["differs_from"], row["reconverges_at"]) == ("frontend", "P1")
    assert (row["introduced_by"], row["edits_differ_at"]) == ("", "P0")
    assert row["difference_summary"] == "differs from the frontend; reconverges at P1"
    names = NAMES[:3]
    old = job_rows("0.1.8", [run(n) for n in names])
    new = job_rows("0.1.9", [run(n) for n in names])
    archives = {
        cr.job_key(old[0]): tmp_path / "old" / "ir.json.gz",
        cr.job_key(new[0]): tmp_path / "new" / "ir.json.gz",
    }
    table = cr.pass_alignment(frame(old, new), archives)
    assert list(table.columns) == cr.ALIGNMENT_COLUMNS
    assert list(table["difference"]) == [cr.EDITS_DIFFER, cr.ABSORBED, cr.EQUAL]
    assert list(table["ir_equal_after"]) == [False, True, True]


def test_a_difference_introduced_by_a_pass_that_never_goes_away_is_said_so(tmp_path):
    row = pair_setup(tmp_path, [ir(0), ir(1), ir(2), ir(3)], [ir(0), ir(1), ir(9), ir(10)])
    assert (row["differs_from"], row["reconverges_at"], row["introduced_by"]) == ("P2", "", "P2")
    assert row["edits_differ_at"] == "P3"  # x = 2 -> 3 against x = 9 -> 10: another edit on differing IR
    assert row["difference_summary"] == "differs from P2; never reconverges"
    # the same edit on differing IR carries the difference forward
    row = pair_setup(tmp_path / "b", [ir(0), ir(1), ir(2)], [ir(0), ir(1, "\n    y = 1"), ir(2, "\n    y = 1")])
    assert (row["introduced_by"], row["edits_differ_at"]) == ("P1", "")
    equal = pair_setup(tmp_path / "c", [ir(0), ir(1)], [ir(0), ir(1)])
    assert (equal["differs_from"], equal["difference_summary"]) == ("", "the IR is equal after every pass")


def test_the_heatmap_configuration_is_found_by_the_folders_of_its_jobs(tmp_path):
    from tilelang_churn.figures import release_figures

    paths = []
    for version in ("0.1.8", "0.1.9"):
        for target in ("cuda-sm90", "hip"):
            folder = tmp_path / version / target / "1024x1024x512" / "trace-env"
            pt.write_rows(folder / "passes.csv", job_rows(version, [run("P0")], target_name=target))
            paths.append(folder / "passes.csv")
    churn, archives = cr.read_jobs(paths)
    configs = cr.configurations(churn)
    label = release_figures.label_of_job(configs, archives, "hip/1024x1024x512/trace-env")
    (expected,) = {jobs.config_label(row) for _, row in churn.iterrows() if row["target_name"] == "hip"}
    assert label == expected
    with pytest.raises(ValueError, match="no job in a folder .../hip/other/trace-env/"):
        release_figures.label_of_job(configs, archives, "hip/other/trace-env")


def test_a_release_is_imported_with_any_local_tag_and_a_wheel_exactly():
    """One rule for the trace job, the GPU job and the knockout's GPU job: the GPU job compared base versions, so a
    wheel's jobs (0.1.15+mine) were refused the TileLang they asked for."""
    from tilelang_churn.core.releases import imports_release

    assert imports_release("0.1.14+cu128", "0.1.14") and imports_release("0.1.14", "0.1.14")
    assert imports_release("0.1.15+mine", "0.1.15+mine")
    assert not imports_release("0.1.15", "0.1.15+mine") and not imports_release("0.1.15+other", "0.1.15+mine")
    assert not imports_release("0.1.15", "0.1.14") and not imports_release(None, "0.1.14")
