"""churn.csv is checked against churn.json (rows and sha256, written by churn_table.py after it): an edited cell
is refused by every reader (the heatmap, the book given it, the comparison's reader), in one line naming the file, the
lines that differ and how to rebuild it; once churn.csv is deleted the workflow rebuilds the same bytes.

The tables are real: the small book run of conftest.py (`book_run`: real trace jobs, real churn_table), copied.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import WorkflowRun, copy_of_finished_run
from tilelang_churn.core import passes_table as pt

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def edit_one_cell(churn: Path) -> tuple[int, str]:
    """Add 1 to the `added` cell of the first changed row of the last job; (its line number, the job's
    passes.csv as churn.json names it)."""
    manifest = json.loads(pt.manifest_path(churn).read_text())
    part = manifest["parts"][-1]
    lines = churn.read_text(encoding="utf-8").splitlines(keepends=True)
    column = pt.COLUMNS.index("added")
    for number in range(part["lines"][0], part["lines"][1] + 1):
        cells = next(csv.reader([lines[number - 1]]))
        if cells[pt.COLUMNS.index("status")] == pt.STATUS_CHANGED:
            break
    else:
        raise AssertionError("the last job has no changed row")
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    assert buffer.getvalue() == lines[number - 1]  # the writer's quoting: only the one cell changes
    cells[column] = str(int(cells[column]) + 1)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    lines[number - 1] = buffer.getvalue()
    churn.write_text("".join(lines), encoding="utf-8")
    return number, part["passes_csv"]


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPTS / script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_an_edited_churn_csv_is_refused_by_its_readers_and_rebuilt_once_deleted(book_run, tmp_path):
    workdir = copy_of_finished_run(book_run.workdir, tmp_path / "run")
    run_copy = WorkflowRun(workdir, book_run.configfiles)
    churn = workdir / "results" / "churn.csv"
    original = churn.read_bytes()
    manifest = json.loads((workdir / "results" / "churn.json").read_text())
    assert manifest["sha256"] == hashlib.sha256(original).hexdigest() == pt.fingerprint(churn)["sha256"]
    assert manifest["rows"] == len(pt.read_rows(churn)) == pt.fingerprint(churn)["rows"]

    line, passes = edit_one_cell(churn)
    first, last = manifest["parts"][-1]["lines"]
    why = (
        f"results/churn.csv: changed after churn_table.py wrote it (churn.json records its sha256): its "
        f"{manifest['rows']} rows, but other bytes in lines {first}-{last} (the rows of {passes}); delete "
    )
    assert first <= line <= last
    heatmap = run("plot_churn.py", "heatmap", "--churn", str(churn), "--out", str(tmp_path / "heat.png"))
    reference = run_copy.job_dir("cuda-sm90", "256x256x256_b64x64x32") / "passes.csv"
    book = run("book_figures.py", "--churn", str(churn), "--reference", str(reference), "--out-dir", str(tmp_path))
    for proc in (heatmap, book):
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{workdir}/{why}{churn} to rebuild it" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "heat.png").exists() and not list(tmp_path.glob("fig*"))
    from tilelang_churn.tables import release_tables  # the same reader: a churn.csv given to it too

    with pytest.raises(pt.TableError, match="changed after churn_table.py wrote it"):
        release_tables.read_jobs([churn])

    # in the workflow: the heatmap and the book read the jobs' passes.csv, not churn.csv, so the edit reruns
    # nothing of them and no rule reads the edited table
    drawn = sorted((workdir / "results" / "book").rglob("*")) + [workdir / "logs/book/book_figures_en.log"]
    drawn += sorted((workdir / "results" / "figures").glob("churn_heatmap.*"))
    drawn_before = {path: path.stat().st_mtime_ns for path in drawn}
    proc = run_copy.snakemake("--cores", "1", "plot_heatmap", "book_figures")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(drawn_before) > 3 and {path: path.stat().st_mtime_ns for path in drawn} == drawn_before

    churn.unlink()  # as the message says: the table is gathered again from the jobs' passes.csv
    proc = run_copy.snakemake("--cores", "2")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert churn.read_bytes() == original
    assert (workdir / "results" / "figures" / "churn_heatmap.png").is_file()
