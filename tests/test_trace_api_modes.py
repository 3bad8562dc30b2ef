"""trace-api / pass-diff: passes.csv holds exactly what lower_trace() / pass_diff() return.

The test builds the shipped GEMM and the book's pass list itself, calls TileLang's tools in-process, and
compares row by row with the script's CSV (which ran in its own process).
"""

from __future__ import annotations

import contextlib
import io

import pytest
from conftest import require_tilelang, run_batch
from tilelang_churn.core import passes_table, trace_modes
from tilelang_churn.kernel import kernels
from tilelang_churn.kernel.kernels import BOOK_KERNEL as GEMM
from tilelang_churn.trace import trace_cli

tilelang = require_tilelang()
from tilelang import tvm  # noqa: E402
from tilelang.tools.lower_trace import lower_trace  # noqa: E402
from tilelang.utils.pass_diff import pass_diff  # noqa: E402

SHAPES = {"1024x1024x1024": (1024, 1024, 1024), "1000x1000x1000": (1000, 1000, 1000)}
TARGETS = {name: trace_cli.TARGETS[name] for name in ("cuda-sm80", "cuda-sm90", "hip")}
TOOLS = {"trace-api": lower_trace, "pass-diff": pass_diff}


def standard_gemm(M, N, K):
    """The GEMM the jobs trace (workflow/kernels/gemm.py) at its default tile, pipeline and types."""
    return kernels.build(kernels.shipped(GEMM), kernels.DEFAULT_FUNCTION, dict(M=M, N=N, K=K))


def default_passes(target):
    transform = tilelang.transform
    return [
        ("BindTarget", tvm.tirx.transform.BindTarget(target)),
        ("MaterializeKernelLaunch", transform.MaterializeKernelLaunch(lower_thread_binding=True, default_threads=128)),
        ("Simplify", transform.Simplify()),
        ("PipelinePlanning", transform.PipelinePlanning()),
        ("InjectSoftwarePipeline", transform.InjectSoftwarePipeline()),
        ("LayoutInference", transform.LayoutInference()),
        ("LowerTileOp", transform.LowerTileOp()),
        ("Simplify", transform.Simplify()),
    ]


def tool_rows(tool, func, passes, target):
    with target, contextlib.redirect_stdout(io.StringIO()):
        results = tool(func, passes)
    return [(i, r["name"], r["changed"], r["insertions"], r["deletions"]) for i, r in enumerate(results)]


def csv_rows(out):
    return [
        (r["step"], r["pass"], r["changed"], r["added"], r["deleted"])
        for r in passes_table.read_rows(out / "passes.csv")
    ]


def job_args(mode: str, target_name: str, shape: str) -> tuple[str, ...]:
    return ("--mode", mode, "--target", target_name, "--shape", ",".join(map(str, SHAPES[shape])))


# every target and every shape, each shape on the target of the book (the pipelines differ by target, the IR by shape)
CASES = [("cuda-sm90", "1024x1024x1024"), ("cuda-sm90", "1000x1000x1000"), ("cuda-sm80", "1024x1024x1024")]
CASES += [("hip", "1000x1000x1000")]


@pytest.fixture(scope="session")
def api_runs(tmp_path_factory):
    """Every mode x case of this module in one trace batch, as the workflow runs its jobs."""
    jobs = [job_args(mode, target, shape) for mode in TOOLS for target, shape in CASES]
    return run_batch(tmp_path_factory.mktemp("api_runs"), jobs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", TOOLS)
@pytest.mark.parametrize(("target_name", "shape"), CASES)
def test_csv_equals_what_the_tool_returns(api_runs, mode, target_name, shape):
    M, N, K = SHAPES[shape]
    proc, out = api_runs[job_args(mode, target_name, shape)]
    assert proc.returncode == 0, proc.stderr

    target = tvm.target.Target(TARGETS[target_name])
    expected = tool_rows(TOOLS[mode], standard_gemm(M, N, K), default_passes(target), target)
    assert csv_rows(out) == expected
    assert any(changed for _, _, changed, _, _ in expected)  # the comparison covers real churn

    rows = passes_table.read_rows(out / "passes.csv")
    assert {r["source"] for r in rows} == {trace_modes.source_of(mode)}
    assert {r["phase"] for r in rows} == {trace_modes.source_of(mode)}
    assert {r["status"] for r in rows} <= {"changed", "noop"}
    assert {(r["target_name"], r["M"], r["N"], r["K"], r["mode"], r["tilelang_version"]) for r in rows} == {
        (target_name, M, N, K, mode, tilelang.__version__)
    }
    # stdout: one line per step in the book's format, then the note (the job's log also holds TileLang's
    # warnings on stderr, such as "Unable to detect ROCm version")
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("pass=", "note:"))]
    assert lines[: len(expected)] == [f"pass={n} changed={c} +{a} -{d}" for _, n, c, a, d in expected]
    assert lines[len(expected)].startswith("note:")


@pytest.mark.slow
def test_the_two_tools_count_differently_and_the_source_column_says_which(api_runs):
    """Same kernel, same passes: lower_trace and pass_diff disagree on some counts (different diff code)."""
    _, api_out = api_runs[job_args("trace-api", "cuda-sm90", "1024x1024x1024")]
    _, diff_out = api_runs[job_args("pass-diff", "cuda-sm90", "1024x1024x1024")]
    api, diff = csv_rows(api_out), csv_rows(diff_out)
    assert [r[:3] for r in api] == [r[:3] for r in diff]
    assert [r[3:] for r in api] != [r[3:] for r in diff]


@pytest.mark.integration
@pytest.mark.parametrize("mode", TOOLS)
def test_a_failing_pass_is_a_row_and_the_steps_before_it_are_kept(trace_runs, mode):
    proc, out = trace_runs.get("--mode", mode, "--target", "llvm")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "LayoutInference" in proc.stderr

    target = tvm.target.Target({"kind": "llvm"})
    func = standard_gemm(1024, 1024, 1024)
    passes = default_passes(target)
    failing = [name for name, _ in passes].index("LayoutInference")
    rows = passes_table.read_rows(out / "passes.csv")
    assert len(rows) == failing + 1
    # steps before the failure: what the tool itself returns for that prefix (llvm binds no threads)
    passes[1] = (
        "MaterializeKernelLaunch",
        tilelang.transform.MaterializeKernelLaunch(lower_thread_binding=False, default_threads=128),
    )
    assert csv_rows(out)[:failing] == tool_rows(TOOLS[mode], func, passes[:failing], target)
    failed = rows[failing]
    assert (failed["pass"], failed["status"], failed["changed"], failed["added"]) == (
        "LayoutInference",
        "failed",
        None,
        None,
    )
    with target, pytest.raises(Exception) as raised, contextlib.redirect_stdout(io.StringIO()):
        TOOLS[mode](func, passes)
    assert str(raised.value).splitlines()[0].split(": ", 1)[-1][:60] in failed["error"]
    assert trace_runs.run_info(out)["failure"]["pass"] == "LayoutInference"
