"""The Snakemake workflow end to end, on the small test config.

Runs use the repository's Snakefile from another working directory (`-s REPO/Snakefile --directory WORKDIR`)
that holds only a copy of `config/`: the rules must find their scripts through the workflow's own location.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import (  # noqa: F401 - also imported from here by other tests
    REPO,
    SNAKEMAKE,
    checkout_copy,
    checkout_environ,
    copy_of_finished_run,
    make_workdir,
    require_tilelang,
    rule_counts,
    snakemake,
    trace_batch_counts,
    version_of,
)
from test_broken_runs import tilelang_blocked_env
from tilelang_churn.core import passes_table
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import release_envs
from tilelang_churn.tables import frames


def load_test_config():
    return yaml.safe_load((REPO / "config" / "test_config.yaml").read_text())


def expected_jobs(workdir: Path) -> set[tuple]:
    """(target_name, M, N, K, mode) of every job the test config asks for."""
    config = load_test_config()
    return {
        (target, shape["M"], shape["N"], shape["K"], mode)
        for target in config["targets"]
        for shape in config["shapes"]
        for mode in config["modes"]
    }


@pytest.mark.slow
def test_churn_csv_holds_exactly_the_jobs_and_their_rows(finished_run):
    import pandas as pd

    churn = pd.read_csv(finished_run / "results" / "churn.csv", dtype=str, keep_default_na=False)
    assert list(churn.columns) == passes_table.COLUMNS
    jobs = {(r.target_name, int(r.M), int(r.N), int(r.K), r.mode) for r in churn.itertuples()}
    assert jobs == expected_jobs(finished_run) and len(jobs) == 12

    run_csvs = sorted((finished_run / "results" / "runs").glob("*/*/*/*/passes.csv"))
    assert len(run_csvs) == 12
    for path in run_csvs:
        job_rows = pd.read_csv(path, dtype=str, keep_default_na=False)
        version, target, mode = path.parts[-5], path.parts[-4], path.parts[-2]
        mine = churn[
            (churn["tilelang_version"] == version)
            & (churn["target_name"] == target)
            & (churn["mode"] == mode)
            & (churn["M"] == job_rows["M"][0])
            & (churn["N"] == job_rows["N"][0])
        ]
        assert mine.reset_index(drop=True).equals(job_rows), path

    summary = pd.read_csv(finished_run / "results" / "churn_summary.csv")
    assert len(summary) == 12
    trace_env = summary[summary["mode"] == "trace-env"]
    assert (trace_env["codegen_steps"] == 1).all() and (trace_env["changed_steps"] > 10).all()


@pytest.mark.slow
def test_every_figure_is_a_real_png(finished_run):
    import matplotlib.image as mpimg
    import numpy as np

    figures = sorted((finished_run / "results" / "figures").rglob("*.png"))
    assert len(figures) == 12 + 1  # one per job and the heatmap
    for figure in figures:
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", figure
        pixels = mpimg.imread(figure)
        assert min(pixels.shape[:2]) > 200, figure
        assert np.asarray(pixels[..., :3]).std() > 0.05, f"{figure} is blank"
    assert (finished_run / "results" / "figures" / "churn_heatmap.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.slow
def test_every_trace_job_has_its_log_and_every_batch_its_log_and_benchmark(finished_run):
    release = version_of(finished_run)
    job_logs = sorted((finished_run / "logs" / "trace" / release).glob("*/*/*.log"))
    assert len(job_logs) == 12  # 2 targets x 2 shapes x 3 modes
    for log in job_logs:  # the job's own output, as the script alone writes it
        assert "pass=" in log.read_text() and "gemm_lower_trace.py" not in log.read_text().split("\n")[0]
    batches = {f"trace_{release.replace('.', '_')}_gemm", f"trace_env_{release.replace('.', '_')}_gemm"}
    assert {p.stem for p in (finished_run / "logs" / "trace" / release).glob("*.log")} == batches
    assert {p.stem for p in (finished_run / "results" / "benchmarks" / "trace" / release).glob("*.tsv")} == batches


@pytest.mark.slow
def test_the_jobs_of_a_batch_share_one_import_of_tilelang(finished_run):
    runs = [json.loads(p.read_text()) for p in sorted((finished_run / "results" / "runs").glob("*/*/*/*/run.json"))]
    by_process = {}
    for run in runs:
        by_process.setdefault(run["process"]["pid"], []).append(run)
    assert sorted(len(group) for group in by_process.values()) == [4, 8]  # trace-env jobs, then the others
    for group in by_process.values():
        process = group[0]["process"]
        assert all(run["process"]["import_seconds"] == process["import_seconds"] > 0 for run in group)
        assert {run["process"]["jobs_in_process"] for run in group} == {len(group)}
        # imported already, by the batch: a lookup, not an import (a tenth of the batch's own import, which load
        # slows alike; 0.05 s was once exceeded under make test's load)
        assert all(run["import_seconds"] < 0.1 * process["import_seconds"] for run in group)
        # each job still records the command that reproduces it on its own
        assert all(run["command"][1].endswith("gemm_lower_trace.py") for run in group)


def documented_run_json_keys() -> dict[str, str]:
    """docs/outputs.md's run.json table: each key and its row."""
    text = (REPO / "docs" / "outputs.md").read_text()
    section = text[text.index("### run.json") :]
    section = section[: section.index("\n## ", 1)]
    return {key: row for row, key in re.findall(r"^(\| `([a-z_]+)` \|.*)$", section, re.M)}


@pytest.mark.slow
def test_every_run_json_key_is_documented_in_config_readme(finished_run, trace_runs):
    """Every key of real run.json files (the test grid's batch jobs; an instrument job alone, keeping its IR) is in
    docs/outputs.md's table, as is every key of `process`; every key the table names is one the code writes."""
    runs = [json.loads(p.read_text()) for p in sorted((finished_run / "results" / "runs").glob("*/*/*/*/run.json"))]
    proc, out = trace_runs.get("--mode", "instrument", "--shape", "256,256,256", "--keep-ir")
    assert proc.returncode == 0, proc.stderr
    runs.append(trace_runs.run_info(out))
    assert {run["spec"]["mode"] for run in runs} == {"trace-env", "trace-api", "pass-diff", "instrument"}
    documented = documented_run_json_keys()
    for run in runs:
        assert set(run) <= set(documented), (run["spec"]["mode"], sorted(set(run) - set(documented)))
        assert all(f"`{key}`" in documented["process"] for key in run["process"]), sorted(run["process"])
    written = "".join(p.read_text() for p in (REPO / "scripts" / "tilelang_churn" / "trace").glob("*.py"))
    assert [key for key in documented if f'"{key}"' not in written] == []


@pytest.mark.slow
def test_a_second_dry_run_has_nothing_to_do(finished_run):
    proc = snakemake(finished_run, "-n", "--configfile", "config/test_config.yaml")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def batch_priorities(workdir: Path, *args: str) -> dict:
    """rule name -> priority of every trace batch that a dry run with ARGS would run."""
    proc = snakemake(workdir, "-n", "--configfile", "config/test_config.yaml", *args)
    assert proc.returncode == 0, proc.stderr
    return dict(re.findall(r"^rule (trace\w+):\n(?:    .*\n)*?    priority: (\d+)$", proc.stdout, re.M))


@pytest.mark.slow
def test_a_batch_that_runs_again_is_ordered_by_what_its_jobs_took(finished_run):
    """A batch run again gets as its priority the seconds its jobs' run.json recorded (a job served by another's
    lowering: none of its own), not the model's guess (batches.learned_seconds)."""
    release = version_of(finished_run)
    batches = [p.stem for p in (finished_run / "results" / "benchmarks" / "trace" / release).glob("*.tsv")]
    priority = batch_priorities(finished_run, "--forcerun", *batches)
    assert sorted(priority) == sorted(batches)
    recorded = {}
    for path in (finished_run / "results" / "runs").glob("*/*/*/*/run.json"):
        run = json.loads(path.read_text())
        batch = f"trace_env_{release.replace('.', '_')}_gemm" if run["spec"]["mode"] == "trace-env" else None
        batch = batch or f"trace_{release.replace('.', '_')}_gemm"
        own = run.get("lowering", {}).get("by", run["out_dir"]) == run["out_dir"]
        recorded[batch] = recorded.get(batch, 0.0) + (run["wall_seconds"] if own else 0.0)
    assert {name: int(value) for name, value in priority.items()} == {
        name: round(seconds) for name, seconds in recorded.items()
    }


@pytest.mark.slow
def test_a_job_on_a_cluster_node_orders_its_batches_without_reading_the_records(finished_run, tmp_path):
    """Remote execution (a job step on a cluster node, which parses the Snakefile again) gives each batch the
    priority it has in a folder with no records, without reading the records beside it."""
    workdir = copy_of_finished_run(finished_run, tmp_path / "run")
    for path in (workdir / "results" / "runs").glob("*/*/*/*/run.json"):
        run = json.loads(path.read_text())
        path.write_text(json.dumps(run | {"wall_seconds": 1000.0}))  # records no model would guess
    release = version_of(workdir)
    batches = [p.stem for p in (workdir / "results" / "benchmarks" / "trace" / release).glob("*.tsv")]
    on_a_node = batch_priorities(workdir, "--forcerun", *batches, "--mode", "remote")
    from_nothing = batch_priorities(make_workdir(tmp_path / "empty"))
    assert sorted(on_a_node) == sorted(batches) and on_a_node == from_nothing
    assert max(map(int, batch_priorities(workdir, "--forcerun", *batches).values())) >= 1000


@pytest.mark.slow
def test_a_batch_that_runs_alone_gets_the_cores_the_grid_would_share(finished_run):
    """The cores go to the batches this run runs (job_cost.share_cores): the trace-env batch run again at --cores 4
    gets a core for each lowering it ran (a trace-env job's, which served an instrument job too) up to 4, not the 2
    that an equal share among the grid's two batches gives it."""
    release = version_of(finished_run)
    batch = f"trace_env_{release.replace('.', '_')}_gemm"
    records = [json.loads(path.read_text()) for path in (finished_run / "results" / "runs").glob("*/*/*/*/run.json")]
    lowerings = {run["lowering"]["by"] for run in records if run["spec"]["mode"] in ("trace-env", "instrument")}
    proc = snakemake(finished_run, "-n", "--configfile", "config/test_config.yaml", "--cores", "4", "--forcerun", batch)
    assert proc.returncode == 0, proc.stderr
    threads = dict(re.findall(r"^rule (trace\w+):\n(?:    .*\n)*?    threads: (\d+)$", proc.stdout, re.M))
    assert threads == {batch: str(min(4, len(lowerings)))} and len(lowerings) > 2


@pytest.mark.slow
def test_snakemake_from_another_venv_reruns_nothing(finished_run, tmp_path):
    """The interpreter is not a param: the same packages under another venv path find every job done."""
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix):
        pytest.skip("the tests do not run in a venv, so there is no venv path to change")
    other = tmp_path / "another-venv"
    (other / "bin").mkdir(parents=True)
    (other / "pyvenv.cfg").write_text((venv / "pyvenv.cfg").read_text())
    (other / "lib").symlink_to(venv / "lib")
    (other / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    python = str(other / "bin" / "python")
    where = subprocess.run(
        [python, "-c", "import sys, snakemake; print(sys.executable)"], capture_output=True, text=True
    )
    assert where.returncode == 0 and where.stdout.strip() == python, where.stderr
    proc = snakemake(finished_run, "-n", "--configfile", "config/test_config.yaml", python=python)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_bad_config_stops_before_any_job_and_keeps_the_results(finished_run):
    churn = (finished_run / "results" / "churn.csv").read_bytes()
    bad = finished_run / "config" / "bad.yaml"
    bad.write_text("targets: [cuda-sm90, cuda-sm99]\nshapes: [{M: 256, N: 256, K: 0}]\n")
    proc = snakemake(
        finished_run, "--cores", "1", "--configfile", "config/test_config.yaml", str(bad.relative_to(finished_run))
    )
    assert proc.returncode != 0
    assert re.search(r"config shapes\[0\]\.K: 0", proc.stdout + proc.stderr)
    assert (finished_run / "results" / "churn.csv").read_bytes() == churn
    bad.write_text("targets: [cuda-sm90, cuda-sm99]\n")
    proc = snakemake(finished_run, "-n", "--configfile", "config/test_config.yaml", str(bad.relative_to(finished_run)))
    assert proc.returncode != 0
    assert "config targets[1]: unknown target 'cuda-sm99'" in proc.stdout + proc.stderr


@pytest.mark.integration
def test_static_target_runs_with_tilelang_unimportable(tmp_path):
    workdir = make_workdir(tmp_path / "wf")
    env = tilelang_blocked_env(tmp_path / "block")
    check = subprocess.run([sys.executable, "-c", "import tilelang"], env=env, capture_output=True, text=True)
    assert check.returncode != 0 and "blocked by the test" in check.stderr

    proc = snakemake(workdir, "--cores", "1", "static", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (workdir / "results" / "static" / "static_check.txt").read_text()
    assert report.startswith("py_compile: ok") and "no entry point was verified" in report
    assert not (workdir / "results" / "runs").exists()


@pytest.mark.integration
def test_lint_reports_nothing(tmp_path):
    proc = snakemake(make_workdir(tmp_path), "--lint")  # its own working directory, not the checkout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


@pytest.mark.integration
def test_the_default_config_asks_for_132_trace_jobs_the_static_check_and_the_book(tmp_path):
    workdir = make_workdir(tmp_path)  # the checkout's config, in a working directory of its own
    proc = snakemake(workdir, "-n", "--forceall", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr
    counts = rule_counts(proc.stdout)
    release = release_envs.installed_release().replace(".", "_")
    # (5 GEMM shapes + 3 FlashAttention + 3 RMSNorm parameter sets) x 3 targets: 33 trace-env jobs, each with the
    # instrument job its lowering serves (share_lowering), in four batches, the 66 of trace-api and pass-diff in
    # four (at most trace_batch_seconds, 18, each; the grid's own cut, batches.make_batches, names them)
    from tilelang_churn.grid import config_checks, job_grid

    grid = job_grid.build_grid(
        config_checks.validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    )
    expected = {batch.name: 1 for batch in grid.batches}
    assert len(expected) == 8 and sum(1 for name in expected if name.startswith(f"trace_env_instrument_{release}")) == 4
    assert trace_batch_counts(proc.stdout) == expected
    assert counts["static_check"] == 1 and counts["book_figures_render"] == 1
    proc = snakemake(workdir, "-n", "--forceall")
    jobs = set(re.findall(r"results/runs/[^,\s]+/passes\.csv", proc.stdout))
    assert len(jobs) == 132
    assert len({job for job in jobs if "/flash_attention" in job}) == 3 * 3 * 4


def pins(lines) -> dict:
    found = {}
    for line in lines:
        match = re.match(r"\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def test_conda_environments_agree_with_requirements():
    required = pins((REPO / "requirements.txt").read_text().splitlines())
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    assert pip_section == ["-r requirements.txt", "-e ."]  # the pins, then the project (pyproject.toml), editable
    assert "python=3.11" in environment["dependencies"]
    rule_env = yaml.safe_load((REPO / "workflow" / "envs" / "tilelang.yaml").read_text())
    rule_pins = pins(next(item["pip"] for item in rule_env["dependencies"] if isinstance(item, dict)))
    assert rule_pins and all(required[name] == version for name, version in rule_pins.items())
    assert {"torch", "tilelang", "pandas", "matplotlib"} <= set(rule_pins)


@pytest.mark.slow
def test_the_report_builds_with_every_figure(finished_run):
    proc = snakemake(finished_run, "--configfile", "config/test_config.yaml", "--report", "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    # one per job, the heatmap, and the book's figures 1, 2 and 4 (3 needs several releases)
    assert len(re.findall(r"^Adding .+\.png", output, re.M)) == 12 + 1 + 3
    assert (finished_run / "report.html").stat().st_size > 100_000


# ------------------------------------------------------------------------------ comparing releases


# A release_env_dir whose text would run commands if it reached a shell unquoted (the path itself is harmless).
HOSTILE_DIR_NAME = "envs ü;touch {canary};$(touch {canary}2);`touch {canary}3`"


def compare_args(release_env_dir: Path) -> tuple[str, ...]:
    """The comparison's config files and its release_env_dir, as compared_run runs it."""
    config = ("--configfile", "config/test_config.yaml", "config/compare_test_config.yaml")
    return (*config, "--config", f"release_env_dir={release_env_dir}")


@pytest.fixture(scope="session")
def compared_run(tmp_path_factory, release_envs_dir):
    """The small grid over three real releases, run as a user would from a checkout at a path with spaces and
    non-ASCII characters (`snakemake --cores 2` in that folder), with a release_env_dir named to run commands
    if any rule let config text reach a shell unquoted. That folder links to the session's release_envs_dir,
    where the tests of older releases find the environments built."""
    require_tilelang()
    root = tmp_path_factory.mktemp("compare")
    checkout = checkout_copy(root / "dir with spaces ü" / "tilelang churn")
    canary = root / "canary"
    hostile = root / HOSTILE_DIR_NAME.format(canary=canary.name)
    hostile.symlink_to(release_envs_dir, target_is_directory=True)
    args = ("--cores", "2", *compare_args(hostile))
    proc = snakemake(checkout, *args, env=checkout_environ(checkout), own_snakefile=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert not list(root.glob("canary*")), "config text ran as shell"
    assert not list(checkout.glob("canary*")), "config text ran as shell"
    return checkout


def compare_config():
    return yaml.safe_load((REPO / "config" / "compare_test_config.yaml").read_text())


@pytest.mark.slow
def test_each_release_ran_in_its_own_environment(compared_run, release_envs_dir):
    for run_json in (compared_run / "results" / "runs").glob("*/*/*/*/run.json"):
        version = run_json.relative_to(compared_run / "results" / "runs").parts[0]
        info = json.loads(run_json.read_text())
        assert info["versions"]["tilelang"] == version, run_json  # what the imported TileLang itself reported
        # the import of each release's batch wrote its own TileLang cache, beside that release's jobs
        cache = Path(info["process"]["tilelang_cache_dir"])
        assert cache.is_dir() and cache.is_relative_to(compared_run / "results" / "runs" / version)
    envs = {path.parent.name for path in release_envs_dir.glob("tilelang-*/environment.json")}
    assert {"tilelang-0.1.12", "tilelang-0.1.14"} <= envs


@pytest.mark.slow
def test_each_release_lowered_with_its_own_libraries_under_another_s_variables(compared_run, release_envs_dir):
    """Snakemake ran from this process, which imported the installed TileLang and so exports its TVM_LIBRARY_PATH:
    each job's TVM and TileLang libraries are still those of its own release's install."""
    import tilelang

    installed = Path(tilelang.__file__).resolve().parents[1]
    assert Path(os.environ["TVM_LIBRARY_PATH"]).resolve().is_relative_to(installed)
    for run_json in (compared_run / "results" / "runs").glob("*/*/*/*/run.json"):
        info = json.loads(run_json.read_text())
        version = info["versions"]["tilelang"]
        home = installed if version == tilelang.__version__ else (release_envs_dir / f"tilelang-{version}").resolve()
        libraries = [Path(lib).resolve() for lib in info["native_libraries"]]
        assert any(lib.name.startswith("libtilelang") for lib in libraries), run_json
        assert all(lib.is_relative_to(home) for lib in libraries), (run_json, home, libraries)


@pytest.mark.slow
def test_a_release_without_the_modes_tool_gives_one_unsupported_row(compared_run):
    rows = passes_table.read_rows(
        compared_run / "results/runs/0.1.12/cuda-sm90/200x200x200_b64x64x32/trace-api/passes.csv"
    )
    assert [row["status"] for row in rows] == [passes_table.STATUS_UNSUPPORTED]
    assert "tilelang.tools.lower_trace" in rows[0]["error"] and rows[0]["tilelang_version"] == "0.1.12"


@pytest.mark.slow
def test_churn_by_version_sums_each_jobs_rows(compared_run):
    import pandas as pd

    by_version = pd.read_csv(compared_run / "results/compare/churn_by_version.csv")
    config = compare_config()
    assert len(by_version) == len(config["versions"]) * len(config["targets"]) * len(config["modes"])
    churn = frames.read_frame(compared_run / "results" / "churn.csv")
    for row in by_version.itertuples():
        job = churn[
            (churn["tilelang_version"] == row.tilelang_version)
            & (churn["target_name"] == row.target_name)
            & (churn["mode"] == row.mode)
        ]
        if row.unsupported:
            assert list(job["status"]) == [passes_table.STATUS_UNSUPPORTED]
            continue
        runs = job[job["status"].isin(passes_table.CHURN_STATUSES)]
        assert row.pass_runs == len(runs) and row.changed_runs == int(runs["changed"].sum())
        assert row.added_total == int(runs["added"].sum()) and row.deleted_total == int(runs["deleted"].sum())
        stripped = int(runs["added_stripped"].sum() + runs["deleted_stripped"].sum())
        assert row.churn_stripped_total == stripped <= row.churn_total  # both totals, per release


@pytest.mark.slow
def test_alignment_keeps_every_pass_run_of_both_releases(compared_run):
    import pandas as pd

    alignment = pd.read_csv(compared_run / "results/compare/pass_alignment.csv", keep_default_na=False)
    churn = frames.read_frame(compared_run / "results" / "churn.csv")
    pairs = alignment.groupby(["target_name", "mode", "release_old", "release_new"])
    assert pairs.ngroups >= 2
    for (target, mode, old, new), rows in pairs:
        kept = rows[rows["op"] == "kept"]
        # one pass on both sides: the same identity, or the same pass under its name in the newer release
        same = kept["pass_id_old"] == kept["pass_id_new"]
        assert (same | (kept["renamed"] != "")).all() and (
            kept.loc[same, "pass_old"] == kept.loc[same, "pass_new"]
        ).all()
        for release, side, op in ((old, "old", "removed"), (new, "new", "added")):
            job = churn[(churn["tilelang_version"] == release) & (churn["target_name"] == target)]
            pass_runs = (*passes_table.CHURN_STATUSES, passes_table.STATUS_FAILED)
            job = job[(job["mode"] == mode) & job["status"].isin(pass_runs)]
            mine = rows[rows["op"].isin(["kept", op])]
            assert list(mine[f"pass_{side}"]) == list(job["pass"]), (target, mode, release)


@pytest.mark.slow
def test_a_pass_anonymous_in_one_release_and_named_in_the_next_pairs_with_itself(compared_run, release_envs_dir):
    """0.1.12 makes AddWrapperForSingleBufStore as a bare ``pass_fn``; 0.1.14 gives it a name. The pair aligns it with
    itself (kept, "named ... in 0.1.14"), not as a pass_fn removed and another pass added. The names are TileLang's
    own: each release's factory asked for its pass's name in that release's environment."""
    import pandas as pd
    from tilelang_churn.releases import release_process

    names = {}
    for release in ("0.1.12", "0.1.14"):
        python = release_envs_dir / f"tilelang-{release}" / "bin" / "python"
        asked = "import tilelang.transform as t; print(t.AddWrapperForSingleBufStore().info.name)"
        done = subprocess.run([str(python), "-c", asked], capture_output=True, text=True, timeout=300,
                              env=release_process.release_environ(), check=True)  # fmt: skip
        names[release] = done.stdout.strip().splitlines()[-1]
    assert names["0.1.12"] == "pass_fn" and "." in names["0.1.14"]
    alignment = pd.read_csv(compared_run / "results/compare/pass_alignment.csv", keep_default_na=False)
    pair = alignment[(alignment["release_old"] == "0.1.12") & (alignment["release_new"] == "0.1.14")]
    pair = pair[pair["mode"] == "instrument"]
    row = pair[pair["pass_id_new"] == names["0.1.14"]]
    assert list(row["op"]) == ["kept"] and list(row["pass_old"]) == ["pass_fn"]
    assert list(row["pass_id_old"]) == ["tilelang.transform.AddWrapperForSingleBufStore"]
    assert list(row["renamed"]) == [f"named {names['0.1.14']} in 0.1.14"]
    assert (
        not pair.loc[pair["op"] != "kept", ["pass_id_old", "pass_id_new"]]
        .apply(lambda column: column.str.contains("AddWrapperForSingleBufStore"))
        .any()
        .any()
    )
    divergence = pd.read_csv(compared_run / "results/compare/divergence.csv", keep_default_na=False)
    notes = divergence[(divergence["release_new"] == "0.1.14") & (divergence["mode"] == "instrument")]["note"]
    assert notes.str.contains(f"AddWrapperForSingleBufStore named {names['0.1.14']} in 0.1.14", regex=False).all()
    # every anonymous run of both releases has its factory, never a bare pass_fn
    assert not (alignment[["pass_id_old", "pass_id_new"]] == "pass_fn").any().any()


@pytest.mark.slow
def test_divergence_reads_the_kept_ir_of_the_instrument_jobs(compared_run):
    import pandas as pd

    divergence = pd.read_csv(compared_run / "results/compare/divergence.csv", keep_default_na=False)
    instrument = divergence[divergence["mode"] == "instrument"]
    assert len(instrument) == len(compare_config()["targets"]) * (len(compare_config()["versions"]) - 1)
    assert not instrument["note"].str.contains("no IR archive").any()
    for archive in (compared_run / "results" / "runs").glob("*/*/*/instrument/ir.json.gz"):
        assert 0 < archive.stat().st_size < 200_000


@pytest.mark.slow
def test_the_comparison_draws_the_book_without_figure_4(compared_run):
    """Over three releases, the grid is the book's reference configuration alone: figure 3 (the releases) is
    drawn, figure 4 (one change at a time) has nothing to compare and is reported as not made, and the run ends."""
    book = compared_run / "results" / "book" / "en"
    manifest = (book / "FIGURES.md").read_text()
    assert "| fig3_releases | `fig3_releases.png`" in manifest
    assert "| fig4_variants | not made |" in manifest and "in exactly one respect" in manifest
    assert not list(book.glob("fig4_variants.*")) and (book / "fig3_releases.pdf").is_file()


@pytest.mark.slow
def test_a_comparison_made_again_reruns_figure_3_alone_of_the_book(compared_run):
    """What adding a release reruns of the book: figure 3 reads the comparison's table, the other figures and
    FIGURES.md only the book release's jobs, so a comparison made again redraws figure 3 and leaves them."""
    hostile = compared_run.parents[1] / HOSTILE_DIR_NAME.format(canary="canary")
    args = ("-n", "--forcerun", "compare_releases", *compare_args(hostile))
    proc = snakemake(compared_run, *args, env=checkout_environ(compared_run), timeout=600, own_snakefile=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = rule_counts(proc.stdout)
    assert counts.get("compare_releases") == 1 and counts.get("book_releases_figure") == 1, counts
    assert "book_figures_render" not in counts and not any(rule.startswith("trace") for rule in counts), counts


@pytest.mark.slow
def test_release_figures_are_real(compared_run):
    import matplotlib.image as mpimg
    import numpy as np

    for name in ("release_heatmap", "release_trend"):
        pixels = mpimg.imread(compared_run / "results" / "compare" / f"{name}.png")
        assert min(pixels.shape[:2]) > 200 and np.asarray(pixels[..., :3]).std() > 0.05, name


@pytest.mark.slow
def test_the_comparison_pages_of_the_real_run(compared_run, tmp_path):
    """index.html links every configuration x pair to its page; in Chromium, an instrument pair's first divergent
    edit shows both releases' diff (tests/test_compare_pages.py drives it)."""
    import pandas as pd
    from test_compare_pages import check_real_pages

    compare = compared_run / "results" / "compare"
    divergence = pd.read_csv(compare / "divergence.csv", keep_default_na=False)
    pages = sorted((compare / "pages").glob("*.html"))
    assert len(pages) == len(divergence)
    instrument = divergence[divergence["mode"] == "instrument"]
    assert (instrument["first_divergent_edit"] != "").any()  # the frontend changed, and a pass behaves differently
    assert sum(page.stat().st_size for page in pages) < 2_000_000
    check_real_pages(compare, tmp_path / "page.png")


@pytest.mark.slow  # a browser
def test_a_real_pairs_edits_read_at_1000_and_1400_px(compared_run, release_envs_dir, tmp_path):
    """The instrument pair 0.1.14 -> 0.1.15 of the real run: the index's reconvergence statement, the third view
    (each release's edit against the other's) without sideways scrolling at both widths, the keys, the toggles and
    the copied finding, against the run's pass_alignment.csv and divergence.csv (tests/test_compare_pages.py)."""
    import pandas as pd
    from test_compare_pages import assert_reading_views, check_reading_views

    compare = compared_run / "results" / "compare"
    divergence = pd.read_csv(compare / "divergence.csv", keep_default_na=False)
    pair = divergence[(divergence["mode"] == "instrument") & (divergence["release_new"] == "0.1.15")]
    expected = pair.iloc[0].to_dict()
    # the pass links: 0.1.14's from its environment, the installed release's from beside the workflow
    sources = {
        release: tilelang_source.env_source(release_envs.env_dir(release_envs_dir, release))
        if release != release_envs.installed_release()
        else tilelang_source.find_installed_source()
        for release in (expected["release_old"], expected["release_new"])
    }
    assert_reading_views(check_reading_views(compare, expected, tmp_path), expected, sources)


# ------------------------------------------------------------------------------ as a module of another project


@pytest.fixture(scope="session")
def module_host(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A project of a user's that runs the workflow as a module (`module tlchurn: snakefile: ...; config: config`,
    `use rule * from tlchurn as tlchurn_*`, as the Snakemake workflow catalog asks), on a grid of the book's
    reference alone (one shape, one target, one mode): its folder and its `snakemake --cores 2`."""
    require_tilelang()
    host = tmp_path_factory.mktemp("module") / "host project"
    (host / "config").mkdir(parents=True)
    shape = {"M": 200, "N": 200, "K": 200, "block": [64, 64, 32]}
    config = {"shapes": [shape], "targets": ["cuda-sm90"], "modes": ["instrument"]}
    config["book_reference"] = {"target": "cuda-sm90", "shape": "200x200x200_b64x64x32"}
    (host / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (host / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        f"module tlchurn:\n    snakefile:\n        {str(REPO / 'Snakefile')!r}\n    config:\n        config\n\n\n"
        "use rule * from tlchurn as tlchurn_*\n"
    )
    return host, snakemake(host, "--cores", "2", own_snakefile=True)


@pytest.mark.slow
def test_the_workflow_runs_as_a_module_of_another_project(module_host):
    """The rules find their scripts through the module's own files."""
    host, proc = module_host
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    ran = set(re.findall(r"\(Rule: (\w+)\)", proc.stdout + proc.stderr))
    assert {"tlchurn_static_check", "tlchurn_churn_table", "tlchurn_book_figures_render"} <= ran, ran
    (passes,) = (host / "results" / "runs").glob("*/cuda-sm90/200x200x200_b64x64x32/instrument/passes.csv")
    rows = passes_table.read_rows(passes)
    assert rows and {row["tilelang_version"] for row in rows} == {release_envs.installed_release()}
    churn = frames.read_frame(host / "results" / "churn.csv")
    assert len(churn) == len(rows)
    assert (host / "results" / "static" / "static_check.txt").read_text().startswith("py_compile: ok")


@pytest.mark.slow
def test_a_grid_of_the_reference_alone_runs_to_the_end_without_figures_3_and_4(module_host):
    """Rule all (traces, tables, figures, the book) ends with exit 0 and leaves nothing to do; FIGURES.md and the
    rule's log say why figures 3 and 4 were not made. (Over three releases:
    test_the_comparison_draws_the_book_without_figure_4.)"""
    from test_book_figures import expected_files
    from tilelang_churn.figures import book_figures

    host, proc = module_host
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert rule_counts(proc.stdout + proc.stderr).get("tlchurn_book_figures_render") == 1
    again = snakemake(host, "-n", own_snakefile=True)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    book = host / "results" / "book" / "en"
    assert {path.name for path in book.iterdir()} == expected_files(["fig1_reference_passes", "fig2_pass_heatmap"])
    manifest = (book / book_figures.MANIFEST).read_text()
    assert "| fig3_releases | not made | the config compares no releases" in manifest
    why = (
        f"no configuration of TileLang {release_envs.installed_release()}, mode instrument differs from the reference"
        " (200\u00b3, cuda-sm90"
    )
    assert f"| fig4_variants | not made | {why}" in manifest and "in exactly one respect" in manifest
    assert f"fig4_variants not made: {why}" in (host / "logs" / "book" / "book_figures_en.log").read_text()


@pytest.mark.slow
def test_an_environment_that_lost_its_python_is_rebuilt(compared_run, release_envs_dir, tmp_path):
    """Its marker survives, but each run checks it (release_envs.stale_reason): rule release_env rebuilds it."""
    root = tmp_path / "envs"
    env = root / "tilelang-0.1.14"
    # what is left of the comparison's real 0.1.14 environment once its python and packages are gone
    (env / "bin").mkdir(parents=True)
    for name in ("environment.json", "pyvenv.cfg"):
        shutil.copy2(release_envs_dir / "tilelang-0.1.14" / name, env / name)
    marker = env / "environment.json"
    assert release_envs.stale_reason(marker)
    workdir = make_workdir(tmp_path / "wf")
    grid = {"versions": ["0.1.14", "0.1.15"], "targets": ["cuda-sm90"], "modes": ["instrument"]}
    (workdir / "config" / "grid.yaml").write_text(yaml.safe_dump(grid | {"release_env_dir": str(root)}))
    args = ("--configfile", "config/test_config.yaml", "config/grid.yaml", "--cores", "1", "--until", "release_env")
    proc = snakemake(workdir, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert f"Rebuilding the environment of TileLang 0.1.14: {env / 'bin' / 'python'} is missing" in proc.stderr
    assert release_envs.stale_reason(marker) is None
    imported = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('tilelang'))"],
        capture_output=True,
        text=True,
    )
    assert imported.stdout.strip() == "0.1.14", imported.stderr


@pytest.mark.integration
def test_the_books_reference_takes_a_mode_its_release_has(tmp_path):
    """0.1.12 has no lower_trace, which is known once its environment is built: the book's figures get its job in
    each configured mode (trace-env first) and take the first that ran (instrument: its trace-env job is one
    "unsupported" row). A version probed before any build without the mode (a wheel without lower_trace) leaves the
    book out, saying why."""
    import zipfile

    workdir = make_workdir(tmp_path / "wf")
    grid = {"versions": ["0.1.12"], "targets": ["cuda-sm90"], "modes": ["trace-env", "instrument"]}
    (workdir / "config" / "grid.yaml").write_text(yaml.safe_dump(grid))
    args = ("-n", "book_figures", "--configfile", "config/test_config.yaml", "config/grid.yaml")
    proc = snakemake(workdir, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference = re.search(r"^rule book_figures_render:\n\s+input: (.+)$", proc.stdout, re.M).group(1)
    for mode in ("trace-env", "instrument"):
        assert f"results/runs/0.1.12/cuda-sm90/256x256x256_b64x64x32/{mode}/passes.csv" in reference
    wheel = tmp_path / "tilelang-0.1.12+old-py3-none-any.whl"  # a TileLang with neither lower_trace nor pass_diff
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tilelang-0.1.12+old.dist-info/METADATA", "Name: tilelang\nVersion: 0.1.12+old\n")
        archive.writestr("tilelang/__init__.py", "")
    only = grid | {"versions": [{"name": "old", "wheel": str(wheel)}], "modes": ["trace-env"]}
    (workdir / "config" / "grid.yaml").write_text(yaml.safe_dump(only))
    proc = snakemake(workdir, "-n", "--configfile", "config/test_config.yaml", "config/grid.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "book_figures_render" not in proc.stdout
    assert "reference release old has the tool of none of the configured modes" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_an_older_release_knocks_out_passes_in_its_lowering_and_its_compile(compared_run, release_envs_dir, tmp_path):
    """0.1.12 (the comparison's environment, built by compared_run): no tilelang.instrumentation, so the knockout
    reaches tilelang.compile through every PassContext the compile makes; TVM skips the pass in both paths."""
    from tilelang_churn.core import knockout_rows, statuses
    from tilelang_churn.knockout import pass_knockout
    from tilelang_churn.releases import release_process
    from tilelang_churn.tables import knockout_table

    env = release_envs_dir / "tilelang-0.1.12"  # started clean: this process's TVM_LIBRARY_PATH names another install
    args = ["--mode", "instrument", "--shape", "256,256,256", "--block", "64,64,32", "--target", "cuda-sm90"]
    args += ["--release-env", str(env), "--expect-release", "0.1.12"]
    out = tmp_path / "runs" / "v" / "t" / "c"
    (tmp_path / "jobs.json").write_text(json.dumps([{"args": [*args, "--out", str(out)], "log": str(out) + ".log"}]))
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "knockout_batch.py"), "--jobs", str(tmp_path / "jobs.json"),
         "--passes", "tl.Simplify", "--release-env", str(env)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (tmp_path / "device.json").write_text(json.dumps({"gpu_name": "none", "gpu_arch": "sm_90", "gpu_uuid": "old"}))
    gpu = tmp_path / "gpu" / "v" / "t" / "c" / "knockout_gpu.csv"
    script, record = REPO / "scripts" / "knockout_gpu.py", out / "knockout.json"
    done = subprocess.run(
        [str(env / "bin" / "python"), str(script), "--knockout", str(record), "--device", str(tmp_path / "device.json"),
         "--out", str(gpu), "--workers", "2", *args[2:8], "--expect-release", "0.1.12"],
        capture_output=True, text=True, timeout=900, env=release_process.release_environ(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    joined = knockout_table.read_configuration(record, gpu.with_suffix(".json"))
    rows = {row["variant"]: row for row in joined}
    assert {row["tilelang_version"] for row in rows.values()} == {"0.1.12"}
    # tl.Simplify by its full name: one of the two passes "Simplify" names in 0.1.12, one variant (each compiles)
    assert set(rows) == {"baseline", "tl.Simplify"}
    assert {row["knocked_pass"] for row in rows.values()} == {"", "Simplify"}
    for name in [name for name in rows if name != "baseline"]:
        assert rows[name]["skipped_runs"] >= 1 and rows[name]["status"] == statuses.STATUS_LOWERED
        assert rows[name]["compile_hook"] == pass_knockout.HOOK_PASS_CONTEXT, rows[name]["gpu_error"]
        assert rows[name]["compile_skipped_runs"] >= 1
        assert rows[name]["gpu_status"] in (statuses.STATUS_COMPILE_FAILED, statuses.STATUS_LAUNCH_FAILED)  # no GPU
    assert rows[knockout_rows.BASELINE]["compile_hook"] == pass_knockout.HOOK_NONE
