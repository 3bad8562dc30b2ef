"""Unit tests of scripts/plot_churn.py (bars, heatmap, CLI)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib as mpl
import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from conftest import entry, job_provenance, other_kernel, write_passes
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex
from matplotlib.text import Text
from tilelang_churn.figures import plot_churn
from tilelang_churn.tables import frames

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "plot_churn.py"

NAMES = [
    "BindTarget",
    "Simplify",
    "LayoutReducer",
    "Simplify",
    "LetInline",
    "InjectAssumes",
    "Simplify",
    "FrontendLegalize",
    "Simplify",
    "LegalizeNegativeIndex",
    "Simplify",
    "AddWrapperForSingleBufStore",
    "Simplify",
    "LayoutInference",
    "LowerTileOp",
    "Simplify",
    "InjectSoftwarePipeline",
]


def job_rows(n_steps=86, fail_at=None, codegen=True, target_name="cuda-sm90", mode="trace-env", **kernel):
    """n_steps rows: a mix of changed/noop, a codegen row last, or a failed row at fail_at and nothing after."""
    JOB = job_provenance(target_name, mode, **kernel)
    rows = []
    last = n_steps - 1 if codegen else n_steps
    for step in range(1, last + 1):
        name = NAMES[(step - 1) % len(NAMES)]
        base = dict(JOB, step=step, phase="pipeline_cuda", depth=1, seconds=0.001 * step, error="", **{"pass": name})
        base.update(added_stripped=None, deleted_stripped=None)  # hand-made rows: no IR text to count from
        if step == fail_at:
            rows.append(
                dict(
                    base,
                    status="failed",
                    changed=None,
                    added=None,
                    deleted=None,
                    error="InternalError: LayoutInference cannot infer the layout of C_local " * 3,
                )
            )
            return rows
        if step % 3 == 0:
            rows.append(dict(base, status="noop", changed=False, added=0, deleted=0))
        else:
            rows.append(dict(base, status="changed", changed=True, added=(step * 7) % 23 + 1, deleted=(step * 5) % 11))
    if codegen:
        rows.append(
            dict(
                JOB,
                step=n_steps,
                phase="codegen",
                depth=0,
                seconds=None,
                added_stripped=None,
                deleted_stripped=None,
                error="",
                status="codegen",
                changed=True,
                added=5000,
                deleted=3000,
                **{"pass": "codegen"},
            )
        )
    return rows


write = write_passes


def image(path):
    img = mpimg.imread(path)
    assert img.ndim == 3
    assert float(np.var(img[..., :3])) > 0, f"{path} is blank"
    return img


def test_bars_realistic_job(tmp_path):
    rows = job_rows(86)
    out = tmp_path / "fig" / "bars.png"
    plot_churn.plot_job_bars(rows, out)
    img = image(out)
    # width grows with the step count: max(8, 0.22 * 86) inches at DPI
    assert img.shape[1] == pytest.approx(0.22 * 86 * plot_churn.DPI, abs=2)
    assert 500 <= img.shape[0] <= 900
    assert not list(out.parent.glob("*.tmp"))


def test_bars_small_job_from_dataframe(tmp_path):
    path = write(tmp_path, "api", job_rows(8, mode="trace-api"))
    out = tmp_path / "api.png"
    plot_churn.plot_job_bars(frames.read_frame(path), out)
    img = image(out)
    assert img.shape[1] == 8 * plot_churn.DPI  # minimum width


def test_bars_failed_job_and_lone_failure(tmp_path):
    out = tmp_path / "llvm.png"
    plot_churn.plot_job_bars(job_rows(86, fail_at=14, target_name="llvm"), out)
    image(out)
    lone = tmp_path / "lone.png"  # a job whose first pass failed: one row, no churn at all
    plot_churn.plot_job_bars(job_rows(86, fail_at=1), lone)
    image(lone)


def test_bars_label_every_step_in_order_styled_by_status_with_a_bar_per_nonzero_count(tmp_path, monkeypatch):
    drawn = []
    save = plot_churn._save
    monkeypatch.setattr(plot_churn, "_save", lambda fig, paths, **kw: (drawn.append(fig), save(fig, paths, **kw)))
    rows = job_rows(20, fail_at=17)
    plot_churn.plot_job_bars(rows, tmp_path / "bars.png")
    (ax,) = drawn[0].axes
    labels = [text for text in ax.texts if text.get_rotation() == 90 and text.get_text()[:1].isdigit()]
    assert [text.get_text() for text in labels] == [f"{row['step']} {row['pass']}" for row in rows]
    for text, row in zip(labels, rows):
        assert (text.get_color(), text.get_fontweight()) == {
            "noop": (plot_churn.NOOP_COLOR, "normal"),
            "failed": (plot_churn.FAILED_COLOR, "bold"),
        }.get(row["status"], (mpl.rcParams["text.color"], "normal")), row

    # a bar per nonzero count, at its step's position, as tall as the count: added up, deleted down
    def centre_and_height(path):
        x, y = path.vertices[:, 0], path.vertices[:, 1]
        return float(x.min() + x.max()) / 2, float(y[np.abs(y).argmax()])

    bars = {
        to_hex(collection.get_facecolor()[0]): sorted(map(centre_and_height, collection.get_paths()))
        for collection in ax.collections
        if isinstance(collection, PolyCollection)
    }
    changed = [(x, row) for x, row in enumerate(rows) if row["status"] == "changed"]
    assert bars == {
        to_hex(plot_churn.ADDED_COLOR): [(x, row["added"]) for x, row in changed if row["added"]],
        to_hex(plot_churn.DELETED_COLOR): [(x, -row["deleted"]) for x, row in changed if row["deleted"]],
    }
    assert [label.get_text() for label in ax.get_legend().get_texts()] == [
        "+added lines", "-deleted lines", "no-op pass (0 lines)", "failed pass"
    ]  # fmt: skip


def test_bars_symlog_for_wide_spread(tmp_path, monkeypatch):
    drawn = []
    save = plot_churn._save
    monkeypatch.setattr(plot_churn, "_save", lambda fig, paths, **kw: (drawn.append(fig), save(fig, paths, **kw)))
    plot_churn.plot_job_bars(job_rows(20), tmp_path / "narrow.png")  # bars of 1 to 23 lines
    rows = job_rows(20)
    rows[4].update(added=5000, deleted=0)  # 5000 / 1 > SYMLOG_SPREAD
    out = tmp_path / "wide.png"
    plot_churn.plot_job_bars(rows, out)
    image(out)
    (narrow,), (wide,) = drawn[0].axes, drawn[1].axes
    assert (narrow.get_yscale(), wide.get_yscale()) == ("linear", "symlog")
    assert wide.get_ylabel() == "lines (symlog scale)" and narrow.get_ylabel() == "lines"
    assert wide.get_ylim()[1] >= 5000  # the tall bar is inside the axes


def test_bars_reject_two_jobs(tmp_path):
    with pytest.raises(ValueError, match="one job"):
        plot_churn.plot_job_bars(job_rows(10) + job_rows(10, M=64), tmp_path / "x.png")


def test_configuration_matrix():
    rows = job_rows(20) + job_rows(30, target_name="hip-gfx942") + job_rows(30, fail_at=14, target_name="llvm")
    rows += job_rows(8, mode="trace-api")  # other mode: left out
    values, failed, row_labels, col_labels = plot_churn.configuration_matrix(pd.DataFrame(rows))
    assert [c.split("\n")[0] for c in col_labels] == ["cuda-sm90", "hip-gfx942", "llvm"]
    assert "1024x1024x512" in col_labels[0]
    assert values.shape == (29, 3)  # 29 non-codegen steps of the longest job; codegen excluded
    assert "codegen" not in " ".join(row_labels)
    assert row_labels[:3] == ["BindTarget #1", "Simplify #1", "LayoutReducer #1"]
    assert "LayoutInference" in row_labels  # runs once per job: no occurrence number
    by_label = dict(zip(row_labels, range(len(row_labels))))
    r = by_label["Simplify #1"]  # step 2: changed, (14 % 23 + 1) + (10 % 11)
    assert values[r, 0] == 15 + 10
    assert values[by_label["LayoutReducer #1"], 0] == 0  # step 3: noop
    r = by_label["FrontendLegalize #2"]  # step 25: only in the 30-step jobs
    assert np.isnan(values[r, 0])  # absent from the 20-step job
    assert values[r, 1] == (25 * 7) % 23 + 1 + (25 * 5) % 11 == 19
    assert np.isnan(values[r, 2])  # llvm stopped at step 14: absent
    assert values[by_label["BindTarget #2"], 1] == 0  # step 18: noop
    assert failed[by_label["LayoutInference"], 2] and not failed[:, :2].any()
    assert failed.sum() == 1


def test_heatmap_writes_png_and_svg(tmp_path):
    versions = []
    for shorter, target in enumerate(["cuda-sm80", "cuda-sm90", "hip-gfx942", "llvm"]):
        for steps, shape in zip((86, 80, 70), [(1024, 1024, 512), (4096, 4096, 4096), (128, 256, 64)]):
            fail = 14 if target == "llvm" and steps == 86 else None
            steps -= shorter  # every column different: none merged
            versions += job_rows(steps, fail_at=fail, target_name=target, M=shape[0], N=shape[1], K=shape[2])
    path = write(tmp_path, "all", versions)
    png, svg = tmp_path / "h" / "heat.png", tmp_path / "h" / "heat.svg"
    plot_churn.plot_configuration_heatmap(frames.read_frame(path), [png, svg], "trace-env")
    img = image(png)
    assert img.shape[0] > img.shape[1] > 1000  # tall: ~85 rows, 12 columns
    assert "<svg" in svg.read_text()[:2000]


def test_identical_configurations_share_one_column_named_with_their_count():
    shapes = [(1024, 1024, 512), (4096, 4096, 4096), (128, 256, 64)]
    rows = [row for M, N, K in shapes for row in job_rows(30, M=M, N=N, K=K)] + job_rows(20, target_name="hip")
    values, failed, _, labels = plot_churn.configuration_matrix(pd.DataFrame(rows))
    assert values.shape[1] == 4
    merged, merged_failed, merged_labels, note = plot_churn.merge_configurations(values, failed, labels)
    assert merged.shape[1] == 2
    np.testing.assert_array_equal(merged, values[:, [0, 3]])  # the columns themselves, NaN (absent) included
    assert merged_labels == [labels[0] + "\n+2 alike", labels[3]]
    assert note == "4 configurations in 2 columns: identical ones merged"
    assert plot_churn.merge_configurations(values[:, [0, 3]], failed[:, [0, 3]], merged_labels)[3] == ""


def test_beyond_the_column_limit_the_least_common_become_one_column_of_their_maximum():
    rows = [row for n in range(20, 26) for row in job_rows(n, M=64 * n)]  # 6 different columns
    rows += job_rows(22, M=9999)  # the same as the M=64*22 job
    values, failed, _, labels = plot_churn.configuration_matrix(pd.DataFrame(rows))
    merged, _, merged_labels, note = plot_churn.merge_configurations(values, failed, labels, max_columns=3)
    # kept: the pattern of 2 configurations (M=1408 and M=9999), then the first other in grid order (M=1280)
    assert [label.split("\n")[1] for label in merged_labels[:2]] == ["1280x1024x512", "1408x1024x512"]
    assert merged_labels[1].endswith("+1 alike") and merged_labels[2] == "4 others:\nmax per pass"
    np.testing.assert_array_equal(merged[:, 2], np.nanmax(values[:, [1, 3, 4, 5]], axis=1))
    assert note.endswith("the 4 least common in the last column")


def test_heatmap_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="pass-diff"):
        plot_churn.plot_configuration_heatmap(pd.DataFrame(job_rows(10)), [tmp_path / "x.png"], "pass-diff")


def test_cli_bars_and_heatmap(tmp_path):
    a = write(tmp_path, "a", job_rows(40))
    b = write(tmp_path, "b", job_rows(40, fail_at=14, target_name="llvm", tilelang_version="0.1.16"))
    churn = tmp_path / "churn.csv"
    assert entry("churn_table").main(["--out", str(churn), "--summary", str(tmp_path / "s.csv"), str(a), str(b)]) == 0
    bars = [tmp_path / "bars_a.png", tmp_path / "bars_b.png"]
    command = [sys.executable, str(SCRIPT), "bars", "--passes", str(a), str(b), "--workers", "2", "--out"]
    proc = subprocess.run([*command, *map(str, bars)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    for figure in bars:  # one figure per job, each from its own passes.csv
        image(figure)
    assert bars[0].read_bytes() != bars[1].read_bytes()
    proc = subprocess.run([*command, str(bars[0])], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "2 passes.csv file(s) but 1 figure path(s)" in proc.stderr
    heat = [tmp_path / "heat.png", tmp_path / "heat.svg"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "heatmap", "--churn", str(churn), "--out", *map(str, heat)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    image(heat[0])
    assert heat[1].stat().st_size > 0
    # the rule's way: the jobs' passes.csv, in churn.csv's order, draw the same bytes without waiting for it
    from_jobs = [tmp_path / "jobs.png", tmp_path / "jobs.svg"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "heatmap", "--passes", str(a), str(b), "--out", *map(str, from_jobs)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [path.read_bytes() for path in from_jobs] == [path.read_bytes() for path in heat]
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "heatmap",
            "--churn",
            str(churn),
            "--out",
            str(tmp_path / "x.png"),
            "--mode",
            "trace-api",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "trace-api" in proc.stderr


# ------------------------------------------------------------------------------- user text, drawn as written

# a kernel parameter reaches the labels as the user wrote it: TeX-like dollars, a shell variable, Chinese
USER_TEXTS = ("cost$\\frac{$usd", "$HOME/$USER", "\u77e9\u9635\u4e58\u6cd5")
USER_LABEL = 'tagged(tag="cost$\\frac{$usd", dir="$HOME/$USER", name="\u77e9\u9635\u4e58\u6cd5")'
USER_KERNEL = other_kernel("tagged", '{"tag": "x"}', USER_LABEL)


def user_job(n_steps: int) -> list[dict]:
    return [dict(row, **USER_KERNEL) for row in job_rows(n_steps)]


def drawn_strictly(monkeypatch, module, name: str = "_save") -> list:
    """The figures ``module.name`` saves, each drawn first (in the figure's own style context) with a missing
    glyph made an error, then saved as the module saves it."""
    figures = []
    original = getattr(module, name)

    def save(fig, *args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=r"Glyph .* missing from font")
            fig.canvas.draw()  # mathtext would raise here on "cost$\frac{$usd"
        figures.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(module, name, save)
    return figures


def assert_drawn_as_written(fig, texts=USER_TEXTS) -> None:
    """Each text is in a label of the figure, and every label holding one is drawn as plain text."""
    labels = [t for t in fig.findobj(Text) if t.get_text()]
    for wanted in texts:
        holding = [t for t in labels if wanted in t.get_text()]
        assert holding, (wanted, [t.get_text() for t in labels])
        assert not any(t.get_parse_math() for t in holding), wanted


def test_a_kernel_parameter_is_drawn_as_written_in_the_per_job_bars(tmp_path, monkeypatch):
    figures = drawn_strictly(monkeypatch, plot_churn)
    plot_churn.plot_job_bars(user_job(12), tmp_path / "bars.png")
    assert_drawn_as_written(figures[0])
    image(tmp_path / "bars.png")


def test_a_kernel_parameter_is_drawn_as_written_in_the_heatmap(tmp_path, monkeypatch):
    figures = drawn_strictly(monkeypatch, plot_churn)
    rows = user_job(12) + job_rows(14)
    plot_churn.plot_configuration_heatmap(pd.DataFrame(rows), [tmp_path / "heat.png", tmp_path / "heat.svg"])
    assert_drawn_as_written(figures[0])
    image(tmp_path / "heat.png")


def test_a_kernel_parameter_is_drawn_as_written_in_the_release_figures(tmp_path, monkeypatch):
    from test_compare_releases import frame
    from test_compare_releases import job_rows as release_rows
    from test_compare_releases import run as pass_run
    from tilelang_churn.figures import release_figures

    figures = drawn_strictly(monkeypatch, release_figures)
    jobs = [release_rows(v, [pass_run("P0", added=2), pass_run("P1")], **USER_KERNEL) for v in ("0.1.14", "0.1.15")]
    written = release_figures.write_all(frame(*jobs), {}, tmp_path, formats=["png"], with_pages=False)
    assert len(figures) == 2  # release_heatmap, release_trend
    for fig in figures:
        assert_drawn_as_written(fig)
    for path in written["figures"]:
        image(path)


def test_a_long_kernel_label_wraps_so_that_its_column_stays_narrow():
    """A user's kernel label of 100+ characters (TileLang's examples: a long name and many parameters) is the
    column's label in lines of at most LABEL_LINE_CHARS, whole: every column is as wide as its longest line."""
    label = "example_gemm_autotune(" + ", ".join(f"block_{i}={i * 64}" for i in range(12)) + ")"
    rows = [dict(row, **other_kernel("example_gemm_autotune", '{"block_0": 0}', label)) for row in job_rows(12)]
    (column,) = plot_churn.configuration_matrix(pd.DataFrame(rows))[3]
    target, *lines = column.split("\n")
    assert target == "cuda-sm90" and len(lines) > 1
    assert max(len(line) for line in lines) <= plot_churn.LABEL_LINE_CHARS
    assert " ".join(lines) == label


def test_many_configurations_stand_their_labels_upright_so_the_heatmap_fits_a_screen(tmp_path):
    """The default grid's heatmap was 7943 px wide (33 columns under labels written across). Beyond
    MAX_ACROSS_WIDTH_IN of columns the labels stand upright in one line and a column is as wide as a cell's number
    (1421 px for the default grid): 33 configurations of a long kernel label take less than a third of the width
    they took."""
    label = "example_gemm_autotune(" + ", ".join(f"block_{i}={i * 64}" for i in range(6)) + ")"
    rows = []
    for k in range(33):
        params = f'{{"block_0": {k}}}'
        job = [dict(row, **other_kernel("example_gemm_autotune", params, f"{label} #{k}")) for row in job_rows(12)]
        job[0]["added"] = k + 1  # each configuration its own column (identical ones would share one)
        rows += job
    path = tmp_path / "heatmap.png"
    plot_churn.plot_configuration_heatmap(pd.DataFrame(rows), [path])
    width = mpimg.imread(path).shape[1]
    across = plot_churn.LABEL_LINE_CHARS * 0.068 + 0.2  # a column under a label written across, in inches
    assert width / plot_churn.DPI < 33 * across / 3
