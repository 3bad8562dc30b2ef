"""The per-pass edit comparison (tables/pass_edits.py and its columns of pass_alignment.csv / divergence.csv), on
small hand-made IR pairs."""

from __future__ import annotations

import pandas as pd
from test_compare_releases import frame, job_rows, run, write_archive
from tilelang_churn.tables import pass_edits
from tilelang_churn.tables import release_tables as cr

BODY = "# from tvm.script import tir as T\nA\nB\nC\nD"


def pair(tmp_path, runs_old, afters_old, runs_new, afters_new, initial_old=BODY, initial_new=BODY, **kw):
    old = job_rows("0.1.14", runs_old, **kw)
    new = job_rows("0.1.15", runs_new, **kw)
    names_old = [r[0] for r in runs_old]
    names_new = [r[0] for r in runs_new]
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "old.json.gz", initial_old, afters_old, names=names_old),
        cr.job_key(new[0]): write_archive(tmp_path / "new.json.gz", initial_new, afters_new, names=names_new),
    }
    churn = frame(old, new)
    return cr.pass_alignment(churn, archives), cr.divergence(churn, archives).iloc[0]


def test_edit_of_ignores_context_and_noise():
    a, _, counts = pass_edits.edit_of("x\nA\nB", "x\nA\nNEW\nB")
    b, _, _ = pass_edits.edit_of(
        "# from tvm.script import tirx as T\nother\ncontext\nA\nB  ", "other\ncontext\nA\nNEW\nB"
    )
    assert a == b == pass_edits.Edit(removed=(), added=("NEW",)) and counts == (1, 0)
    c, _, _ = pass_edits.edit_of("A\nB", "A\nOTHER\nB")
    assert c != a and c.size() == "+1/-0"


def test_the_same_edit_on_different_context_is_the_same(tmp_path):
    # the frontend prints the kernel differently (initial IR differs), every pass still does the same
    initial_new = BODY.replace("D", "D2")
    p0_old, p0_new = BODY.replace("B", "B\nX"), initial_new.replace("B", "B\nX")
    p1_old, p1_new = p0_old.replace("C\n", ""), p0_new.replace("C\n", "")
    runs = [run("P0", added=1), run("P1", deleted=1), run("P2", "noop", 0, 0)]
    alignment, row = pair(
        tmp_path, runs, [p0_old, p1_old, p1_old], runs, [p0_new, p1_new, p1_new], initial_new=initial_new
    )
    assert list(alignment["edit_same"]) == [True, True, True]
    assert row["initial_ir_differs"] and row["first_divergent_pass"] == "P0"
    assert row["first_divergent_edit"] == "" and row["edit_differs_runs"] == 0 and row["edit_unknown_runs"] == 0
    assert pd.isna(row["first_divergent_edit_step_old"])


def test_a_different_edit_is_found_at_its_pass(tmp_path):
    p0 = BODY.replace("B", "B\nX")
    runs = [run("P0", added=1), run("P1", added=1, deleted=1), run("P2", added=1)]
    old_afters = [p0, p0.replace("C", "C1"), p0.replace("C", "C1") + "\nE"]
    new_afters = [p0, p0.replace("C", "C2\nC3"), p0.replace("C", "C2\nC3") + "\nE"]
    alignment, row = pair(tmp_path, runs, old_afters, runs, new_afters)
    assert list(alignment["edit_same"]) == [True, False, True]
    assert row["first_divergent_pass"] == "P1" and row["first_divergent_edit"] == "P1"
    assert (row["first_divergent_edit_step_old"], row["first_divergent_edit_step_new"]) == (1, 1)
    assert (row["edit_added_old"], row["edit_deleted_old"], row["edit_added_new"], row["edit_deleted_new"]) == (
        1,
        1,
        2,
        1,
    )
    assert row["edit_differs_runs"] == 1


def test_added_and_removed_passes(tmp_path):
    p0 = BODY.replace("B", "B\nX")
    # new release: an added pass Q edits the IR between P0 and P1, and P2 is gone
    runs_old = [run("P0", added=1), run("P1", deleted=1), run("P2", "noop", 0, 0)]
    runs_new = [run("P0", added=1), run("Q", added=1), run("P1", deleted=1)]
    old_afters = [p0, p0.replace("A\n", ""), p0.replace("A\n", "")]
    q = p0 + "\nQ"
    new_afters = [p0, q, q.replace("A\n", "")]
    alignment, row = pair(tmp_path, runs_old, old_afters, runs_new, new_afters)
    assert list(alignment["op"]) == ["kept", "added", "kept", "removed"]
    assert list(alignment["edit_same"].astype(object).where(alignment["edit_same"].notna(), None)) == [
        True,
        None,
        True,
        None,
    ]
    assert row["first_divergent_pass"] == "Q" or row["first_divergent_pass"] == "P1"
    assert row["first_divergent_edit"] == "" and row["edit_differs_runs"] == 0


def test_an_added_pass_before_a_divergent_edit_is_named(tmp_path):
    p0 = BODY.replace("B", "B\nX")
    runs_old = [run("P0", added=1), run("P1", deleted=1)]
    runs_new = [run("P0", added=1), run("Q", added=1), run("P1", deleted=1)]
    q = p0 + "\nQ"
    alignment, row = pair(tmp_path, runs_old, [p0, p0.replace("A\n", "")], runs_new, [p0, q, q.replace("B\n", "")])
    assert row["first_divergent_edit"] == "P1"
    assert "first divergent edit follows added Q (0.1.15 step 1, +1/-0)" in row["note"]


def test_nested_runs_and_disagreeing_counts_are_unknown(tmp_path):
    p0 = BODY.replace("B", "B\nX")
    runs = [run("P0", added=1), run("N", added=1), run("P2", added=1)]
    old = job_rows("0.1.14", runs, mode="instrument", source="pass_instrument")
    new = job_rows("0.1.15", runs, mode="instrument", source="pass_instrument")
    for rows in (old, new):
        rows[1]["depth"] = 1  # N ran inside P0's parent: its start is not the previous after
    # P2's recorded counts (+1/-0) disagree with the previous after -> P2's after (+1 line "Z", -1 "A"): unknown
    afters = [p0, "small\nmodule", p0.replace("A", "Z")]
    archives = {
        cr.job_key(old[0]): write_archive(tmp_path / "o.gz", BODY, afters, names=["P0", "N", "P2"]),
        cr.job_key(new[0]): write_archive(tmp_path / "n.gz", BODY, afters, names=["P0", "N", "P2"]),
    }
    churn = frame(old, new)
    edits = pass_edits.EditCache(archives)
    job = cr.configurations(churn)[0].jobs[0]
    found = edits.of(job)
    assert found[0].edit is not None and found[1].edit is None and "nested" in found[1].reason
    assert found[2].edit is None and "counts disagree" in found[2].reason
    row = cr.divergence(churn, archives, edits).iloc[0]
    assert row["edit_unknown_runs"] == 2 and "2 kept runs with an unknown edit" in row["note"]


def test_an_archived_before_is_used(tmp_path):
    import gzip
    import json

    runs = [run("P0", added=1), run("N", added=1)]
    rows = job_rows("0.1.15", runs)
    rows[1]["depth"] = 1
    path = write_archive(tmp_path / "a.gz", BODY, [BODY + "\nX", "m\nY"], names=["P0", "N"])
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["texts"].append("m")
    data["steps"][1]["before"] = len(data["texts"]) - 1
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    job = cr.configurations(frame(rows))[0].jobs[0]
    found = pass_edits.EditCache({job.key: path}).of(job)
    assert found[1].edit == pass_edits.Edit((), ("Y",))
    assert pass_edits.diff_lines(found[1]) == ["@@ -1,1 +1,2 @@", " m", "+Y"]


def test_failed_runs_and_missing_archives():
    a = pass_edits.RunEdit(0, "P", "failed")
    b = pass_edits.RunEdit(0, "P", "failed")
    c = pass_edits.RunEdit(0, "P", "changed", edit=pass_edits.Edit((), ("x",)))
    assert pass_edits.same_edit(a, b) is True and pass_edits.same_edit(a, c) is False
    assert pass_edits.same_edit(c, pass_edits.RunEdit(0, "P", "changed")) is None


def test_an_added_pass_is_named_across_no_op_passes(tmp_path):
    # 0.1.15 adds S, which makes P2's edit early; a no-op pass between them keeps the note
    p0 = BODY.replace("B", "B\nX")
    runs_old = [run("P0", added=1), run("N", "noop", 0, 0), run("P2", deleted=1)]
    runs_new = [run("P0", added=1), run("S", deleted=1), run("N", "noop", 0, 0), run("P2", "noop", 0, 0)]
    done = p0.replace("A\n", "")
    alignment, row = pair(tmp_path, runs_old, [p0, p0, done], runs_new, [p0, done, done, done])
    assert row["first_divergent_edit"] == "P2"
    assert "first divergent edit follows added S (0.1.15 step 1, +0/-1)" in row["note"]
