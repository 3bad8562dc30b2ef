"""The workflow on a real Slurm cluster, through the Slurm profile (workflow/profiles/slurm), as docs/cluster.md says.

A one-node cluster runs on this machine (tests/slurm_cluster.py: munged, slurmctld and slurmd as root, on
127.0.0.1, accounting off). The profile is copied and edited as docs/cluster.md tells a user to (the partition
set, the account line deleted: this cluster has no accounts), and a small grid runs through it. The trace
and static-check jobs must have gone through sbatch (Slurm's own job history, kept by squeue for MinJobAge,
and the executor's per-job logs), the local rules must not have, the jobs must have run the workflow's venv
Python, and each job's table must equal, byte for byte, that of a local run (the session's run of the test grid,
which holds the small grid's jobs), and the gathered tables' rows those of the same jobs there.

Needs root (the daemons run as root) and Debian's slurm-wlm and munge (`make test` installs them through
tests/system_packages.py; missing: skipped naming the package, failed under CI=true). Not root:
skipped, since the daemons cannot be started. Root but a daemon does not come up: the test fails, saying
which step failed and what the daemon logged.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import conftest
import pandas as pd
import pytest
import system_packages
import yaml
from conftest import require_tilelang
from slurm_cluster import PARTITION, SlurmCluster, SlurmSetupError
from tilelang_churn.releases import release_envs

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "workflow" / "profiles" / "slurm"
PLACEHOLDER = "EDIT-ME"

# The small grid: 1 shape x 1 target x 2 modes = 2 trace jobs, on top of config/test_config.yaml. No
# `instrument` mode: its `seconds` column is a timing and differs from run to run.
SMALL_GRID = {
    "shapes": [{"M": 200, "N": 200, "K": 200, "block": [64, 64, 32]}],
    "targets": ["cuda-sm90"],
    "modes": ["trace-env", "trace-api"],
}
RELEASE = release_envs.installed_release().replace(".", "_")
# rules that must run as Slurm jobs, and how many jobs each: the trace-env job and the trace-api job are batches
# of their own (TL_LOWER_TRACE is read at import)
CLUSTER_RULES = {f"trace_api_{RELEASE}_gemm_cuda_sm90": 1, f"trace_env_{RELEASE}_gemm_cuda_sm90": 1, "static_check": 1}
LOCAL_RULES = (  # rule names, or the start of the names of per-batch rules
    "churn_table",
    "plot_job_churn_",
    "plot_heatmap",
    "release_env",
    "compare_releases",
    "book_figures_render",
    "book_releases_figure",
)
TABLES = ("results/churn.csv", "results/churn_summary.csv")


def make_workdir(dest: Path) -> Path:
    """A working directory with only the config (no Snakefile, no scripts) and the small grid."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "config", dest / "config")
    (dest / "config" / "slurm_test_config.yaml").write_text(yaml.safe_dump(SMALL_GRID))
    return dest


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """conftest.snakemake with the small grid's config files."""
    config = ("--configfile", "config/test_config.yaml", "config/slurm_test_config.yaml")
    return conftest.snakemake(workdir, *config, *args, env=env, timeout=900)


def copy_profile(dest: Path) -> Path:
    """The Slurm profile, copied and edited as docs/cluster.md says: partition set, account line deleted."""
    shutil.copytree(PROFILE, dest)
    config_file = dest / "config.yaml"
    lines = config_file.read_text().splitlines(keepends=True)
    edited = []
    for line in lines:
        key = line.strip().split(":", 1)[0]
        if key == "slurm_account":
            continue  # this cluster has no accounts
        if key == "slurm_partition":
            line = line.replace(PLACEHOLDER, PARTITION)
        edited.append(line)
    config_file.write_text("".join(edited))
    profile = yaml.safe_load(config_file.read_text())
    assert profile["default-resources"] == {"slurm_partition": PARTITION}, profile
    return dest


def test_the_profile_holds_the_cluster_settings_and_the_rules_their_resources():
    """The profile: the executor and the two settings docs/cluster.md says to edit; the rules: what each job needs."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert profile["default-resources"] == {"slurm_account": PLACEHOLDER, "slurm_partition": PLACEHOLDER}
    assert not {"set-resources", "set-threads", "resources"} & set(profile)
    checked = 0
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        # a rule's block: from `rule NAME:` (or `rule:` in a loop, named by `name:`) to the next line indented
        # no deeper than the rule (or the end)
        for indent, name, body in re.findall(r"^( *)rule ?(\w*):\n((?:\1[ \t]+.*\n|\n)*)", smk.read_text(), re.M):
            name = name or re.search(r"name:\n\s+(.+)", body).group(1)
            pad = indent + "    "
            if not re.search(rf"^{pad}(shell|script|run|notebook|wrapper):", body, re.M):
                continue  # no action (all, static, book_figures): always local
            resources = re.search(rf"^{pad}resources:\n((?:{pad}    .*\n)+)", body, re.M)
            assert re.search(rf"^{pad}threads: \S", body, re.M), f"{smk.name}: rule {name} declares no threads"
            assert resources, f"{smk.name}: rule {name} declares no resources"
            assert {"mem_mb", "runtime"} <= set(re.findall(r"(\w+)=", resources.group(1))), (smk.name, name)
            checked += 1
    assert checked >= 7


@pytest.fixture(scope="session")
def cluster():
    system_packages.require("slurm-wlm")
    system_packages.require("munge")
    if os.geteuid() != 0:
        pytest.skip("the one-node Slurm cluster runs munged, slurmctld and slurmd as root; not root here")
    # short and fresh: the munge socket lives in it (unix socket paths are limited to 107 bytes)
    root = Path(tempfile.mkdtemp(prefix="tlslurm-"))
    slurm = SlurmCluster(root)
    try:
        slurm.start()
    except SlurmSetupError as error:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"the one-node Slurm cluster did not start: {error}", pytrace=False)
    yield slurm
    slurm.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_run(cluster, tmp_path_factory):
    require_tilelang()
    base = tmp_path_factory.mktemp("slurm")
    workdir = make_workdir(base / "work")
    profile = copy_profile(base / "profile")
    started = time.monotonic()
    proc = snakemake(
        workdir,
        "--workflow-profile",
        str(profile),
        # this cluster keeps no accounting: job states come from squeue (finished jobs stay for MinJobAge)
        "--slurm-status-command",
        "squeue",
        # a test: poll soon and keep every job's log, to check them below
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--slurm-keep-successful-logs",
        env=cluster.env(),
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        logs = "\n".join(
            f"--- {path}\n{path.read_text(errors='replace')[-2000:]}"
            for path in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))
        )
        ctld_log = cluster.logs / "slurmctld.log"
        pytest.fail(
            f"snakemake through the Slurm profile exited with {proc.returncode}\n{proc.stdout[-3000:]}"
            f"{proc.stderr[-6000:]}\n{logs}\n--- {ctld_log}\n{ctld_log.read_text(errors='replace')[-3000:]}",
            pytrace=False,
        )
    return workdir, proc, cluster.jobs(), seconds


def jobs_by_rule(jobs: list[dict]) -> dict[str, list[dict]]:
    """Slurm jobs grouped by the Snakemake rule the executor named in their comment (rule_<name>[_wildcards_])."""
    grouped: dict[str, list[dict]] = {}
    for job in jobs:
        comment = job["comment"]
        if not comment.startswith("rule_"):
            continue  # the cluster's own smoke test
        rule = comment[len("rule_") :].split("_wildcards_", 1)[0]
        grouped.setdefault(rule, []).append(job)
    return grouped


@pytest.mark.slow
def test_cluster_and_trace_jobs_went_through_sbatch(slurm_run):
    workdir, proc, jobs, _ = slurm_run
    grouped = jobs_by_rule(jobs)
    assert {rule: len(grouped.get(rule, [])) for rule in CLUSTER_RULES} == CLUSTER_RULES, jobs
    for rule in CLUSTER_RULES:
        for job in grouped[rule]:
            assert job["state"] == "COMPLETED", job
            # the executor's log of the Slurm job: the job's own Snakemake ran the rule on the node
            logs = list((workdir / ".snakemake" / "slurm_logs" / f"rule_{rule}").rglob(f"{job['id']}.log"))
            assert len(logs) == 1, (job, logs)
            assert f"rule {rule}:" in logs[0].read_text(errors="replace"), logs[0]
    output = proc.stdout + proc.stderr
    assert output.count("has been submitted with SLURM jobid") == sum(CLUSTER_RULES.values()), output[-3000:]


@pytest.mark.slow
def test_local_rules_did_not_go_to_slurm(slurm_run):
    workdir, _, jobs, _ = slurm_run
    grouped = jobs_by_rule(jobs)
    assert not [rule for rule in grouped if rule.startswith(LOCAL_RULES)], grouped.keys()
    assert all((workdir / path).is_file() for path in TABLES)
    assert len(list((workdir / "results" / "figures" / "churn").rglob("*.png"))) == 2


@pytest.mark.slow
def test_slurm_jobs_ran_the_workflows_venv_python(slurm_run, finished_run):
    workdir, _, _, _ = slurm_run
    # the Snakemake of each Slurm job (the job step on the node) is this venv's
    job_logs = sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))
    assert len(job_logs) == sum(CLUSTER_RULES.values())
    for job_log in job_logs:
        assert command_runs(job_log.read_text(errors="replace"), SNAKEMAKE_MAIN), job_log
    # and the rules' `python3` too: environment.smk puts the venv's bin/ first on PATH, exported with the job
    for run_dir in (workdir, finished_run):
        run_jsons = sorted((run_dir / "results" / "runs").glob("*/*/*/*/run.json"))
        assert len(run_jsons) >= 2 if run_dir == finished_run else len(run_jsons) == 2
        for run_json in run_jsons:
            interpreter = Path(json.loads(run_json.read_text())["command"][0])
            # the folder resolved, not the file: bin/python is itself a link to the base interpreter
            assert interpreter.parent.resolve() == Path(sys.executable).parent.resolve(), (run_json, interpreter)
    static = (workdir / "results" / "static" / "static_check.txt").read_text()
    assert static == (finished_run / "results" / "static" / "static_check.txt").read_text()


SNAKEMAKE_MAIN = Path(importlib.util.find_spec("snakemake").origin).parent / "__main__.py"


def command_runs(log_text: str, program: Path) -> bool:
    """Whether a Snakemake log's `Command:` line starts with PROGRAM, compared as resolved paths: a venv reached
    through a symbolic link names the same file by another path (which may hold spaces)."""
    for line in map(str.strip, log_text.splitlines()):  # Snakemake indents it under its header
        if line.startswith("Command: "):
            words = line.removeprefix("Command: ").split(" ")
            if any(Path(" ".join(words[:n])).resolve() == program.resolve() for n in range(1, len(words) + 1)):
                return True
    return False


@pytest.mark.integration
def test_a_symlinked_venv_runs_the_same_snakemake(tmp_path):
    venv = Path(sys.prefix)
    linked = tmp_path / "venv link ü"
    linked.symlink_to(venv, target_is_directory=True)
    through_link = linked / SNAKEMAKE_MAIN.relative_to(venv)
    assert str(through_link) != str(SNAKEMAKE_MAIN) and through_link.is_file()
    log = f"SNAKEMAKE\n=========\n  Command: {through_link} --snakefile Snakefile --cores 1\n"
    assert command_runs(log, SNAKEMAKE_MAIN)
    assert not command_runs(log.replace("__main__.py", "__init__.py"), SNAKEMAKE_MAIN)
    assert not command_runs(f"Command: {through_link}", venv / "bin" / "python")


@pytest.mark.slow
def test_results_equal_a_local_run(slurm_run, finished_run):
    """Each job's passes.csv byte for byte, and the tables' rows, as the local run of the test grid (a superset of
    the small grid's jobs: config/test_config.yaml) gives them for the same jobs."""
    workdir, _, _, seconds = slurm_run
    passes = sorted(path.relative_to(workdir) for path in (workdir / "results" / "runs").rglob("passes.csv"))
    assert len(passes) == 2
    for path in passes:
        assert (workdir / path).read_bytes() == (finished_run / path).read_bytes(), path
    for table in TABLES:  # read as text: the values as written
        rows = pd.read_csv(workdir / table, dtype=str, keep_default_na=False)
        local = pd.read_csv(finished_run / table, dtype=str, keep_default_na=False)
        local = local[local["target_name"].isin(SMALL_GRID["targets"]) & local["mode"].isin(SMALL_GRID["modes"])]
        local = local[local["params"].isin(set(rows["params"]))].reset_index(drop=True)
        assert len(set(local["params"])) == 1 and len(local) == len(rows), table
        pd.testing.assert_frame_equal(rows, local)
    print(f"Slurm run of the small grid: {seconds:.0f} s")
