"""The pass knockout as a user runs it: `snakemake --cores 2` with config knockout, its table, figures, index and
pages (opened in headless Chromium), and the report; a bad knockout config stops before any job."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import pytest
import yaml
from conftest import make_workdir, require_tilelang, snakemake
from tilelang_churn.core import knockout_rows, statuses
from tilelang_churn.tables import knockout_table

CONFIG = {
    "shapes": [{"M": 256, "N": 256, "K": 256}],
    "kernels": [{"name": "rmsnorm", "shipped": "rmsnorm", "params": [{}]}],
    "targets": ["cuda-sm90", "hip"],
    "modes": ["instrument"],
    "job_figures": False,
    "heatmap_formats": ["png"],
    # InjectFenceProxy runs for cuda-sm90, not for hip: there its rows say the knockout did not take effect
    # tl.Simplify by its full name: Simplify alone is two passes (tl.Simplify and tirx.Simplify), two variants
    "knockout": {"passes": ["tl.Simplify", "LowerTileOp", "AnnotateEntryFunc", "InjectFenceProxy"]},
}
KNOCKOUT_READERS = ("knockout_table", "knockout_figures", "knockout_pages")
CONFIGURATIONS = [(target, shape) for target in CONFIG["targets"] for shape in ("256x256x256", "rmsnorm")]


@pytest.fixture(scope="module")
def knockout_run(tmp_path_factory):
    require_tilelang()
    workdir = make_workdir(tmp_path_factory.mktemp("knockout_run"))
    (workdir / "config" / "knockout.yaml").write_text(yaml.safe_dump(CONFIG))
    done = snakemake(workdir, "--configfile", "config/knockout.yaml", "--cores", "2")
    assert done.returncode == 0, done.stderr[-4000:]
    return workdir


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_every_configuration_is_knocked_out_and_gathered(knockout_run):
    results = knockout_run / "results" / "knockout"
    (version,) = [path.name for path in (results / "runs").iterdir()]
    records = sorted((results / "runs").glob("*/*/*/knockout.json"))
    assert {(r.parent.parent.name, r.parent.name) for r in records} == set(CONFIGURATIONS)
    gathered = knockout_rows.read_rows(results / "knockout.csv")
    assert len(gathered) == sum(len(knockout_table.read_configuration(r)) for r in records) == 4 * 5
    for summary in knockout_table.summarize(gathered):
        rows = {row["variant"]: row for row in summary["rows"]}
        assert list(rows)[0] == knockout_rows.BASELINE and set(rows) == {"baseline", *CONFIG["knockout"]["passes"]}
        assert rows["baseline"]["status"] == statuses.STATUS_LOWERED
        fence = rows["InjectFenceProxy"]
        if fence["target_name"] == "hip":
            assert fence["skipped_runs"] == 0 and "did not take effect" in fence["note"]
        else:
            assert fence["skipped_runs"] > 0 and fence["status"] in statuses.KNOCKOUT_STATUSES
        assert {row["tilelang_version"] for row in rows.values()} == {version}
        assert {row["mode"] for row in rows.values()} == {knockout_rows.MODE}
    for target, shape in CONFIGURATIONS:
        width, height = _png_size(results / "figures" / version / target / f"{shape}.png")
        assert width > 600 and height > 150
    log = (knockout_run / "logs" / "knockout" / version).glob("knockout_*.log")
    assert any("4 of 4 configuration(s) recorded" in path.read_text() for path in log)


@pytest.mark.slow
def test_the_index_links_every_page_and_each_page_its_diffs(knockout_run):
    results = knockout_run / "results" / "knockout"
    index = (results / "index.html").read_text()
    links = re.findall(r'href="(pages/[^"]+\.html)"', index)
    assert len(links) == 4 and all((results / link).is_file() for link in links)
    for link in links:
        page = (results / link).read_text()
        anchors = set(re.findall(r'href="#(d\d+)"', page))
        assert anchors == set(re.findall(r'<details id="(d\d+)"', page))
        assert "http" not in page.replace("http-equiv", "")  # self-contained: no network


@pytest.mark.slow  # a browser: left out of make check, as the other browser tests
def test_a_reader_follows_the_index_to_a_page_and_a_diff_in_chromium(knockout_run, tmp_path):
    from test_compare_pages import chromium_page

    results = knockout_run / "results" / "knockout"
    with chromium_page({"width": 1500, "height": 1000}) as (page, errors):
        page.goto((results / "index.html").as_uri())
        row = page.locator("#configurations tbody tr", has_text="cuda-sm90").first
        page.fill("#filter", "rmsnorm hip")
        visible = [tr for tr in page.locator("#configurations tbody tr").all() if tr.is_visible()]
        assert len(visible) == 1 and "hip" in visible[0].inner_text()
        page.fill("#filter", "")
        row.locator("a").first.click()
        page.wait_for_load_state("load")
        diff_links = page.locator("#variants a[href^='#d']")
        assert diff_links.count() >= 1
        diff_links.first.click()
        target = page.url.rsplit("#", 1)[1]
        shown = page.locator(f"#{target} pre.diff").inner_text()
        assert shown.startswith("--- baseline") and re.search(r"^[+-]", shown, re.M)
        page.screenshot(path=str(tmp_path / "knockout_page.png"))
    assert errors == []
    # at 1000 px the index and a page fit the window: long pass lists and errors wrap, nothing scrolls sideways
    with chromium_page({"width": 1000, "height": 900}) as (page, errors):
        widths = []
        for url in [(results / "index.html").as_uri(), *sorted(p.as_uri() for p in (results / "pages").glob("*.html"))]:
            page.goto(url)
            widths.append(page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]"))
        assert all(scroll <= client for scroll, client in widths), widths
    assert errors == []


@pytest.mark.slow
def test_the_report_holds_the_knockout_figures_and_index(knockout_run):
    done = snakemake(knockout_run, "--configfile", "config/knockout.yaml", "--report", "results/report.html")
    assert done.returncode == 0, done.stderr[-3000:]
    report = (knockout_run / "results" / "report.html").read_text()
    assert "Pass knockout" in report and "what each pass is worth" in report.lower()


@pytest.mark.integration
@pytest.mark.parametrize(
    "knockout, says",
    [
        (
            {"passes": "changd"},
            "config knockout.passes: 'changd' is none of what it takes: 'changed' or 'all'; a list (as a list: "
            "['changd'])",
        ),
        ("yes", "config knockout: 'yes' is none of what it takes: true or false; a mapping of passes, occurrence, "),
        ({"passes": ["LowerTileOp", "a b"]}, "config knockout.passes[1]: 'a b' is not a pass name"),
        ({"occurrence": "second"}, "config knockout.occurrence: 'second' is not one of ['all', 'first', 'each']"),
        ({"timeout_s": 0}, "config knockout.timeout_s: 0 is less than or equal to the minimum of 0"),
    ],
)
def test_a_bad_knockout_config_stops_before_any_job_naming_key_and_value(tmp_path, knockout, says):
    workdir = make_workdir(tmp_path)
    (workdir / "config" / "bad.yaml").write_text(yaml.safe_dump({**CONFIG, "knockout": knockout}))
    done = snakemake(workdir, "--configfile", "config/bad.yaml", "-n")
    assert done.returncode != 0
    said = done.stdout + done.stderr  # Snakemake prints a WorkflowError on stdout
    assert says in said, said[-2000:]
    assert not (workdir / "results").exists()


@pytest.mark.integration
def test_knockout_true_takes_every_default_and_off_adds_no_job(tmp_path):
    workdir = make_workdir(tmp_path)
    on = snakemake(workdir, "--config", "knockout=true", "-n", "--quiet", "rules")
    off = snakemake(workdir, "-n", "--quiet", "rules")
    assert on.returncode == off.returncode == 0, on.stderr[-2000:] + off.stderr[-2000:]
    assert re.search(r"^knockout_\S+\s+1$", on.stdout, re.M) and "knockout_table" in on.stdout
    assert not re.search(r"^knockout", off.stdout, re.M)


@pytest.mark.slow
def test_deleting_a_table_a_reader_refuses_reruns_its_batch_as_the_advice_says(knockout_run):
    """Round four: a reader refusing a configuration's knockout.csv says "rerun its knockout batch (delete the
    file)"; deleting it did not rerun the batch (only knockout.json was an input of the readers), and the readers
    died with FileNotFoundError. Tampered first, as a reader meets it; then the advice followed: Snakemake plans the
    batch again, and the readers after it. The run's own tables are put back for the other tests."""
    from conftest import rule_counts

    results = knockout_run / "results" / "knockout"
    (table,) = [path for path in (results / "runs").glob("*/cuda-sm90/rmsnorm/knockout.csv")]
    gathered = knockout_rows.read_rows(results / "knockout.csv")
    original, stat = table.read_text(), table.stat()
    table.write_text(original.replace("baseline", "basel1ne", 1))
    refused = knockout_table.write_table(sorted(str(p) for p in (results / "runs").glob("*/*/*/knockout.json")),
                                         knockout_run / "refused.csv")  # fmt: skip
    assert refused == 1 and not (knockout_run / "refused.csv").exists()
    table.unlink()  # the advice
    try:
        planned = snakemake(knockout_run, "--configfile", "config/knockout.yaml", "-n", "--quiet", "rules")
    finally:
        table.write_text(original)
        os.utime(table, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    counts = rule_counts(planned.stdout)
    batches = {rule for rule, n in counts.items() if rule.startswith("knockout_") and rule not in KNOCKOUT_READERS}
    assert len(batches) == 1, planned.stdout  # the batch that wrote the table
    assert set(KNOCKOUT_READERS) <= set(counts), planned.stdout
    assert knockout_rows.read_rows(results / "knockout.csv") == gathered


@pytest.mark.slow
def test_every_note_of_a_knockout_figure_stays_on_the_figure(knockout_run, monkeypatch):
    """Round four: a lowering error's note ran off the figure's right edge. Each configuration's rows, drawn again
    with the longest error TVM gives (hundreds of characters) on a failed variant: every text inside the canvas."""
    from tilelang_churn.figures import knockout_figures

    drawn = []
    monkeypatch.setattr(knockout_figures.fs, "save", lambda fig, paths: drawn.append(fig))
    results = knockout_run / "results" / "knockout"
    for record in sorted((results / "runs").glob("*/*/*/knockout.json")):
        rows = knockout_table.read_configuration(record)
        longest = max((row["error"] or "" for row in rows), key=len) or "x"
        # with the longest pass name of TileLang's pipelines beside it, as the label column is widest
        rows = [dict(row, variant="PlanAndUpdateBufferAllocationLocation", status=statuses.STATUS_LOWER_FAILED,
                     error=longest * 3) if row["variant"] == "tl.Simplify" else row for row in rows]  # fmt: skip
        knockout_figures.plot_configuration(rows, [])
    assert drawn
    for fig in drawn:
        fig.canvas.draw()
        right = fig.bbox.x1
        for text in fig.findobj(lambda artist: hasattr(artist, "get_text") and artist.get_text()):
            box = text.get_window_extent()
            assert box.x1 <= right + 1, (text.get_text()[:60], box.x1, right)


@pytest.mark.slow
@pytest.mark.parametrize("misspelt, closest", [("Simplfy", "Simplify"), ("tl.LowerTileOps", "tl.LowerTileOp")])
def test_a_named_pass_that_runs_in_no_baseline_of_the_grid_is_refused_with_the_closest_names(
    knockout_run, tmp_path, capsys, misspelt, closest
):
    """A misspelt knockout.passes name was a quiet "did not take effect" row in every configuration. Every record
    says which passes its baseline ran; a name that ran in none of them stops the table, naming the closest. The
    records are the fixture run's, with the config's list as a run naming the misspelt pass would record it."""
    import json
    import shutil

    runs = knockout_run / "results" / "knockout" / "runs"
    records = []
    for record in sorted(runs.glob("*/*/*/knockout.json")):
        copy = tmp_path / record.relative_to(runs)
        copy.parent.mkdir(parents=True)
        shutil.copy(record.with_suffix(".csv"), copy.with_suffix(".csv"))
        data = json.loads(record.read_text())
        assert "InjectFenceProxy" in data["baseline_passes"] or data["spec"]["target_name"] == "hip"
        data["settings"]["passes"] = [*CONFIG["knockout"]["passes"], misspelt]
        copy.write_text(json.dumps(data))
        records.append(str(copy))
    out = tmp_path / "knockout.csv"
    assert knockout_table.write_table(records, out) == 1
    said = capsys.readouterr().err
    assert f"'{misspelt}' (did you mean {closest}" in said and "ran in no baseline" in said, said
    assert not out.exists()
    for record in records:  # the configured names that ran somewhere are no problem, hip's InjectFenceProxy too
        data = json.loads(Path(record).read_text())
        data["settings"]["passes"] = CONFIG["knockout"]["passes"]
        Path(record).write_text(json.dumps(data))
    assert knockout_table.write_table(records, out) == 0
