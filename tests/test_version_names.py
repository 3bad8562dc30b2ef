"""Versions that are no release (config ``versions``: a user's wheel, an environment) in the tables, pages and figures:
each is told apart and labelled by its name (``version_name``), ordered by the TileLang version it imported, then
its name; a table written before the column reads with ``version_name`` equal to ``tilelang_version``; the index's
sentence of a pair names where its IR diverges and where it is equal again. Data written here, no lowering."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import pytest
from conftest import entry
from test_compare_releases import CONFIG, frame, job_rows, run, write_archive
from tilelang_churn.core import jobs, knockout_rows
from tilelang_churn.core import passes_table as pt
from tilelang_churn.figures import compare_pages, page_templates, release_figures
from tilelang_churn.tables import churn_table, kernel_speed, pass_edits, speed_attribution
from tilelang_churn.tables import release_tables as cr

DATA = Path(__file__).parent / "data" / "gpu"
# name: the TileLang version it imports; a release named by its number, an environment "dev" importing exactly the
# release 0.1.14 beside it, a wheel "my-branch" built from 0.1.15 (listed out of order on purpose)
ENTRIES = {"my-branch": "0.1.15+test", "0.1.16": "0.1.16", "dev": "0.1.14", "0.1.15": "0.1.15", "0.1.14": "0.1.14"}
ORDER = ["0.1.14", "dev", "0.1.15", "my-branch", "0.1.16"]  # by the version imported, then the name
PASSES = ["P0", "P1", "P2"]


def body(*lines: str) -> str:
    return "@I.ir_module\nclass Module:\n" + "".join(f"    {line}\n" for line in lines)


def entry_afters(name: str) -> list[str]:
    """The IR after each pass of an entry: dev lowers as 0.1.14 does, my-branch as 0.1.15 with a line of its own
    after P1 that P2 drops again, 0.1.16 keeps a line of its own to the end."""
    own = {"my-branch": ["branch = 1"], "0.1.16": ["new = 1"]}.get(name, [])
    return [body("x = 0"), body("x = 1", *own), body("x = 2", *([] if name == "my-branch" else own))]


def write_entries(root: Path) -> list[Path]:
    """One job per entry, its passes.csv (with version_name, as a trace job writes it) and its IR archive."""
    paths = []
    for name, imported in ENTRIES.items():
        folder = root / name / "cuda-sm90"
        rows = job_rows(imported, [run(p) for p in PASSES], version_name=name)
        pt.write_rows(folder / "passes.csv", rows)
        write_archive(
            folder / "ir.json.gz", body("x"), entry_afters(name), f"src {ENTRIES[name].split('+')[0]}\n", PASSES
        )
        paths.append(folder / "passes.csv")
    return paths


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def compared(tmp_path, monkeypatch):
    """The comparison of the five entries through its command line, with the tick labels of every figure drawn."""
    drawn: list[list[str]] = []

    def keep_labels(fig, paths):  # nothing written: the labels are what is checked
        for ax in fig.axes:
            labels = [label.get_text() for label in ax.get_xticklabels()]
            if any(labels):
                drawn.append(labels)

    monkeypatch.setattr(release_figures, "_save", keep_labels)
    out = tmp_path / "compare"
    paths = [str(p) for p in write_entries(tmp_path / "runs")]
    assert entry("compare_releases").main(["--out-dir", str(out), "--formats", "png", *paths]) == 0
    return out, drawn


def test_two_entries_importing_one_version_stay_two_versions_in_every_table_and_page(compared):
    out, _ = compared
    by_version = read_csv(out / "churn_by_version.csv")
    assert [row["version_name"] for row in by_version] == ORDER
    assert [row["tilelang_version"] for row in by_version] == [ENTRIES[name] for name in ORDER]  # as imported
    pairs = list(zip(ORDER, ORDER[1:]))
    diverging = read_csv(out / "divergence.csv")
    assert [(row["release_old"], row["release_new"]) for row in diverging] == pairs
    assert [(row["tilelang_version_old"], row["tilelang_version_new"]) for row in diverging] == [
        (ENTRIES[old], ENTRIES[new]) for old, new in pairs
    ]
    alignment = read_csv(out / "pass_alignment.csv")
    assert list(dict.fromkeys((row["release_old"], row["release_new"]) for row in alignment)) == pairs
    # dev lowers exactly as the release it imports: the same at every pass, and said so
    (dev,) = [row for row in diverging if row["release_new"] == "dev"]
    assert dev["release_old"] == "0.1.14" and dev["ir_identical_throughout"] == "True"
    assert dev["statement"] == "dev is the same as 0.1.14 at every pass; the generated source is the same"
    # a page per pair, named and titled by the versions' names
    label, configuration = compare_pages.display_label(by_version[0]), by_version[0]["configuration"]
    for old, new in pairs:
        page = out / compare_pages.PAGES_DIR / f"{page_templates.page_name(f'{configuration}__{old}__{new}')}.html"
        assert f"<title>{html.escape(f'{label}: {old} → {new}')}</title>" in page.read_text()
    index = (out / "index.html").read_text()
    for row in diverging:
        assert html.escape(row["statement"]) in index  # each pair's sentence, in version order
    shown = [index.index(html.escape(row["statement"])) for row in diverging]
    assert shown == sorted(shown)


def test_a_wheel_sorts_after_the_release_it_is_built_from_and_is_labelled_by_its_name(compared):
    out, drawn = compared
    diverging = {(row["release_old"], row["release_new"]): row for row in read_csv(out / "divergence.csv")}
    branch = diverging[("0.1.15", "my-branch")]
    # its own line appears after P1 and P2 drops it: the sentence's passes are the archives' (entry_afters)
    assert branch["statement"] == (
        "my-branch differs from 0.1.15 from pass P1; reconverges at P2; the generated source is the same"
    )
    assert diverging[("my-branch", "0.1.16")]["statement"].startswith("0.1.16 differs from my-branch from pass P1;")
    # the figures: the heatmap's columns (a state may follow on a second line) and the trend's ticks, every panel;
    # the heatmap's second panel, its pairs (labels on top and below: each once here)
    shown = [list(dict.fromkeys(labels)) for labels in drawn]
    columns = [labels for labels in shown if len(labels) == len(ORDER)]
    assert len(columns) == 2  # the heatmap's, the trend's (its two panels share the x axis: labels on the lower)
    assert all([label.split("\n")[0] for label in labels] == ORDER for labels in columns)
    pairs = [labels for labels in shown if len(labels) == len(ORDER) - 1]
    assert pairs == [[f"{old}\n→ {new}" for old, new in zip(ORDER, ORDER[1:])]]
    assert "0.1.15+test" not in str(drawn)


def test_the_gpu_stage_joins_a_wheel_by_its_name_and_a_release_without_its_local_suffix():
    speed = [
        row for row in kernel_speed.read_csv(DATA / "kernel_speed_h200.csv") if row["tilelang_version"] == "0.1.15"
    ]
    summary = [
        row for row in kernel_speed.read_csv(DATA / "churn_summary_h200.csv") if row["tilelang_version"] == "0.1.15"
    ]
    assert speed and summary and all(row["version_name"] == "0.1.15" for row in speed + summary)  # read as before
    # the GPU site of the release imports a local build of it; my-branch's trace counted other churn
    site = [dict(row, tilelang_version="0.1.15+cu128", version_name=None) for row in speed]
    branch = [dict(row, tilelang_version="0.1.15+test", version_name="my-branch") for row in speed]
    branch_summary = [
        dict(row, tilelang_version="0.1.15+test", version_name="my-branch", churn_total=row["churn_total"] + 1)
        for row in summary
    ]
    joined = kernel_speed.join(site + branch, summary + branch_summary, "instrument")

    def key(row):
        return (kernel_speed.join_version(row), *(row[column] for column in kernel_speed.JOIN_KEY[1:]))

    by_key = {key(row): row for row in summary + branch_summary if row["mode"] == "instrument"}
    for row in joined:
        match = by_key[key(row)]
        assert row["churn_total"] == match["churn_total"]
    assert {kernel_speed.join_version(row) for row in joined} == {"0.1.15", "my-branch"}
    # the speed attribution orders the wheel after its release and names it
    slower = [dict(row, latency_ms=2 * row["latency_ms"], latency_min_ms=2 * row["latency_max_ms"],
                   latency_max_ms=3 * row["latency_max_ms"]) for row in branch]  # fmt: skip
    rows = speed_attribution.attribute(speed + slower, [], None)
    assert rows and {(row["release_old"], row["release_new"]) for row in rows} == {("0.1.15", "my-branch")}


def test_a_table_written_before_the_column_reads_with_version_name_equal_to_tilelang_version(tmp_path):
    old_columns = [column for column in pt.COLUMNS if column != "version_name"]
    old = tmp_path / "old" / "passes.csv"
    rows = job_rows("0.1.14", [run("P0"), run("P1", "noop", 0, 0)])
    pt.write_rows(old, rows, old_columns)
    assert old.read_text().splitlines()[0] == ",".join(old_columns)
    read = pt.read_rows(old)
    assert [row["version_name"] for row in read] == ["0.1.14", "0.1.14"]
    assert jobs.job_key(read[0]) == jobs.job_key(rows[0]) == jobs.job_key({**rows[0], "version_name": "0.1.14"})
    assert jobs.version_name(rows[0]) == "0.1.14"
    # gathered beside a job written with the column: churn.csv in today's columns, the old job's rows filled in,
    # its summary too (version_name among the last columns)
    new = tmp_path / "new" / "passes.csv"
    pt.write_rows(new, job_rows("0.1.15", [run("P0")], version_name="0.1.15"))
    churn, summary = tmp_path / "churn.csv", tmp_path / "churn_summary.csv"
    assert churn_table.build_tables([old, new], churn, summary) == 0
    gathered = pt.read_rows(churn)
    assert [row["version_name"] for row in gathered] == ["0.1.14", "0.1.14", "0.1.15"]
    assert [{k: v for k, v in row.items() if k != "version_name"} for row in gathered[:2]] == [
        {k: v for k, v in row.items() if k != "version_name"} for row in read
    ]
    summaries = read_csv(summary)
    assert list(summaries[0])[-2:] == ["version_name", "device"]  # the later columns last, device after it
    assert [s["version_name"] for s in summaries] == ["0.1.14", "0.1.15"]
    # the comparison of an old table: each job named by its tilelang_version, as before the column
    churn_df, _ = cr.read_jobs([old, new])
    assert list(cr.churn_by_version(churn_df)["version_name"]) == ["0.1.14", "0.1.15"]
    # the recorded GPU tables, written before the column
    assert all(
        row["version_name"] == row["tilelang_version"] for row in kernel_speed.read_csv(DATA / "kernel_speed_h200.csv")
    )
    recorded = knockout_rows.read_rows(DATA / "knockout_h200_0.1.15.csv")
    assert all(row["version_name"] == row["tilelang_version"] for row in recorded)


def test_the_index_says_where_a_pairs_ir_diverges_and_where_it_is_equal_again(tmp_path):
    """Old and new run the same passes; the IR after each is written here, and the expected passes follow from it:
    the first pass after which the two differ, the first after it after which they are equal again."""
    names = ["P0", "P1", "P2", "P3", "P4"]
    afters = {
        "0.1.14": [body("a"), body("a", "b"), body("a", "b", "c"), body("b", "c"), body("c")],
        "0.1.15": [body("a"), body("a", "B"), body("a", "B", "c"), body("b", "c"), body("c", "d")],
    }
    differ = [old != new for old, new in zip(*afters.values())]
    diverges = names[differ.index(True)]
    again = names[differ.index(False, differ.index(True))]
    differs_again = names[differ.index(True, names.index(again))]
    old = job_rows("0.1.14", [run(name) for name in names])
    new = job_rows("0.1.15", [run(name) for name in names])
    archives = {
        cr.job_key(rows[0]): write_archive(tmp_path / f"{version}.gz", body(), afters[version], "src\n", names)
        for version, rows in (("0.1.14", old), ("0.1.15", new))
    }
    churn = frame(old, new)
    edits = pass_edits.EditCache(archives)
    diverging = cr.divergence(churn, archives, edits)
    (row,) = diverging.to_dict("records")
    expected = (
        f"0.1.15 differs from 0.1.14 from pass {diverges}; is equal again after {again} but differs again from "
        f"{differs_again}; the generated source is the same"
    )
    assert row["statement"] == expected and row["equal_again_at"] == again
    assert row["first_divergent_edit"] == diverges
    assert row["reconverges_at"] == ""  # equal again, then not to the end: P4 differs once more
    written = compare_pages.write_pages(cr.configurations(churn), diverging, edits, tmp_path / "out")
    index = written[0].read_text()
    review = index[index.index('<div id="review"') :]
    review = review[: review.index("</div>")]
    (sentence,) = re.findall(r"<li>(.*?) \(<a href=", review)
    assert sentence == html.escape(expected)
    assert compare_pages.display_label({**CONFIG, "configuration": row["configuration"]}) in review
