"""Nothing from the config reaches a shell unquoted, and every string key with shell text is refused or harmless.

The real run with such a value is `test_workflow.py::compared_run` (a checkout at a path with spaces and
non-ASCII characters, a release_env_dir that would run commands if a rule let it reach a shell unquoted).
"""

from __future__ import annotations

import copy
import functools
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_workdir, rule_counts, snakemake
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.grid.config_checks import ConfigError
from tilelang_churn.releases import release_envs

HOSTILE = "x y;touch /tmp/tlchurn-pwned;$(touch /tmp/tlchurn-pwned2)`id`"
RULES = sorted((REPO / "workflow" / "rules").glob("*.smk")) + [REPO / "Snakefile"]


def shell_commands(text: str) -> list[str]:
    """The string literals of every `shell:` directive of a rule file."""
    commands = []
    for block in re.finditer(r"^(\s*)shell:\n((?:\1\s+.*\n?)+)", text, re.M):
        commands.append("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', block.group(2))))
    return commands


def test_every_placeholder_of_every_shell_rule_is_quoted():
    found = 0
    for path in RULES:
        for command in shell_commands(path.read_text()):
            for placeholder in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", command):
                found += 1
                assert placeholder.endswith(":q"), f"{path.name}: {{{placeholder}}} is not quoted in {command!r}"
    assert found >= 10  # static_check, release_env, compare_releases


def string_keys(schema: dict, path: str = "") -> list[str]:
    """Every key of the schema whose value (or list item) is a string, as config paths ('shapes[].name')."""
    found = []
    kinds = [schema] + schema.get("oneOf", []) + schema.get("anyOf", [])
    for kind in kinds:
        if "$ref" in kind:
            kind = SCHEMA["$defs"][kind["$ref"].rsplit("/", 1)[1]]
        if kind.get("type") == "string" and path not in found:
            found.append(path)
        for name, sub in kind.get("properties", {}).items():
            found += [key for key in string_keys(sub, f"{path}.{name}" if path else name) if key not in found]
        if "items" in kind:
            found += [key for key in string_keys(kind["items"], f"{path}[]") if key not in found]
    return found


SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
BASE = {"shapes": [{"M": 64, "N": 64, "K": 64}], "targets": ["cuda-sm90"], "modes": ["instrument"]}
# config path -> the config with HOSTILE in that place
SETTERS = {
    "release_env_dir": lambda c: c.update(release_env_dir=HOSTILE),
    "shapes[].dtype": lambda c: c["shapes"][0].update(dtype=HOSTILE),
    "shapes[].accum_dtype": lambda c: c["shapes"][0].update(accum_dtype=HOSTILE),
    "shapes[].name": lambda c: c["shapes"][0].update(name=HOSTILE),
    "defaults.dtype": lambda c: c.update(defaults={"dtype": HOSTILE}),
    "defaults.accum_dtype": lambda c: c.update(defaults={"accum_dtype": HOSTILE}),
    "targets[]": lambda c: c.update(targets=[HOSTILE]),
    "targets[].name": lambda c: c.update(targets=[{"name": HOSTILE, "target": {"kind": "cuda"}}]),
    "modes[]": lambda c: c.update(modes=[HOSTILE]),
    "api_passes[]": lambda c: c.update(api_passes=[HOSTILE]),
    "churn_measure": lambda c: c.update(churn_measure=HOSTILE),
    "job_files": lambda c: c.update(job_files=HOSTILE),
    "heatmap_formats[]": lambda c: c.update(heatmap_formats=[HOSTILE]),
    "figure_language": lambda c: c.update(figure_language=HOSTILE),
    "book_reference.target": lambda c: c.update(book_reference={"target": HOSTILE}),
    "book_reference.shape": lambda c: c.update(book_reference={"shape": HOSTILE}),
    "kernels[].name": lambda c: c.update(kernels=[{"name": HOSTILE, "shipped": "rmsnorm", "params": [{}]}]),
    "kernels[].shipped": lambda c: c.update(kernels=[{"name": "k", "shipped": HOSTILE, "params": [{}]}]),
    "kernels[].folders[]": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "params": [{}], "folders": [HOSTILE]}]
    ),
    # no such file: refused; an existing file of any name reaches the trace script as one argv element
    "kernels[].file": lambda c: c.update(kernels=[{"name": "k", "file": HOSTILE, "params": [{}]}]),
    "kernels[].requirements[]": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "params": [{}], "requirements": [HOSTILE]}]
    ),
    "kernels[].function": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "function": HOSTILE, "params": [{}]}]
    ),
    "kernels[].function[]": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "function": ["build", HOSTILE], "params": [{}]}]
    ),
    "kernels[].reference": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "params": [{}], "reference": HOSTILE}]
    ),
    "kernels[].captured.style": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "params": [{}], "captured": {"style": HOSTILE}}]
    ),
    "kernels[].captured.autotune": lambda c: c.update(
        kernels=[{"name": "k", "shipped": "rmsnorm", "params": [{}], "captured": {"autotune": HOSTILE}}]
    ),
    "knockout.passes": lambda c: c.update(knockout={"passes": HOSTILE}),
    "knockout.passes[]": lambda c: c.update(knockout={"passes": [HOSTILE]}),
    "knockout.occurrence": lambda c: c.update(knockout={"occurrence": HOSTILE}),
    # not in the schema's string keys (free-form or untyped), but strings all the same
    "versions[]": lambda c: c.update(versions=[HOSTILE]),
    "targets[].target.arch": lambda c: c.update(targets=[{"name": "t", "target": {"kind": "cuda", "arch": HOSTILE}}]),
}
# Accepted with shell text in them, and why that is safe: each reaches rules only as a quoted shell word (:q,
# checked above) or as a `script:` param / an argv element, never through a shell.
ACCEPTED = {
    "release_env_dir": "a folder path: quoted in rule release_env, an argv element of the trace batches",
    "book_reference.target": "compared with the grid's names; the book's figures are left out when absent",
    "book_reference.shape": "compared with the grid's names; the book's figures are left out when absent",
    "targets[].target.arch": "part of the target's JSON, one argv element of the trace script (TVM judges it)",
    "kernels[].captured.style": "a record of the capture that nothing of the grid reads",
    "kernels[].captured.autotune": "a record of the capture that nothing of the grid reads",
}


OTHER_RELEASE = "0.1.14"


@functools.cache
def hostile_dry_run() -> subprocess.CompletedProcess:
    """`snakemake -n -p` of the test grid on two releases, release_env_dir and book_reference all HOSTILE: what
    reaches the rules, as Snakemake itself formats their shell commands (nothing runs)."""
    workdir = make_workdir(Path(tempfile.mkdtemp(prefix="hostile-")))
    hostile = {"release_env_dir": HOSTILE, "book_reference": {"target": HOSTILE, "shape": HOSTILE}}
    (workdir / "config" / "hostile.yaml").write_text(yaml.safe_dump(dict(hostile, versions=[OTHER_RELEASE, "0.1.15"])))
    proc = snakemake(workdir, "-n", "-p", "--configfile", "config/test_config.yaml", "config/hostile.yaml", timeout=300)
    shutil.rmtree(workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_the_setters_cover_every_string_key_of_the_schema():
    keys = string_keys(SCHEMA)
    assert len(keys) >= 10 and set(keys) <= set(SETTERS)


@pytest.mark.parametrize("key", sorted(SETTERS))
def test_shell_text_in_a_string_key_is_refused_naming_the_key_or_never_reaches_a_shell(key):
    cfg = copy.deepcopy(BASE)
    SETTERS[key](cfg)
    if key in ACCEPTED:
        if key == "release_env_dir":  # another release, so that jobs and rule release_env use the folder
            cfg["versions"] = [OTHER_RELEASE, "0.1.15"]
        grid = job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")
        if key == "targets[].target.arch":  # the whole JSON target stays one argument
            (job,) = grid.jobs.values()
            assert any(HOSTILE in arg for arg in job.args)
            assert job.args[job.args.index("--target") + 1].count(HOSTILE) == 1
        elif key == "release_env_dir":
            env = str(release_envs.env_dir(HOSTILE, OTHER_RELEASE))
            assert grid.release_env(OTHER_RELEASE) == env and grid.release_env("0.1.15") is None
            for job in grid.jobs.values():
                expected = [env] if job.version == OTHER_RELEASE else []
                assert [job.args[i + 1] for i, arg in enumerate(job.args) if arg == "--release-env"] == expected
            # rule release_env's shell command (Snakemake's own, printed by the dry run): the folder is one word
            (command,) = [line for line in hostile_dry_run().stdout.splitlines() if "release_envs.py build" in line]
            words = shlex.split(command.removeprefix("Shell command: "))
            assert words[words.index("--root") + 1] == HOSTILE, command
        elif key.startswith("kernels[].captured."):  # a record: no job's argument holds it
            assert grid.jobs and not any(HOSTILE in arg for job in grid.jobs.values() for arg in job.args)
        else:  # no grid name: the book is left out with a warning naming the value, no book rule is scheduled
            proc = hostile_dry_run()
            field = key.split(".")[1]
            (warning,) = [line for line in proc.stdout.splitlines() if line.startswith("Book figures are left out")]
            assert f"{field} {HOSTILE!r}" in warning
            assert "book_figures_render" not in rule_counts(proc.stdout) and "all" in rule_counts(proc.stdout)
        return
    with pytest.raises(ConfigError) as refused:
        job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")
    message = str(refused.value)
    first = key.split("[")[0].split(".")[0]
    assert message.startswith(f"config {first}"), message
