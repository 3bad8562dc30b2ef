"""Release speed attribution (tables/speed_attribution.py, results/compare/speed_attribution.csv) on tables recorded
on the H200 (tests/data/gpu/PROVENANCE.md): which configurations moved between releases, and which passes' knockout
explains the move. Every expected value is recomputed here from the recorded rows themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tilelang_churn.core import knockout_rows, statuses
from tilelang_churn.figures import compare_pages
from tilelang_churn.tables import kernel_speed, speed_attribution

DATA = Path(__file__).parent / "data" / "gpu"
README = Path(__file__).resolve().parents[1] / "docs" / "outputs-compare.md"
SPEED = kernel_speed.read_csv(DATA / "kernel_speed_h200.csv")  # the default grid's sm_90 GPU jobs, 0.1.14 and 0.1.15
KNOCKOUT = knockout_rows.read_rows(DATA / "knockout_h200_0.1.15.csv")  # the same grid's knockout on 0.1.15


def _config(row: dict) -> tuple:
    return row["target_name"], row["kernel"], row["params"], row["pass_configs"]


def test_a_configuration_is_attributed_exactly_when_its_two_timings_ranges_are_apart():
    rows = speed_attribution.attribute(SPEED, [], None)
    pairs = {}
    for row in SPEED:
        pairs.setdefault(_config(row), {})[row["tilelang_version"]] = row
    apart = {
        config
        for config, by in pairs.items()
        if by["0.1.15"]["latency_min_ms"] > by["0.1.14"]["latency_max_ms"]
        or by["0.1.15"]["latency_max_ms"] < by["0.1.14"]["latency_min_ms"]
    }
    assert apart and len(apart) < len(pairs)  # the recorded grid has both kinds
    assert {_config(row) for row in rows} == apart
    for row in rows:
        old, new = pairs[_config(row)]["0.1.14"], pairs[_config(row)]["0.1.15"]
        assert (row["release_old"], row["release_new"]) == ("0.1.14", "0.1.15")
        assert (row["latency_old_ms"], row["latency_new_ms"]) == (old["latency_ms"], new["latency_ms"])
        assert row["latency_change"] == new["latency_ms"] / old["latency_ms"]
        assert row["knockout_new"] == row["knockout_old"] == speed_attribution.KNOCKOUT_NOT_CONFIGURED
        assert row["passes_back_new"] == "" and row["mode"] is None  # no comparison given


def test_a_knockout_that_would_undo_the_whole_move_is_found_all_the_way_back():
    """If the older release had been as fast as the newer one with a pass knocked out, that pass explains the move
    all the way (share 1); the passes moving less than half or more than one and a half times the way, or within
    their repeats' range, are left out."""
    for target in [row for row in KNOCKOUT if row["variant"] != knockout_rows.BASELINE]:
        if target["gpu_status"] != statuses.STATUS_OK or target["gpu_source_equal"] or target["latency_ratio"] is None:
            continue
        if not (target["latency_ratio_low"] > 1 or target["latency_ratio_high"] < 1):
            continue
        config = [row for row in KNOCKOUT if _config(row) == _config(target)]
        new = next(row for row in SPEED if _config(row) == _config(target) and row["tilelang_version"] == "0.1.15")
        latency_old = new["latency_ms"] * target["latency_ratio"]  # what that knockout would give
        found = dict(speed_attribution.passes_moving(config, new["latency_ms"], latency_old))
        assert abs(found[target["variant"]] - 1) < 1e-9
        for row in config:
            share = None
            if row.get("latency_ratio") is not None:
                share = new["latency_ms"] * (1 - row["latency_ratio"]) / (new["latency_ms"] - latency_old)
            counted = (
                row["variant"] != knockout_rows.BASELINE
                and row["gpu_status"] == statuses.STATUS_OK
                and not row["gpu_source_equal"]
                and share is not None
                and abs(share - 1) <= speed_attribution.HALFWAY
                and (row["latency_ratio_low"] > 1 or row["latency_ratio_high"] < 1)
            )
            assert (row["variant"] in found) == counted, row["variant"]
        return
    raise AssertionError("no timed knockout beyond its repeats' range in the recorded table")


def test_the_rows_join_the_comparison_and_the_knockout_of_each_release():
    moved = speed_attribution.attribute(SPEED, [], None)
    config = _config(moved[0])
    divergence = [
        dict(zip(speed_attribution.CONFIG, config), mode=mode, release_old="0.1.14", release_new="0.1.15",
             first_divergent_pass=f"{mode} pass", first_divergent_edit=f"{mode} edit", source_differs=True)
        for mode in ("trace-env", "instrument")
    ]  # fmt: skip
    (row,) = [r for r in speed_attribution.attribute(SPEED, divergence, KNOCKOUT) if _config(r) == config]
    assert (row["mode"], row["first_divergent_edit"], row["source_differs"]) == ("instrument", "instrument edit", True)
    knocked = [r for r in KNOCKOUT if _config(r) == config]
    assert row["knockout_new"] == speed_attribution.KNOCKOUT_TIMED if knocked else speed_attribution.KNOCKOUT_NOT_TIMED
    assert row["knockout_old"] == speed_attribution.KNOCKOUT_NOT_TIMED  # the recorded knockout is 0.1.15's only
    new = next(r for r in SPEED if _config(r) == config and r["tilelang_version"] == "0.1.15")
    old = next(r for r in SPEED if _config(r) == config and r["tilelang_version"] == "0.1.14")
    expected = speed_attribution.passes_moving(knocked, new["latency_ms"], old["latency_ms"])
    assert row["passes_back_new"] == ";".join(name for name, _ in expected)


def test_the_index_shows_each_attributed_configuration():
    rows = speed_attribution.attribute(SPEED, [], KNOCKOUT)
    page = compare_pages.index_page([], rows)
    assert page.count('<tr><td class="wrap">cuda-sm90 ') == len(rows)
    assert "Speed between releases" in compare_pages.index_page([], []) and "moved" in compare_pages.index_page([], [])
    assert "Speed between releases" not in compare_pages.index_page([])


def test_config_readme_documents_every_column_as_the_schema_says():
    text = README.read_text()
    section = text[text.index("## speed_attribution.csv") :]
    end = section.find("\n#", 1)
    section = section if end < 0 else section[:end]  # to the next heading, or the end of the file
    found = re.findall(r"^\| `([A-Za-z_]+)` \| (.*) \|$", section, re.M)
    assert found == speed_attribution.ATTRIBUTION_SCHEMA


# --------------------------------------------------------- recorded: both releases on the H200 in one command

ATTRIBUTION_SPEED = kernel_speed.read_csv(DATA / "kernel_speed_h200_attribution.csv")
ATTRIBUTION_KNOCKOUT = [
    row
    for release in ("0.1.14", "0.1.15")
    for row in knockout_rows.read_rows(DATA / f"knockout_h200_attribution_{release}.csv")
]


def _divergence() -> list[dict]:
    import pandas as pd

    table = pd.read_csv(DATA / "divergence_h200_attribution.csv", dtype={"params": str, "pass_configs": str})
    return table.astype(object).where(table.notna(), None).to_dict("records")


def test_the_recorded_attribution_is_what_its_tables_give():
    rows = speed_attribution.attribute(ATTRIBUTION_SPEED, _divergence(), ATTRIBUTION_KNOCKOUT)
    recorded = speed_attribution.read_csv(DATA / "speed_attribution_h200.csv")

    def cells(row: dict) -> dict:  # an empty cell and None are the same in a CSV
        return {column: None if row[column] == "" else row[column] for column in speed_attribution.COLUMNS}

    assert [cells(row) for row in rows] == [cells(row) for row in recorded] and rows
    # what the H200 said: the configurations that moved generate the same source in both releases, so the rows
    # name no pass and say why
    by_config = {(row["target_name"], row["kernel"], row["params"], row["pass_configs"]): row for row in _divergence()}
    for row in rows:
        assert by_config[_config(row)]["source_differs"] is False
        assert row["passes_back_new"] == row["passes_back_old"] == "" and "same source" in row["note"]
        assert row["knockout_new"] == row["knockout_old"] == speed_attribution.KNOCKOUT_TIMED


@pytest.mark.integration
def test_the_workflow_hands_the_comparison_the_gpu_latencies_and_the_knockout(tmp_path):
    """With gpu: true and two releases, rule compare_releases reads kernel_speed.csv and knockout.csv and writes
    speed_attribution.csv; without the GPU it has neither (a dry run: no job runs)."""
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path)
    grid = ["--config", 'versions=["0.1.14","0.1.15"]', "modes=[instrument]", "targets=[cuda-sm90]"]
    for gpu, knockout in (("true", "true"), ("true", "false"), ("false", "true")):
        done = snakemake(workdir, "-n", "-p", "--forceall", *grid, f"gpu={gpu}", f"knockout={knockout}")
        assert done.returncode == 0, done.stderr[-3000:]
        (command,) = [line for line in done.stdout.splitlines() if "compare_releases.py" in line]
        assert ("--speed results/gpu/kernel_speed.csv" in command) == (gpu == "true")
        assert ("--knockout results/knockout/knockout.csv" in command) == (gpu == knockout == "true")
        assert ("speed_attribution.csv" in done.stdout) == (gpu == "true")
        # config release_heatmap's default: the book's reference, by the folders of its jobs
        assert "--heatmap-job cuda-sm90/1024x1024x1024/instrument" in command
