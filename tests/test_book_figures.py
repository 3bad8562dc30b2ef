"""The book's figures: the fixed set, both languages, byte-identical regeneration, the embedded CJK font.

Unit tests draw from hand-made tables (conftest.make_row); the end-to-end test runs `snakemake book_figures`
on a small grid (the session fixture `book_run` of conftest.py, shared with test_reports_in_browser.py).
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest
from conftest import (
    FAILS_AT_SETUP,
    job_provenance,
    make_row,
    trace_batch_counts,
    write_passes,
)
from tilelang_churn.core import pass_configs
from tilelang_churn.core import passes_table as pt
from tilelang_churn.figures import book_figures
from tilelang_churn.figures import figure_style as fs
from tilelang_churn.tables import frames

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "book_figures.py"
FIGURES_WITHOUT_RELEASES = [s for s in book_figures.FIGURES if s != "fig3_releases"]

# (pass, added, deleted) of a small pipeline; a 0/0 pass is a no-op
REFERENCE_PASSES = [
    ("BindTarget", 1, 0),
    ("Simplify", 0, 0),
    ("LayoutInference", 34, 26),
    ("LowerTileOp", 42, 12),
    ("Simplify", 6, 6),
    ("LegalizeSafeMemoryAccess", 0, 0),
    ("InjectSoftwarePipeline", 0, 0),
    ("ProducerConsumerWarpSpecialized", 20, 11),
    ("LowerOpaqueBlock", 63, 78),
    ("MergeIfStmt", 0, 0),
    ("MakePackedAPI", 80, 10),
]


def job(passes, **provenance) -> list[dict]:
    """A job's rows: the passes in order (0/0 a no-op), then a codegen row."""
    prov = job_provenance(**provenance)
    rows = []
    for step, (name, added, deleted) in enumerate(passes):
        status = pt.STATUS_CHANGED if added or deleted else pt.STATUS_NOOP
        rows.append(make_row(step, name, status, added, deleted, job=prov))
    rows.append(make_row(len(passes), "codegen", pt.STATUS_CODEGEN, 98, 77, job=prov, phase="codegen", depth=0))
    return rows


def variant(changes: dict, drop=(), add=()) -> list[tuple]:
    passes = [(n, *changes.get(n, (a, d))) for n, a, d in REFERENCE_PASSES if n not in drop]
    return passes + list(add)


def tables(tmp_path: Path) -> tuple[Path, Path]:
    """churn.csv of a reference (cuda-sm90 1024^3) and three one-change variants, and the reference's passes.csv."""
    shape = dict(M=1024, N=1024, K=1024)
    reference = job(REFERENCE_PASSES, **shape)
    rows = list(reference)
    rows += job(variant({"LegalizeSafeMemoryAccess": (3, 0), "MergeIfStmt": (1, 0)}), M=1000, N=1000, K=1000)
    rows += job(variant({"InjectSoftwarePipeline": (60, 37)}, drop=["ProducerConsumerWarpSpecialized"]), **shape,
                target_name="cuda-sm80")  # fmt: skip
    rows += job(variant({"LowerOpaqueBlock": (50, 60)}, drop=["ProducerConsumerWarpSpecialized"]), **shape, stages=0)
    churn = tmp_path / "tables" / "churn.csv"
    pt.write_rows(churn, rows)
    ref = tmp_path / "tables" / "reference" / "passes.csv"
    pt.write_rows(ref, reference)
    return churn, ref


def run_cli(*args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def expected_files(stems) -> set[str]:
    return {f"{stem}.{ext}" for stem in stems for ext in book_figures.FORMATS} | {book_figures.MANIFEST}


# ------------------------------------------------------------------------------------------------ set-up


def test_the_rule_names_the_scripts_figures():
    rule = (REPO / "workflow" / "rules" / "book_common.smk").read_text()
    stems = re.search(r"^BOOK_FIGURES = \(([^)]*)\)", rule, re.M).group(1)
    assert tuple(re.findall(r'"([^"]+)"', stems)) == book_figures.FIGURES


def test_every_label_exists_in_both_languages():
    for language in fs.LANGUAGES:
        assert book_figures.TEXT[language].keys() == book_figures.TEXT["en"].keys(), language
        assert book_figures.TEXT[language]["axes"].keys() == book_figures.AXES.keys(), language


def test_the_cjk_font_is_the_file_of_the_pinned_package():
    path = fs.cjk_font_path()
    assert path.name == "NotoSansCJKsc-Regular.otf" and path.parent.parent.name == "mplfonts"
    assert fs.register_cjk_font() == "Noto Sans CJK SC"
    pins = (REPO / "requirements.txt").read_text()
    assert re.search(r"^mplfonts==\d", pins, re.M), "mplfonts must be pinned in requirements.txt"


def test_a_missing_glyph_stops_a_strict_save(tmp_path):
    out = tmp_path / "x.png"
    with fs.context("zh", book=True):  # fonts are looked up when the figure is drawn: save inside the context
        fig, ax = plt.subplots()
        ax.set_title("\U0001f600 \u6bcf")  # an emoji: in no font of the list; the CJK glyph is found
        with pytest.raises(fs.MissingGlyphError, match="128512"):
            fs.save(fig, [out], strict=True)
        assert not out.exists() and not list(tmp_path.iterdir())
        ax.set_title("\U0001f680")  # matplotlib warns once per glyph: another one for the lenient save
        report = fs.save(fig, [out])  # not strict: written, and the message is returned
    plt.close(fig)
    assert out.exists() and len(report[str(out)]) == 1 and "128640" in report[str(out)][0]


def test_every_figure_of_the_project_uses_the_style_module(tmp_path):
    from tilelang_churn.figures import plot_churn, release_figures

    assert plot_churn.fs is fs and release_figures.fs is fs
    assert plot_churn.DPI == release_figures.DPI == fs.SCREEN_DPI
    assert release_figures._SAVE_METADATA is fs.SAVE_METADATA
    churn, _ = tables(tmp_path)
    frame = frames.read_frame(churn)
    saved = []
    for k in range(2):  # the workflow's heatmap, saved twice: the same bytes in every format
        paths = [tmp_path / f"heatmap{k}.{ext}" for ext in ("png", "svg", "pdf")]
        plot_churn.plot_configuration_heatmap(frame, paths)
        saved.append([path.read_bytes() for path in paths])
    assert saved[0] == saved[1]


# ------------------------------------------------------------------------------------------------ figures


@pytest.fixture(scope="module")
def book_sets(tmp_path_factory) -> dict:
    """The book drawn once per language from hand-made tables, as the command line draws it:
    {"churn": ..., "reference": ..., language: (its out dir, the completed process)}."""
    root = tmp_path_factory.mktemp("book_sets")
    churn, ref = tables(root)
    drawn = {"churn": churn, "reference": ref}
    for language in fs.LANGUAGES:
        out = root / language
        args = ("--churn", str(churn), "--reference", str(ref), "--out-dir", str(out), "--language", language)
        drawn[language] = out, run_cli(*args)
    return drawn


# the tests that read the drawn sets share one worker, so that the sets are drawn once
book_sets_group = pytest.mark.xdist_group("book_sets")


@book_sets_group
@pytest.mark.parametrize("language", fs.LANGUAGES)
def test_the_set_is_written_and_documented(book_sets, language):
    out, proc = book_sets[language]
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == expected_files(FIGURES_WITHOUT_RELEASES)
    assert "missing from font" not in proc.stdout + proc.stderr
    manifest = (out / book_figures.MANIFEST).read_text()
    assert "| fig3_releases | not made | the config compares no releases" in manifest
    assert "`fig1_reference_passes.png`" in manifest and f"Language: {language}." in manifest
    for stem in FIGURES_WITHOUT_RELEASES:
        png = out / f"{stem}.png"
        pixels = mpimg.imread(png)
        # 15 cm at 300 dpi, and not blank
        assert pixels.shape[1] == pytest.approx(15 / 2.54 * 300, abs=2), stem
        assert pixels.shape[0] < 22 / 2.54 * 300 + 2 and np.asarray(pixels[..., :3]).std() > 0.05, stem
        assert (out / f"{stem}.svg").read_text()[:200].lstrip().startswith("<?xml")
        assert (out / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.fixture(scope="session")
def book_with_releases(tmp_path_factory):
    """The whole book, figure 3 included, drawn by the command line from hand-made tables (hash seed 0), once per
    language asked: draw(language) -> (its out dir, the completed process, its arguments but --out-dir)."""
    root = tmp_path_factory.mktemp("book_with_releases")
    churn, ref = tables(root)
    by_version = write_by_version(root / "churn_by_version.csv")
    drawn = {}

    def draw(language: str):
        if language not in drawn:
            args = ("--churn", str(churn), "--reference", str(ref), "--by-version", str(by_version))
            args += ("--language", language)
            drawn[language] = root / language, run_cli(*args, "--out-dir", str(root / language)), args
        return drawn[language]

    return draw


@pytest.mark.slow  # two processes per language drawing the whole book: make test's, not make check's daily loop
@pytest.mark.parametrize("language", fs.LANGUAGES)
def test_regeneration_is_byte_identical(book_with_releases, tmp_path, language):
    out, proc, args = book_with_releases(language)
    assert proc.returncode == 0, proc.stderr
    # another process, another hash seed, and the four figures drawn side by side (the rule's threads)
    again = run_cli(*args, "--workers", "4", "--out-dir", str(tmp_path / "again"), seed="1")
    assert again.returncode == 0, again.stderr
    assert digests(out) == digests(tmp_path / "again")
    assert set(digests(out)) == expected_files(book_figures.FIGURES)


@book_sets_group
def test_the_chinese_pdf_embeds_noto_sans_cjk(book_sets):
    out, proc = book_sets["zh"]
    assert proc.returncode == 0, proc.stderr
    assert "missing from font" not in proc.stdout + proc.stderr and "findfont" not in proc.stderr
    for stem in FIGURES_WITHOUT_RELEASES:
        pdf = (out / f"{stem}.pdf").read_bytes()
        fonts = set(re.findall(rb"/BaseFont /(?:[A-Z]{6}\+)?([A-Za-z0-9-]+)", pdf))
        assert b"NotoSansCJKsc-Regular" in fonts, (stem, fonts)
        assert b"/FontFile2" in pdf  # the font program itself, not just its name
    # and the English set uses no CJK font at all
    en, proc = book_sets["en"]
    assert proc.returncode == 0, proc.stderr
    assert b"NotoSansCJK" not in (en / "fig1_reference_passes.pdf").read_bytes()


@book_sets_group
def test_the_width_comes_from_the_argument_and_the_labels_from_the_language(book_sets, tmp_path):
    churn, ref = book_sets["churn"], book_sets["reference"]
    result = book_figures.build(churn, ref, tmp_path / "zh", language="zh", width_cm=12.0)
    assert list(result["written"]) == FIGURES_WITHOUT_RELEASES and list(result["skipped"]) == ["fig3_releases"]
    for stem in FIGURES_WITHOUT_RELEASES:
        pixels = mpimg.imread(tmp_path / "zh" / f"{stem}.png")
        assert pixels.shape[1] == pytest.approx(12 / 2.54 * 300, abs=2), stem
    (en, _), (zh, _) = book_sets["en"], book_sets["zh"]
    for stem in FIGURES_WITHOUT_RELEASES:  # same data and width, other labels: other outlines in the SVG
        assert (zh / f"{stem}.svg").read_bytes() != (en / f"{stem}.svg").read_bytes()


def by_version_rows() -> list[dict]:
    rows = []
    for target in ("cuda-sm90", "cuda-sm80", "hip"):
        for k, version in enumerate(("0.1.12", "0.1.14", "0.1.15")):
            prov = job_provenance(target, "instrument", version, M=1024, N=1024, K=1024)
            unsupported = target == "hip" and version == "0.1.12"
            rows.append(
                dict(
                    prov,
                    configuration=f"{target} 1024x1024x1024 instrument",
                    pass_runs="" if unsupported else 80 + 2 * k,
                    changed_runs="" if unsupported else 30 + k,
                    added_total="" if unsupported else 400 + 10 * k,
                    deleted_total="" if unsupported else 380,
                    churn_total="" if unsupported else 780 + 10 * k,
                    failed=target == "cuda-sm80" and version == "0.1.12",
                    unsupported=unsupported,
                )
            )
    return rows


def write_by_version(path: Path) -> Path:
    rows = by_version_rows()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.slow
def test_the_release_figure_when_releases_are_compared(book_with_releases):
    out, proc, _ = book_with_releases("zh")
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == expected_files(book_figures.FIGURES)
    assert "not made" not in (out / book_figures.MANIFEST).read_text()
    pixels = mpimg.imread(out / "fig3_releases.png")
    assert np.asarray(pixels[..., :3]).std() > 0.05


def test_bad_inputs_are_one_line_errors(tmp_path):
    churn, ref = tables(tmp_path)
    other = tmp_path / "other" / "passes.csv"
    pt.write_rows(other, job(REFERENCE_PASSES, M=64, N=64, K=64))
    proc = run_cli("--churn", str(churn), "--reference", str(other), "--out-dir", str(tmp_path / "x"))
    assert proc.returncode == 1 and "the reference job (64\u00b3" in proc.stderr
    proc = run_cli("--churn", str(tmp_path / "none.csv"), "--reference", str(ref), "--out-dir", str(tmp_path / "x"))
    assert proc.returncode == 1 and "none.csv" in proc.stderr
    proc = run_cli("--churn", str(churn), "--reference", str(ref), "--out-dir", str(tmp_path / "x"), "--language", "fr")
    assert proc.returncode == 2


@book_sets_group
def test_without_a_one_change_configuration_figure_4_is_not_made_and_why(book_sets, tmp_path):
    ref, out = book_sets["reference"], tmp_path / "book"
    shutil.copytree(book_sets["en"][0], out)  # the set drawn from the full table
    assert (out / "fig4_variants.png").is_file()  # the next run must remove it
    lone = tmp_path / "lone.csv"  # the reference alone: nothing differs from it in one respect
    pt.write_rows(lone, pt.read_rows(ref))
    proc = run_cli("--churn", str(lone), "--reference", str(ref), "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    stems = [s for s in FIGURES_WITHOUT_RELEASES if s != "fig4_variants"]
    assert {p.name for p in out.iterdir()} == expected_files(stems)
    manifest = (out / book_figures.MANIFEST).read_text()
    why = "| fig4_variants | not made | no configuration of TileLang 0.1.15, mode trace-env differs from the reference"
    assert why in manifest and "in exactly one respect" in manifest
    assert "fig4_variants not made: no configuration" in proc.stdout


@book_sets_group
@pytest.mark.parametrize("width", ["nan", "inf", "-inf", "0", "4", "40.5"])
def test_a_width_not_finite_or_out_of_range_is_refused_before_drawing(book_sets, tmp_path, width):
    churn, ref, (out, _) = book_sets["churn"], book_sets["reference"], book_sets["en"]
    before = digests(out)
    proc = run_cli("--churn", str(churn), "--reference", str(ref), "--out-dir", str(out), f"--width-cm={width}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and f"width {float(width)!r} cm: must be a finite number" in proc.stderr
    assert digests(out) == before  # the figures already there are kept, none redrawn
    with pytest.raises(book_figures.BookError, match="finite number above 4 and at most 40"):
        book_figures.build(churn, ref, tmp_path / "api", width_cm=float(width))
    assert not (tmp_path / "api").exists()


def test_the_width_range_is_the_schemas():
    import yaml

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    width = schema["properties"]["book_figure_width_cm"]
    assert (width["exclusiveMinimum"], width["maximum"]) == (book_figures.MIN_WIDTH_CM, book_figures.MAX_WIDTH_CM)
    assert book_figures.width_problem(width["default"]) is None


# ------------------------------------------------------------------------------------------- the workflow


@pytest.mark.slow
def test_snakemake_book_figures_makes_the_documented_set(book_run):
    book = book_run.workdir / "results" / "book" / "en"
    assert {p.name for p in book.iterdir()} == expected_files(FIGURES_WITHOUT_RELEASES)
    manifest = (book / book_figures.MANIFEST).read_text()
    assert "Reference job: 256\u00d7256\u00d7256" not in manifest  # the shape is printed as a cube
    assert "Reference job: 256\u00b3, cuda-sm90" in manifest and "| fig3_releases | not made |" in manifest
    log = (book_run.workdir / "logs" / "book" / "book_figures_en.log").read_text()
    assert "fig3_releases not made: the config compares no releases" in log
    assert "missing from font" not in log


@pytest.mark.slow
def test_the_book_in_chinese_from_the_same_tables(book_run):
    proc = book_run.snakemake("--cores", "1", "book_figures", "--config", "figure_language=zh")
    assert proc.returncode == 0, proc.stderr[-3000:]
    zh = book_run.workdir / "results" / "book" / "zh"
    assert {p.name for p in zh.iterdir()} == expected_files(FIGURES_WITHOUT_RELEASES)
    assert not trace_batch_counts(proc.stdout + proc.stderr)  # tables reused
    en = digests(book_run.workdir / "results" / "book" / "en")
    assert en != digests(zh) and set(en) == set(digests(zh))


def test_the_release_figure_reads_the_gemm_rows_of_a_comparison_with_other_kernels(tmp_path):
    """Another kernel's rows of churn_by_version.csv leave the GEMM's columns empty: the book's figure 3 (the
    GEMM's) reads only the GEMM rows, and the other kernel's rows stop nothing."""
    from tilelang_churn.tables import release_tables

    rows = []
    for version in ("0.1.14", "0.1.15"):
        gemm = job_provenance(mode="instrument", tilelang_version=version)
        norm = {**gemm, **{c: None for c in book_figures.KERNEL}, "kernel": "rmsnorm", "params": '{"N":8}'}
        norm["kernel_label"] = "rmsnorm(N=8)"
        for job in (gemm, norm):
            rows += [make_row(1, "Simplify", "changed", 2, 1, job=job), make_row(2, "Other", "noop", 0, 0, job=job)]
    path = tmp_path / "churn_by_version.csv"
    table = release_tables.churn_by_version(frames.to_frame(rows))
    release_tables.write_csv(table, path)
    assert set(table["kernel"]) == {"gemm", "rmsnorm"}  # both kernels are in the comparison
    read = book_figures.read_by_version(path, "gemm")
    assert [(r["kernel"], r["tilelang_version"], r["M"], r["churn_total"]) for r in read] == [
        ("gemm", "0.1.14", 1024, 3),
        ("gemm", "0.1.15", 1024, 3),
    ]
    reference = {**job_provenance(mode="instrument"), "step": 1}
    written = book_figures.plot_releases(read, reference, tmp_path, "en", book_figures.DEFAULT_WIDTH_CM)
    assert all(p.exists() and p.stat().st_size > 1000 for p in written)


# ------------------------------------------------------------------------------------------ what is drawn


def drawn_figures(monkeypatch) -> dict:
    """{stem: figure} of every book figure drawn from now on, read back before it is saved (and drawn first
    with a missing glyph made an error: test_plot_churn.drawn_strictly)."""
    from test_plot_churn import drawn_strictly

    drawn_strictly(monkeypatch, book_figures, "_finish")
    strict, drawn = book_figures._finish, {}

    def finish(fig, out_dir, stem):
        drawn[stem] = fig
        return strict(fig, out_dir, stem)

    monkeypatch.setattr(book_figures, "_finish", finish)
    return drawn


def lines_per_pass(rows: list[dict]) -> dict[str, int]:
    """Per pass name: +added + -deleted over its runs, codegen left out (the test's own sum)."""
    out: dict[str, int] = {}
    for row in rows:
        if row["status"] in (pt.STATUS_CHANGED, pt.STATUS_NOOP):
            out[row["pass"]] = out.get(row["pass"], 0) + (row["added"] or 0) + (row["deleted"] or 0)
    return out


def test_figure_1_has_a_row_per_pass_in_order_and_one_grey_row_per_run_of_no_ops(tmp_path, monkeypatch):
    from itertools import groupby

    drawn = drawn_figures(monkeypatch)
    churn, ref = tables(tmp_path)
    book_figures.build(churn, ref, tmp_path / "en", language="en")
    (ax,) = [a for a in drawn["fig1_reference_passes"].axes if a.get_yticks().size]
    labels = [(t.get_text(), t.get_color()) for t in ax.get_yticklabels()]
    rows = sorted(pt.read_rows(ref), key=lambda r: r["step"])
    words = book_figures.TEXT["en"]
    expected = []
    for noop, run in groupby(rows, key=lambda r: r["status"] == pt.STATUS_NOOP):
        run = list(run)
        if noop:
            steps = str(run[0]["step"]) if len(run) == 1 else f"{run[0]['step']}\u2013{run[-1]['step']}"
            text = words["noop_one"] if len(run) == 1 else words["noop_run"].format(n=len(run))
            expected.append((f"{steps}  {text}", fs.NOOP_COLOR))
        else:
            expected += [(f"{r['step']}  {r['pass']}", None) for r in run]
    assert [text for text, _ in labels] == [text for text, _ in expected]
    assert [color for _, color in labels if color == fs.NOOP_COLOR] == [fs.NOOP_COLOR] * 3  # 1, 5-6, 9
    assert all(color == fs.NOOP_COLOR for (_, color), (_, want) in zip(labels, expected) if want)
    # each changed pass: its bar to the right is +added, to the left -deleted, on its own row
    centres = dict(zip([t for t, _ in labels], ax.get_yticks()))
    for row in rows:
        if row["status"] != pt.STATUS_CHANGED:
            continue
        y = centres[f"{row['step']}  {row['pass']}"]
        widths = sorted(p.get_width() for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - y) < 1e-9)
        assert widths == sorted([row["added"], -row["deleted"]]), row


def test_figure_4_shows_each_variants_lines_minus_the_references(tmp_path, monkeypatch):
    drawn = drawn_figures(monkeypatch)
    churn, ref = tables(tmp_path)
    book_figures.build(churn, ref, tmp_path / "en", language="en")
    ax = drawn["fig4_variants"].axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    columns = [t.get_text() for t in ax.get_xticklabels()]
    (mesh,) = [c for c in ax.collections if c.get_array() is not None]
    cells = np.ma.filled(mesh.get_array(), 0).reshape(len(names), len(columns))
    jobs = {}
    for row in pt.read_rows(churn):
        jobs.setdefault((row["M"], row["target_name"], row["stages"]), []).append(row)
    reference = lines_per_pass(jobs.pop((1024, "cuda-sm90", 3)))
    by_label = {
        "1000\u00b3": jobs[(1000, "cuda-sm90", 3)],
        "cuda-sm80": jobs[(1024, "cuda-sm80", 3)],
        book_figures.TEXT["en"]["stages_none"]: jobs[(1024, "cuda-sm90", 0)],
    }
    assert sorted(columns) == sorted(by_label)
    expected_names = set()
    for c, label in enumerate(columns):
        mine = lines_per_pass(by_label[label])
        for name in reference.keys() | mine.keys():
            delta = mine.get(name, 0) - reference.get(name, 0)
            if delta:
                expected_names.add(name)
                assert cells[names.index(name), c] == delta, (label, name)
        for r, name in enumerate(names):  # every other cell: no difference
            if name not in reference.keys() | mine.keys() or mine.get(name, 0) == reference.get(name, 0):
                assert cells[r, c] == 0, (label, name)
    assert set(names) == expected_names  # passes with no difference anywhere are left out
    assert cells[names.index("ProducerConsumerWarpSpecialized"), columns.index("cuda-sm80")] == -31  # 20 + 11


def test_a_dollar_in_a_label_is_drawn_as_written_in_the_book(tmp_path, monkeypatch):
    from test_plot_churn import assert_drawn_as_written

    drawn = drawn_figures(monkeypatch)
    churn, ref = tables(tmp_path)
    rows = [
        dict(row, target_name="$HOME/$USER") if row["target_name"] == "cuda-sm80" else row
        for row in pt.read_rows(churn)
    ]
    pt.write_rows(churn, rows)
    book_figures.build(churn, ref, tmp_path / "en", language="en")
    for stem in ("fig2_pass_heatmap", "fig4_variants"):  # the target's name: a group label, a column label
        assert_drawn_as_written(drawn[stem], ["$HOME/$USER"])


@pytest.mark.slow
def test_a_pass_config_set_that_fails_at_setup_is_drawn_as_failed_in_the_books_figures(pass_configs_run, tmp_path):
    """Round four: {foo.bar: true} beside sets that lower (TVM refuses the key in every job of that set) killed
    book_figures_render (plot_variants: unary minus of None). The book is drawn, and figure 4's column of that set
    marks its failed setup and the passes it never reached. (foo.bar itself is refused at the config check since;
    an integer past 64 bits for an integer option still passes it and fails at setup, in every job of the set.)"""
    workdir = pass_configs_run  # {}, NO_WS and FAILS_AT_SETUP (conftest.py) at the reference shape
    churn = frames.read_frame(workdir / "results" / "churn.csv")
    failed = churn[churn["pass_configs"] == pass_configs.canonical(FAILS_AT_SETUP)]
    assert set(failed["status"]) == {pt.STATUS_FAILED} and set(failed["pass"]) == {"setup"}
    assert len(failed) and all("int too large to convert" in error for error in failed["error"])
    figures = {path.name for path in (workdir / "results" / "book" / "en").iterdir()}
    assert {"fig1_reference_passes.png", "fig2_pass_heatmap.png", "fig4_variants.png"} <= figures
    # figure 4 drawn again from the run's tables: the failed set's column marks its setup row as failed
    drawn = []
    original = book_figures._finish

    def keep(fig, *args):
        drawn.append([text.get_text() for text in fig.findobj(plt.Text)])
        return original(fig, *args)

    book_figures._finish = keep
    try:
        # the reference job of config/test_config.yaml's book_reference, as the rule gives it
        (reference,) = (workdir / "results" / "runs").glob("*/cuda-sm90/256x256x256_b64x64x32/trace-env/passes.csv")
        book_figures.build(workdir / "results" / "churn.csv", reference, tmp_path / "again")
    finally:
        book_figures._finish = original
    (variants,) = [texts for texts in drawn if any("One change at a time" in text for text in texts)]
    assert "\u00d7" in variants and any("config_index_bitwidth" in text for text in variants) and "setup" in variants, (
        variants
    )


def test_the_reference_is_the_first_candidate_whose_job_ran(tmp_path):
    """A release not probed before its environment was built: its reference job in each mode, trace-env first; the
    first that ran is the reference, a mode it lacks (one unsupported row) is passed over."""
    lacking = job_provenance(mode="trace-env", tilelang_version="0.1.12", M=256, N=256, K=256)
    ran = job_provenance(mode="instrument", tilelang_version="0.1.12", M=256, N=256, K=256)
    unsupported = write_passes(tmp_path, "trace-env", [make_row(0, "trace-env", pt.STATUS_UNSUPPORTED, job=lacking)])
    lowered = write_passes(tmp_path, "instrument", [make_row(0, "LowerTileOp", pt.STATUS_CHANGED, 3, 1, job=ran)])
    assert book_figures.reference_job([unsupported, lowered])["mode"] == "instrument"
    assert book_figures.reference_job(lowered)["mode"] == "instrument"
    with pytest.raises(
        book_figures.BookError, match=r"has the tool of none of the modes its jobs ran in \(trace-env\)"
    ):
        book_figures.reference_job([unsupported])
