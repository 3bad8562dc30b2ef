"""The pass knockout (knockout/pass_knockout.py, knockout_batch.py) against what TileLang itself produces when a pass
is skipped, and its rows, figures and pages.

The expected values come from a driver subprocess that lowers the same kernels with TileLang directly, under a
pass instrument of its own written here (not the project's): the generated source's sha256 with each pass
skipped, or the first line of the error tilelang.lower raises without it. Nothing is typed in.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.core import knockout_rows, pass_names, statuses
from tilelang_churn.knockout import pass_knockout
from tilelang_churn.tables import knockout_table

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
KNOCKOUT = SCRIPTS / "knockout_batch.py"
GEMM_256 = ["--mode", "instrument", "--shape", "256,256,256", "--block", "64,64,32", "--target", "cuda-sm90"]
# a pass whose knockout changes the source, one that fails lowering, one without effect on the source, one that
# never runs (names only: which is which is read from TileLang, never assumed); "Simplify" names two passes
# (tl.Simplify and tirx.Simplify), and the last two are anonymous pass_fn passes named by their factories
NAMED = [
    "Simplify",
    "LowerTileOp",
    "PlanAndUpdateBufferAllocationLocation",
    "NoSuchPass",
    "HoistBroadcastValues",
    "FragmentLoopChecker",
]
# each variant the knockout makes of NAMED, and what the test's own instrument skips for it: a full TVM name, a
# short name, or "applied by <factory>": a pass_fn run applied by a Python line that calls that factory
VARIANTS = {
    "tl.Simplify": "tl.Simplify",
    "tirx.Simplify": "tirx.Simplify",
    "LowerTileOp": "LowerTileOp",
    "PlanAndUpdateBufferAllocationLocation": "PlanAndUpdateBufferAllocationLocation",
    "NoSuchPass": "NoSuchPass",
    "HoistBroadcastValues": "applied by HoistBroadcastValues",
    "FragmentLoopChecker": "applied by FragmentLoopChecker",
}

# TileLang lowering the GEMM with one pass skipped, through an instrument of the test's own
REFERENCE = textwrap.dedent(
    """
    import hashlib, json, linecache, os, sys
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    sys.path.insert(0, sys.argv[1])
    import tilelang
    from tilelang import tvm
    from tilelang_churn.trace import trace_cli, tilelang_trace

    @tvm.ir.instrument.pass_instrument
    class Skip:
        def __init__(self, skipped):
            self.skipped = skipped
            self.count = 0

        def should_run(self, mod, info):
            name = str(info.name)
            if self.skipped.startswith("applied by "):
                # the Python line that applied the pass: the first frame outside TVM's Pass.__call__
                frame = sys._getframe(1)
                while frame is not None and frame.f_code.co_filename.endswith(("ir/transform.py", "ir/instrument.py")):
                    frame = frame.f_back
                line = linecache.getline(frame.f_code.co_filename, frame.f_lineno) if frame is not None else ""
                hit = name == "pass_fn" and self.skipped.split()[-1] + "(" in line
            else:
                hit = name == self.skipped if "." in self.skipped else name.rsplit(".", 1)[-1] == self.skipped
            if hit:
                self.count += 1
                return False
            return True

    spec = trace_cli.parse_args(json.loads(sys.argv[2])).spec
    results = {}
    for name in json.loads(sys.argv[3]):
        skip = Skip(name)
        target = tvm.target.Target(spec.target)
        try:
            with tvm.transform.PassContext(instruments=[skip]), target:
                source = tilelang.lower(tilelang_trace.build_kernel(spec), target=target).kernel_source
            results[name] = {"sha256": hashlib.sha256(source.encode()).hexdigest(), "skipped": skip.count}
        except Exception as exc:
            line = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
            results[name] = {"error": f"{type(exc).__name__}: {line}", "skipped": skip.count}
    print(json.dumps(results))
    """
)


def run_knockout(tmp_path: Path, jobs: list, *options: str) -> subprocess.CompletedProcess:
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    return subprocess.run(
        [sys.executable, str(KNOCKOUT), "--jobs", str(jobs_file), "--workers", "2", *options],
        capture_output=True,
        text=True,
        timeout=600,
    )


def reference(args: list, names: list) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(SCRIPTS), json.dumps(args), json.dumps(["__none__", *names])],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def rows_by_variant(folder: Path) -> dict:
    rows = knockout_table.read_configuration(folder / "knockout.json")
    return {row["variant"]: row for row in rows}


# ------------------------------------------------------------------------------------------------ planning


def _runs(*identities_and_statuses):
    return [
        {
            "step": i,
            "pass": "pass_fn" if pass_names.is_factory(pass_id) else pass_id.rsplit(".")[-1],
            "pass_id": pass_id,
            "status": status,
        }
        for i, (pass_id, status) in enumerate(identities_and_statuses)
    ]


RUNS = _runs(
    ("tl.Simplify", statuses.STATUS_NOOP),
    ("tl.LowerTileOp", statuses.STATUS_CHANGED),
    ("tl.Simplify", statuses.STATUS_CHANGED),
    ("tir.AnnotateEntryFunc", statuses.STATUS_NOOP),
    ("tl.Simplify", statuses.STATUS_CHANGED),
)


def test_changed_passes_are_the_names_with_a_run_that_changed_the_ir_in_pipeline_order():
    planned = pass_knockout.plan_variants(RUNS, "changed", "all")
    assert [(v.name, v.pipeline_step, v.baseline_runs) for v in planned] == [("Simplify", 0, 3), ("LowerTileOp", 1, 1)]
    assert [v.name for v in pass_knockout.plan_variants(RUNS, "all", "all")] == [
        "Simplify",
        "LowerTileOp",
        "AnnotateEntryFunc",
    ]


def test_each_occurrence_of_a_changed_pass_is_a_variant_numbered_among_all_its_runs():
    planned = pass_knockout.plan_variants(RUNS, "changed", "each")
    assert [(v.name, v.occurrence, v.pipeline_step) for v in planned] == [
        ("LowerTileOp#1", 1, 1),
        ("Simplify#2", 2, 2),
        ("Simplify#3", 3, 4),
    ]
    assert [v.name for v in pass_knockout.plan_variants(RUNS, "all", "each")] == [
        "Simplify#1",
        "LowerTileOp#1",
        "Simplify#2",
        "AnnotateEntryFunc#1",
        "Simplify#3",
    ]
    assert [v.name for v in pass_knockout.plan_variants(RUNS, "all", "first")] == [
        "Simplify#1",
        "LowerTileOp#1",
        "AnnotateEntryFunc#1",
    ]


def test_named_passes_keep_their_order_after_those_that_run_and_a_short_name_or_full_name_is_one_pass():
    planned = pass_knockout.plan_variants(RUNS, ["NoSuchPass", "tl.LowerTileOp", "LowerTileOp"], "all")
    assert [(v.name, v.knocked_pass_id, v.pipeline_step, v.baseline_runs) for v in planned] == [
        ("LowerTileOp", "tl.LowerTileOp", 1, 1),
        ("NoSuchPass", "NoSuchPass", None, 0),
    ]


# two passes with one short name, and two anonymous passes (pass_fn) told apart by their factories
TWINS = _runs(
    ("tilelang.analysis.FragmentLoopChecker", statuses.STATUS_NOOP),
    ("tl.Simplify", statuses.STATUS_CHANGED),
    ("tirx.Simplify", statuses.STATUS_CHANGED),
    ("tl.Simplify", statuses.STATUS_NOOP),
    ("tilelang.transform.HoistBroadcastValues", statuses.STATUS_CHANGED),
)


def test_passes_sharing_a_short_name_are_one_variant_each_named_in_full():
    planned = pass_knockout.plan_variants(TWINS, "changed", "all")
    assert [(v.name, v.knocked_pass, v.baseline_runs) for v in planned] == [
        ("tl.Simplify", "Simplify", 2),
        ("tirx.Simplify", "Simplify", 1),
        ("HoistBroadcastValues", "pass_fn", 1),
    ]
    # a short name several passes share is one variant per pass; the run record's pass_fn is every anonymous one
    named = pass_knockout.plan_variants(TWINS, ["Simplify", "pass_fn", "tir.Simplify"], "all")
    assert [v.knocked_pass_id for v in named] == [
        "tilelang.analysis.FragmentLoopChecker",
        "tl.Simplify",
        "tirx.Simplify",  # tir.Simplify is its name in releases before TVM's namespace became tirx
        "tilelang.transform.HoistBroadcastValues",
    ]


def test_the_knockout_skips_only_the_runs_of_the_pass_it_names():
    class Info:
        def __init__(self, name):
            self.name = name

        def __chandle__(self):
            return id(self)

    every = pass_knockout.Knockout("tl.Simplify", None)
    third = pass_knockout.Knockout("tl.Simplify", 3)
    old_table = pass_knockout.Knockout("Simplify", None)  # a row written before identities: every Simplify
    names = ["tirx.Simplify", "tl.Simplify", "tl.LowerTileOp", "tl.Simplify", "tl.Simplify"]
    assert [every.should_run(Info(n)) for n in names] == [True, False, True, False, False]
    assert [third.should_run(Info(n)) for n in names] == [True, True, True, True, False]
    assert [old_table.should_run(Info(n)) for n in names] == [False, False, True, False, False]
    assert (every.skipped_runs, third.skipped_runs, third.runs_asked) == (3, 1, 3)


def test_a_knockout_table_cut_short_or_changed_since_its_job_is_refused(tmp_path):
    row = {column: None for column in knockout_rows.COLUMNS} | {
        "variant": "baseline",
        "status": statuses.STATUS_LOWERED,
    }
    table = tmp_path / "knockout.csv"
    knockout_rows.write_rows(table, [row, {**row, "variant": "Simplify"}])
    written = knockout_rows.fingerprint(table)
    assert [r["variant"] for r in knockout_rows.read_rows(table, written)] == ["baseline", "Simplify"]
    text = table.read_text()
    table.write_text(text[: text.rindex("Simplify") + 4])
    with pytest.raises(knockout_rows.TableError, match="no final newline"):
        knockout_rows.read_rows(table, written)
    table.write_text(text[: text.rindex("Simplify")])  # cut exactly after a row: only the fingerprint tells
    with pytest.raises(knockout_rows.TableError, match="1 rows where its job wrote 2"):
        knockout_rows.read_rows(table, written)
    table.write_text(text.replace("Simplify", "Simplifx"))
    with pytest.raises(knockout_rows.TableError, match="changed after the job"):
        knockout_rows.read_rows(table, written)
    table.write_text(text.replace(statuses.STATUS_LOWERED, "fine", 1))
    with pytest.raises(knockout_rows.TableError, match="unknown status 'fine'"):
        knockout_rows.read_rows(table)


# ---------------------------------------------------------------------------------------- real TileLang


@pytest.fixture(scope="module")
def gemm_knockout(tmp_path_factory):
    require_tilelang()
    tmp = tmp_path_factory.mktemp("knockout")
    out = tmp / "gemm"
    done = run_knockout(
        tmp, [{"args": [*GEMM_256, "--out", str(out)], "log": str(tmp / "gemm.log")}], "--passes", ",".join(NAMED)
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return out, reference(GEMM_256, list(VARIANTS.values()))


@pytest.mark.integration
def test_each_knockout_is_what_tilelang_gives_with_that_pass_skipped(gemm_knockout):
    out, by_skip = gemm_knockout
    expected = {"__none__": by_skip["__none__"], **{variant: by_skip[skip] for variant, skip in VARIANTS.items()}}
    rows = rows_by_variant(out)
    assert set(rows) == {"baseline", *VARIANTS} and list(rows)[0] == "baseline"
    assert {rows[v]["knocked_pass_id"] for v in ("HoistBroadcastValues", "FragmentLoopChecker")} == {
        "tilelang.transform.HoistBroadcastValues",
        "tilelang.analysis.FragmentLoopChecker",
    }
    assert {rows[v]["knocked_pass"] for v in ("HoistBroadcastValues", "FragmentLoopChecker")} == {"pass_fn"}
    steps = [row["pipeline_step"] for row in list(rows.values())[1:]]
    assert steps == sorted(steps, key=lambda step: (step is None, step or 0))  # pipeline order, a pass not run last
    assert rows["baseline"]["source_sha256"] == expected["__none__"]["sha256"]
    kinds = set()
    for name in VARIANTS:
        row, want = rows[name], expected[name]
        assert row["skipped_runs"] == want["skipped"], name
        if "error" in want:
            assert (row["status"], row["error"]) == (statuses.STATUS_LOWER_FAILED, want["error"]), name
            assert row["source_sha256"] == "" and row["source_equal"] is None  # no source to hash
            kinds.add("fails")
        else:
            assert row["status"] == statuses.STATUS_LOWERED, name
            # the variant's own source, not the baseline's served from a cache: its hash is TileLang's for it
            assert row["source_sha256"] == want["sha256"], name
            assert row["source_equal"] == (want["sha256"] == expected["__none__"]["sha256"]), name
            kinds.add("same" if row["source_equal"] else "differs")
        if not want["skipped"]:
            kinds.add("no effect")
            assert "did not take effect" in row["note"]
    # the four kinds this test exists for, as TileLang decided them
    assert kinds == {"fails", "same", "differs", "no effect"}, kinds


@pytest.mark.integration
def test_a_source_that_differs_is_counted_against_the_baseline_and_kept_for_the_diff(gemm_knockout):
    from tilelang_churn.core.line_churn import sequence_matcher_counts

    out, _ = gemm_knockout
    rows = rows_by_variant(out)
    sources = knockout_rows.read_sources(out / knockout_rows.SOURCES)
    differs = [row for row in rows.values() if row["source_equal"] is False]
    assert differs
    for row in differs:
        counts = sequence_matcher_counts(sources["baseline"], sources[row["variant"]])
        assert (row["source_added"], row["source_deleted"]) == counts != (0, 0)
        assert row["source_lines"] == len(sources[row["variant"]].splitlines())
    assert rows["baseline"]["churn_total"] == rows["baseline"]["baseline_churn_total"] > 0
    record = json.loads((out / "knockout.json").read_text())
    assert record["settings"]["passes"] == NAMED and record["process"]["workers"] == 2
    assert not (out / ".variants").exists()  # the children's results are gone once the rows are written


# a kernel that lowers once (the baseline) and then ends its process: abort, or sleep past the time limit
CRASHING_KERNEL = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    import tilelang.language as T

    def build(N=1024, after_baseline="abort"):
        calls = Path(__file__).with_suffix(f".{after_baseline}.calls")
        seen = int(calls.read_text() or 1) if calls.exists() else 0
        # the variants lower in children side by side: a count written in place could be read half written
        written = calls.with_suffix(f".{os.getpid()}.tmp")
        written.write_text(str(seen + 1))
        os.replace(written, calls)
        if seen and after_baseline == "abort":
            os.abort()
        if seen and after_baseline == "sleep":
            time.sleep(60)
        if after_baseline == "hang":  # the baseline itself
            time.sleep(60)

        @T.prim_func
        def copy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(N // 128, threads=128) as bx:
                for i in T.Parallel(128):
                    B[bx * 128 + i] = A[bx * 128 + i] + 1.0

        return copy
    """
)


@pytest.mark.slow  # a batch whose lowerings wait for their time limit
def test_a_variant_that_aborts_or_hangs_is_its_row_and_the_batch_goes_on(tmp_path):
    require_tilelang()
    kernel = tmp_path / "crashing.py"
    kernel.write_text(CRASHING_KERNEL)
    jobs = []
    for mode in ("abort", "sleep"):
        args = ["--mode", "instrument", "--kernel-file", str(kernel), "--params", json.dumps({"after_baseline": mode})]
        jobs.append(
            {
                "args": [*args, "--target", "cuda-sm90", "--out", str(tmp_path / mode)],
                "log": str(tmp_path / f"{mode}.log"),
            }
        )
    done = run_knockout(tmp_path, jobs, "--passes", "tl.Simplify,LowerTileOp", "--timeout", "5")
    assert done.returncode == 0, done.stderr + done.stdout
    for mode, status in (("abort", statuses.STATUS_CRASHED), ("sleep", statuses.STATUS_TIMEOUT)):
        rows = rows_by_variant(tmp_path / mode)
        assert rows["baseline"]["status"] == statuses.STATUS_LOWERED
        for name in ("tl.Simplify", "LowerTileOp"):
            assert rows[name]["status"] == status, (mode, rows[name])
        assert "SIGABRT" in rows["tl.Simplify"]["error"] if mode == "abort" else "5 s" in rows["tl.Simplify"]["error"]
    summary = knockout_table.summarize(
        knockout_table.gather([tmp_path / m / "knockout.json" for m in ("abort", "sleep")])
    )
    assert [len(s["unfinished"]) for s in summary] == [2, 2]


@pytest.mark.integration
def test_a_configuration_whose_baseline_timed_out_has_a_page_that_says_so(tmp_path):
    """Round four: the page of a configuration whose baseline timed out had empty facts ("— source lines, IR churn
    —") and a heading over no diffs. It says the baseline's status and error, and that no pass was knocked out."""
    from tilelang_churn.figures import knockout_pages

    require_tilelang()
    kernel = tmp_path / "crashing.py"
    kernel.write_text(CRASHING_KERNEL)
    args = ["--mode", "instrument", "--kernel-file", str(kernel), "--params", json.dumps({"after_baseline": "hang"})]
    out = tmp_path / "runs" / "hang"
    job = {"args": [*args, "--target", "cuda-sm90", "--out", str(out)], "log": str(tmp_path / "hang.log")}
    done = run_knockout(tmp_path, [job], "--passes", "changed", "--timeout", "3")
    assert done.returncode == 0, done.stderr + done.stdout
    (baseline,) = rows_by_variant(out).values()
    assert baseline["status"] == statuses.STATUS_TIMEOUT
    written = knockout_pages.write_pages([out / "knockout.json"], tmp_path / "runs", tmp_path / "pages")
    page = written[1].read_text()
    assert f'<b>baseline</b> <span class="bad">timeout</span>: {baseline["error"]}' in page
    assert "so no pass was knocked out" in page
    assert "Generated source against the baseline" not in page and "source lines" not in page


@pytest.mark.integration
def test_a_lowering_stopped_from_outside_fails_the_batch_so_that_a_rerun_retries_it(tmp_path):
    """Round four: a knockout child killed from outside stayed `crashed` for that pass for good ("Nothing to be
    done"). A lowering ended by SIGTERM (any signal but a crash's, which the batch never sends) is written as
    its row, and the batch then fails naming it, so that Snakemake removes the tables and a rerun lowers again."""
    import os
    import signal
    import time

    from tilelang_churn.trace import trace_cli

    require_tilelang()
    kernel = tmp_path / "crashing.py"
    kernel.write_text(CRASHING_KERNEL)
    args = ["--mode", "instrument", "--kernel-file", str(kernel), "--params", json.dumps({"after_baseline": "sleep"})]
    out = tmp_path / "sleep"
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps([{"args": [*args, "--target", "cuda-sm90", "--out", str(out)], "log": "x.log"}]))
    # tl.Simplify alone: Simplify would also knock out tirx.Simplify, whose build sleeps on to the timeout
    command = [sys.executable, str(KNOCKOUT), "--jobs", str(jobs_file), "--workers", "1", "--passes", "tl.Simplify"]
    command += ["--timeout", "30"]
    batch = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children = Path(f"/proc/{batch.pid}/task/{batch.pid}/children")
    calls = kernel.with_suffix(".sleep.calls")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (calls.exists() and calls.read_text() == "2"):
        time.sleep(0.1)  # the baseline lowered; the variant's build is sleeping
    (child,) = [int(pid) for pid in children.read_text().split()]
    os.kill(child, signal.SIGTERM)
    _, stderr = batch.communicate(timeout=120)
    assert batch.returncode == trace_cli.EXIT_NOT_RECORDED
    assert "1 lowering(s) were stopped from outside this batch (tl.Simplify of " in stderr.decode()
    assert "(SIGTERM)): their crashed rows are no finding" in stderr.decode()
    rows = rows_by_variant(out)
    assert rows["tl.Simplify"]["status"] == statuses.STATUS_CRASHED and "SIGTERM" in rows["tl.Simplify"]["error"]


@pytest.mark.integration
def test_a_broken_environment_is_no_result(tmp_path):
    require_tilelang()
    out = tmp_path / "gemm"
    args = [*GEMM_256, "--expect-release", "0.0.1", "--out", str(out)]
    done = run_knockout(tmp_path, [{"args": args, "log": str(tmp_path / "gemm.log")}])
    assert done.returncode == 3
    assert "not release 0.0.1" in done.stderr
    assert not (out / "knockout.csv").exists()


@pytest.mark.integration
def test_the_gathered_table_has_every_configuration_and_its_header(gemm_knockout, tmp_path):
    """NoSuchPass ran in no baseline of this one-configuration grid: the gathering refuses it by name; the same
    records without it (as a config without the name records them) gather."""
    import shutil

    out, _ = gemm_knockout
    table = tmp_path / "knockout.csv"

    def gather(folder: Path):
        command = [
            sys.executable,
            str(SCRIPTS / "knockout_table.py"),
            "--out",
            str(table),
            str(folder / "knockout.json"),
        ]
        return subprocess.run(command, capture_output=True, text=True)

    refused = gather(out)
    assert refused.returncode == 1 and "'NoSuchPass' ran in no baseline lowering" in refused.stderr, refused.stderr
    assert not table.exists()
    named = tmp_path / "named"
    shutil.copytree(out, named)
    record = json.loads((named / "knockout.json").read_text())
    record["settings"]["passes"] = [name for name in NAMED if name != "NoSuchPass"]
    (named / "knockout.json").write_text(json.dumps(record))
    done = gather(named)
    assert done.returncode == 0, done.stderr
    with open(table, newline="") as handle:
        header = next(csv.reader(handle))
    assert header == knockout_rows.COLUMNS
    assert knockout_rows.read_rows(table) == knockout_table.read_configuration(out / "knockout.json")


def test_config_readme_documents_every_knockout_column_in_order():
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "outputs-knockout.md").read_text()
    section = text[text.index("## knockout.csv") :]
    assert re.findall(r"^\| `([A-Za-z0-9_]+)` \|", section, re.M) == knockout_rows.COLUMNS


def test_the_summary_names_passes_by_their_timed_effect_and_leaves_same_source_variants_out():
    base = dict.fromkeys(knockout_rows.COLUMNS) | {"status": statuses.STATUS_LOWERED, "skipped_runs": 1}

    def row(variant, low, ratio, high, same=False, gpu=statuses.STATUS_OK):
        timed = {"latency_ratio_low": low, "latency_ratio": ratio, "latency_ratio_high": high} if ratio else {}
        return base | {"variant": variant, "gpu_status": gpu, "gpu_source_equal": same, "source_equal": same} | timed

    rows = [
        row("baseline", 0.95, 1.0, 1.05, same=True),
        row("Pays", 1.2, 1.3, 1.4),
        row("Costs", 0.6, 0.63, 0.66),
        # the baseline's very source, outside both ranges (the H100's GQA forward: 0.991, range 0.990-0.997):
        # only the timing drifted, and a variant that moved less is no finding
        row("Noise", 0.980, 0.985, 0.99, same=True),
        row("Drift", 0.987, 0.99, 0.995),
        row("Within", 0.9, 0.99, 1.1),
        row("Wrong", None, None, None, gpu=statuses.STATUS_WRONG),
    ]
    (summary,) = knockout_table.summarize(rows)
    assert summary["timing_drift"] == pytest.approx(0.015)
    assert [r["variant"] for r in summary["slower_without"]] == ["Pays"]
    assert [r["variant"] for r in summary["faster_without"]] == ["Costs"]
    (no_drift,) = knockout_table.summarize([r for r in rows if r["variant"] != "Noise"])
    assert [r["variant"] for r in no_drift["faster_without"]] == ["Costs", "Drift"]
    assert [r["variant"] for r in summary["gpu_failed"]] == ["Wrong"]
