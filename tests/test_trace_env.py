"""trace-env: passes.csv is this run's own run record, counted as TileLang's report.html counts it."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.core import passes_table

pytestmark = pytest.mark.integration  # tier: tests/conftest.py checks it against what the tests use

require_tilelang()


class PassListParser(HTMLParser):
    """The report's sidebar: one <a class="pass-link"> per record, with index, label, status and +/-."""

    def __init__(self):
        super().__init__()
        self.passes: list[dict] = []
        self._field = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "a" and "pass-link" in classes:
            self.passes.append({"phase": attrs["data-phase"], "status": attrs["data-status"], "add": None, "del": None})
        elif self.passes and tag == "span":
            for cls, field in (("pass-idx", "idx"), ("pass-label", "label"), ("st-add", "add"), ("st-del", "del")):
                if cls in classes:
                    self._field = field

    def handle_endtag(self, tag):
        if tag == "a":
            self._field = None

    def handle_data(self, data):
        if self._field and self.passes:
            self.passes[-1][self._field] = data
            self._field = None


def report_passes(report: Path) -> list[dict]:
    """The report's pass list in step order (the page groups it by phase)."""
    parser = PassListParser()
    parser.feed(report.read_text(encoding="utf-8"))
    return sorted(parser.passes, key=lambda p: int(p["idx"]))


def report_view(row: dict) -> dict:
    """What the report shows for one passes.csv row: +/- for changed and codegen records, ERROR for failed."""
    shown = {"idx": f"{row['step']:02d}", "label": row["pass"], "phase": row["phase"], "status": row["status"]}
    if row["status"] in ("changed", "codegen"):
        shown.update({"add": f"+{row['added']}", "del": f"\u2212{row['deleted']}"})
    elif row["status"] == "failed":
        shown.update({"add": None, "del": "ERROR"})
    else:
        shown.update({"add": None, "del": None})
    return shown


def record_pairs(run_dir: Path) -> int:
    befores = sorted(run_dir.glob("*/*_before.tir"))
    for before in befores:
        stem = before.name[: -len("_before.tir")]
        assert [p.name for p in before.parent.glob(stem + "_after.*")], f"{before} has no after file"
    return len(befores)


@pytest.mark.parametrize("target", ["cuda-sm90", "hip"])
def test_csv_equals_the_runs_report(trace_runs, target):
    proc, out = trace_runs.get("--mode", "trace-env", "--target", target)
    assert proc.returncode == 0, proc.stderr
    rows = passes_table.read_rows(out / "passes.csv")
    run_dir = Path(trace_runs.run_info(out)["run_record"])
    assert run_dir.is_relative_to(out)

    shown = report_passes(run_dir / "report.html")
    assert [report_view(r) for r in rows] == [
        {k: p.get(k) for k in ("idx", "label", "phase", "status", "add", "del")} for p in shown
    ]
    assert len(rows) == record_pairs(run_dir)
    statuses = [r["status"] for r in rows]
    assert statuses.count("codegen") == 1 and statuses[-1] == "codegen"
    assert "changed" in statuses and "noop" in statuses
    assert {r["source"] for r in rows} == {"run_record"}
    # nested passes (run from inside another pass) keep TileLang's depth
    assert any(r["depth"] for r in rows)
    # the report link TileLang keeps next to codegen.cpp points at this very run
    assert (run_dir.parents[1] / "report.html").resolve() == (run_dir / "report.html").resolve()


def test_stdout_lines_follow_the_csv(trace_runs):
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    rows = passes_table.read_rows(out / "passes.csv")
    lines = proc.stdout.splitlines()
    assert len(lines) == len(rows) + 1 and lines[-1].startswith("note:")
    for line, row in zip(lines, rows):
        assert line.startswith(f"pass={row['pass']} changed={row['changed']} +{row['added']} -{row['deleted']}")
    assert lines[-2].endswith("[codegen: TIR -> source, not churn]")


def test_a_failing_pass_is_a_row_matching_the_report(trace_runs):
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "llvm")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "LayoutInference" in proc.stderr
    rows = passes_table.read_rows(out / "passes.csv")
    run_dir = Path(trace_runs.run_info(out)["run_record"])
    assert [report_view(r) for r in rows] == [
        {k: p.get(k) for k in ("idx", "label", "phase", "status", "add", "del")}
        for p in report_passes(run_dir / "report.html")
    ]
    assert rows[-1]["status"] == "failed" and rows[-1]["pass"] == "LayoutInference"
    assert "can not be inferred" in rows[-1]["error"]
    assert all(r["status"] in ("changed", "noop") for r in rows[:-1]) and len(rows) > 1


def test_everything_lands_under_out_and_a_second_run_reads_only_its_own_record(tmp_path):
    from conftest import TraceRuns, run_script

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    for _ in range(2):
        proc = run_script(
            "--mode", "trace-env", "--target", "hip", "--shape", "256,256,256", "--out", str(out), cwd=cwd
        )
        assert proc.returncode == 0, proc.stderr
    assert list(cwd.iterdir()) == []  # nothing in ./tmp/lower_trace_dir or anywhere else outside --out
    runs = sorted((out / "lower_trace" / "gemm_lower_trace" / ".run_records").iterdir())
    assert len(runs) == 2
    info = TraceRuns.run_info(out)
    assert Path(info["run_record"]) in runs
    rows = passes_table.read_rows(out / "passes.csv")
    assert len(rows) == record_pairs(Path(info["run_record"]))


PROBE = """
import contextlib, json, sys
from pathlib import Path
from tilelang.tools.lower_trace import html
from tilelang_churn.trace import tilelang_trace, trace_job

real_generate, flushes = html.generate_html, []
html.generate_html = lambda records, path, **kw: (flushes.append(len(records)), real_generate(records, path, **kw))[1]
doubling, result = tilelang_trace.lower_trace_report_doubling, {}
for name, context in (("tilelang", contextlib.nullcontext), ("doubling", doubling)):
    tilelang_trace.lower_trace_report_doubling = context  # "tilelang": the report as TileLang alone writes it
    flushes.clear()
    argv = ["--mode", "trace-env", "--shape", "256,256,256", "--block", "64,64,32", "--out", sys.argv[1] + "/" + name]
    result[name] = {"status": trace_job.run_job(argv), "flushes": list(flushes)}
print(json.dumps(result))
"""


def test_the_report_is_tilelangs_own_written_a_few_times(tmp_path):
    """TileLang rewrites its whole report after every pass; a trace-env job lets through only the flushes that find
    twice the records of the last, and writes the last at the end: the report and every file of the run record
    are byte for byte what TileLang alone writes (its run folder's name aside)."""
    import json
    import os
    import subprocess
    import sys

    from conftest import SCRIPTS

    require_tilelang()
    env = {**os.environ, "TL_LOWER_TRACE": "1", "PYTHONPATH": str(SCRIPTS)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout.splitlines()[-1])
    assert runs["tilelang"]["status"] == runs["doubling"]["status"] == 0
    alone, doubling = runs["tilelang"]["flushes"], runs["doubling"]["flushes"]
    passes = len(passes_table.read_rows(tmp_path / "tilelang" / "passes.csv"))
    assert len(alone) >= passes > 60  # a flush per record, and more
    assert doubling[-1] == alone[-1] == passes  # the last report shows every record
    assert all(later >= 2 * earlier for earlier, later in zip(doubling[:-2], doubling[1:-1]))
    assert len(doubling) <= passes.bit_length() + 2

    def files(root: Path) -> dict[str, bytes]:
        (run_dir,) = root.glob("lower_trace/*/.run_records/*")  # the folder is named after the script
        return {
            str(path.relative_to(run_dir)): path.read_bytes().replace(run_dir.name.encode(), b"RUN")
            for path in sorted(run_dir.rglob("*"))
            if path.is_file()
        }

    written, own = files(tmp_path / "doubling"), files(tmp_path / "tilelang")
    assert written.keys() == own.keys() and len(own) > 2 * passes - 10
    assert [name for name in own if written[name] != own[name]] == []
