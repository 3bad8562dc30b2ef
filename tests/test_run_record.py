"""run_record: counting and reading a TL_LOWER_TRACE run record."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import entry, require_tilelang
from tilelang_churn.trace import run_record


def write_pair(run_dir: Path, phase: str, stem: str, before: str, after: str, after_ext: str = "tir") -> None:
    (run_dir / phase).mkdir(parents=True, exist_ok=True)
    (run_dir / phase / f"{stem}_before.tir").write_text(before)
    (run_dir / phase / f"{stem}_after.{after_ext}").write_text(after)


@pytest.mark.integration
def test_counts_equal_tilelangs_own_counter_on_a_real_run(trace_runs):
    require_tilelang()
    import tilelang.tools.lower_trace.core as core

    proc, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(trace_runs.run_info(out)["run_record"])
    pairs = 0
    for before in sorted(run_dir.glob("*/*_before.tir")):
        after = next(before.parent.glob(before.name.replace("_before.tir", "_after.*")))
        texts = before.read_text(), after.read_text()
        assert run_record.count_line_changes(*texts) == core._count_line_changes(*texts)
        pairs += 1
    assert pairs > 80


def test_replaced_lines_count_on_both_sides():
    assert run_record.count_line_changes("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)
    assert run_record.count_line_changes("same\n", "same\n") == (0, 0)


def test_status_comes_from_the_files(tmp_path):
    write_pair(tmp_path, "pipeline_cuda", "03_BindTarget", "x\n", "x\ny\n")
    write_pair(tmp_path, "pipeline_cuda", "04_Simplify", "x\n", "x\n")
    write_pair(tmp_path, "unscoped", "100_pass_fn", "x\n", "z\n")
    write_pair(tmp_path, "pipeline_cuda", "05_LayoutInference", "x\ny\n", "")
    write_pair(tmp_path, "codegen", "101_codegen", "tir\n", "int main() {}\n", after_ext="cpp")
    (tmp_path / "report.html").write_text("")
    rows = run_record.read_run_record(tmp_path)
    assert [(r["step"], r["phase"], r["pass"], r["status"], r["added"], r["deleted"]) for r in rows] == [
        (3, "pipeline_cuda", "BindTarget", "changed", 1, 0),
        (4, "pipeline_cuda", "Simplify", "noop", 0, 0),
        (5, "pipeline_cuda", "LayoutInference", "failed", None, None),
        (100, "unscoped", "pass_fn", "changed", 1, 1),
        (101, "codegen", "codegen", "codegen", 1, 1),
    ]


def test_a_lone_before_file_is_an_error_naming_it(tmp_path):
    (tmp_path / "pipeline_cuda").mkdir()
    (tmp_path / "pipeline_cuda" / "07_LowerTileOp_before.tir").write_text("x\n")
    with pytest.raises(ValueError, match="step 7 pipeline_cuda/LowerTileOp has only its before file"):
        run_record.read_run_record(tmp_path)


def test_command_line_prints_one_line_per_step(tmp_path, capsys):
    write_pair(tmp_path, "pipeline_hip", "00_BindTarget", "x\n", "x\ny\n")
    assert entry("run_record").main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == ["0", "pipeline_hip/BindTarget", "changed", "+1", "-0"]
