"""The kernel import probe (kernel/kernel_probe.py) on the cases of issue 29: what a kernel's source computes (its
@autotune configs, its decorator's pass_configs) read by importing it in a real child process with the real
TileLang, from kernels written here. An edit of a file the import read is seen, an import that leaves a process
behind or never ends is stopped (nothing left running), a cache that does not read is a miss said in one line,
and an endless configs generator stops at autotune_max.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import yaml
from conftest import require_tilelang
from tilelang_churn.core import jobs
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.kernel import kernel_probe

# a kernel as TileLang's users write one, its settings computed by functions the file defines (HEAD fills them)
KERNEL = """
import importlib
import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune

HERE = Path(__file__).parent
{head}


@autotune(configs=get_configs(), warmup=1, rep=1)
@tilelang.jit(out_idx=[-1], pass_configs=pass_settings())
def add(M, N, block_M=64, block_N=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j]

    return main
"""
PLAIN = """
def get_configs():
    return [{"block_M": 32}, {"block_M": 64}]


def pass_settings():
    return {tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True}
"""
PLAIN_ANSWER = {
    "pass_configs": {"tl.disable_tma_lower": True},
    "out_idx": [-1],
    "autotune_configs": [{"block_M": 32}, {"block_M": 64}],
}


def write_kernel(folder: Path, head: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "kernel.py"
    file.write_text(KERNEL.format(head=head))
    return file


def new_run() -> None:
    """What another dry run starts with: nothing of this process's answers, only the cache on disk."""
    kernel_probe._probed.clear()


def cache_files(workdir: Path) -> list[Path]:
    return sorted((workdir / kernel_probe.CACHE_DIR).glob("*.json"))


def gone(pid: int) -> bool:
    """The process is no more (a zombie left to be reaped by init counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def all_gone(pids: list[int], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if all(gone(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return all(gone(pid) for pid in pids)


def autotune_config(file: Path, **more) -> dict:
    cfg = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"], **more}
    cfg["kernels"] = [{"name": "k", "file": str(file), "function": "add", "defaults": {"M": 128, "N": 128},
                       "params": "autotune", **cfg.pop("entry", {})}]  # fmt: skip
    return config_checks.validate_config(cfg)


@pytest.mark.integration
def test_an_edit_of_a_file_or_module_the_import_read_is_probed_again(tmp_path, monkeypatch, capfd):
    """get_configs() reads a data file beside the kernel (through a package of its folder), pass_settings() a
    module imported by a name the source does not spell: an edit of either (the kernel file itself unchanged) is a
    new answer, not the cached one; with nothing edited the cache answers, no import."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "my kernels"
    (folder / "tuning").mkdir(parents=True)
    (folder / "tuning" / "__init__.py").write_text("")
    (folder / "tuning" / "space.py").write_text(
        "import json\nfrom pathlib import Path\n\n\ndef configs():\n"
        "    return json.loads((Path(__file__).parents[1] / 'configs.json').read_text())\n"
    )
    (folder / "configs.json").write_text(json.dumps([{"block_M": 32}, {"block_M": 64}]))
    (folder / "knobs.py").write_text("PASS_CONFIGS = {'tl.disable_tma_lower': True}\n")
    file = write_kernel(
        folder,
        """
from tuning.space import configs


def get_configs():
    return configs()


def pass_settings():
    return importlib.import_module("kno" + "bs").PASS_CONFIGS
""",
    )

    def probed() -> tuple[dict, bool]:
        new_run()
        capfd.readouterr()
        found = kernel_probe.probe(file, "add", {})
        return found, "job_grid: importing" in capfd.readouterr().err

    found, imported = probed()
    assert imported and found["autotune_configs"] == [{"block_M": 32}, {"block_M": 64}]
    assert found["pass_configs"] == {"tl.disable_tma_lower": True}
    assert probed() == (found, False)  # nothing edited: the cache's answer, no import

    (folder / "configs.json").write_text(json.dumps([{"block_M": 16}]))
    found, imported = probed()
    assert imported and found["autotune_configs"] == [{"block_M": 16}]
    (folder / "knobs.py").write_text("PASS_CONFIGS = {'tl.disable_warp_specialized': True}\n")
    found, imported = probed()
    assert imported and found["pass_configs"] == {"tl.disable_warp_specialized": True}
    assert probed() == (found, False)


@pytest.mark.integration
def test_an_import_that_leaves_a_process_running_ends_with_the_import_and_kills_it(tmp_path, monkeypatch):
    """The kernel's import starts `sleep 1000` and forks a copy that sleeps: the probe answers as soon as the import
    is done (not when the pipes close, 600 s later), with the kernel's settings, and neither process is left."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    file = write_kernel(
        tmp_path / "k",
        PLAIN
        + """
(HERE / "popen.pid").write_text(str(subprocess.Popen(["sleep", "1000"]).pid))
forked = os.fork()
if forked == 0:
    time.sleep(1000)
    os._exit(0)
(HERE / "fork.pid").write_text(str(forked))
""",
    )
    start = time.monotonic()
    found = kernel_probe.probe(file, "add", {}, timeout_s=60)
    took = time.monotonic() - start
    assert found == PLAIN_ANSWER
    assert took < 30, f"the probe took {took:.1f} s"
    pids = [int((file.parent / name).read_text()) for name in ("popen.pid", "fork.pid")]
    assert all_gone(pids), [pid for pid in pids if not gone(pid)]


@pytest.mark.integration
def test_a_cache_that_does_not_read_is_a_miss_said_in_one_line_and_rewritten(tmp_path, monkeypatch, capfd):
    """The cache file holding a list, or an answer missing a field: a miss with one line on stderr naming the file,
    the import runs again and its answer is written back; no traceback, the kernel's settings right."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    file = write_kernel(tmp_path / "k", PLAIN)
    assert kernel_probe.probe(file, "add", {}) == PLAIN_ANSWER
    (cache,) = cache_files(tmp_path)
    good = json.loads(cache.read_text())
    missing_field = copy.deepcopy(good)
    del missing_field["answer"]["add"]["pass_configs"]
    for bad in ([1, 2], missing_field):
        cache.write_text(json.dumps(bad))
        new_run()
        capfd.readouterr()
        assert kernel_probe.probe(file, "add", {}) == PLAIN_ANSWER
        err = capfd.readouterr().err
        said = [line for line in err.splitlines() if "does not read" in line]
        assert len(said) == 1 and str(cache.relative_to(tmp_path)) in said[0] and "Traceback" not in err, err
        assert json.loads(cache.read_text()) == good


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ([], "not a mapping"),
        ({"files": {}}, "no answer"),
        ({"answer": [], "files": {}}, "answer"),
        ({"answer": {"add": "x"}, "files": {}}, "add"),
        ({"answer": {"other": PLAIN_ANSWER}, "files": {}}, "add"),
        ({"answer": {"add": {**PLAIN_ANSWER, "pass_configs": []}}, "files": {}}, "pass_configs"),
        ({"answer": {"add": {**PLAIN_ANSWER, "autotune_configs": [1]}}, "files": {}}, "autotune_configs"),
        ({"answer": {"add": {**PLAIN_ANSWER, "out_idx": "x"}}, "files": {}}, "out_idx"),
        ({"answer": {"add": {"error": 3}}, "files": {}}, "error"),
        ({"answer": {"add": PLAIN_ANSWER}, "files": []}, "files"),
        ({"answer": {"add": PLAIN_ANSWER}}, "files"),
        ({"answer": {"add": PLAIN_ANSWER}, "files": {}, "timed_out_s": "x"}, "timed_out_s"),
    ]
    + [
        ({"answer": {"add": {k: v for k, v in PLAIN_ANSWER.items() if k != key}}, "files": {}}, key)
        for key in PLAIN_ANSWER
    ],  # fmt: skip
)
def test_an_entry_of_the_wrong_shape_is_no_answer(entry, why):
    """Each wrong shape of a cache entry (a list, a field missing or of the wrong type) is refused with the reason,
    never read as data; the right shape reads."""
    assert why in kernel_probe.entry_problem(entry, ["add"])
    assert kernel_probe.entry_problem({"answer": {"add": PLAIN_ANSWER}, "files": {}}, ["add"]) is None
    assert (
        kernel_probe.entry_problem({"answer": {"add": {"error": "x"}}, "files": {}, "timed_out_s": 2}, ["add"]) is None
    )


@pytest.mark.integration
def test_an_endless_configs_generator_stops_at_autotune_max_naming_the_key(tmp_path, monkeypatch):
    """get_configs() an endless generator, called at import or by TileLang with the kernel's arguments: the
    probe reads at most autotune_max + 1 configs and the config check names the key and its value."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    endless = """
def get_configs(*args, **kwargs):
    return ({"block_M": 16 * (i % 4 + 1), "block_N": 16 * i} for i in itertools.count(1))


def pass_settings():
    return {}
"""
    file = write_kernel(tmp_path / "k", endless)
    called = KERNEL.format(head="").split("\n\n\n@autotune")[1].replace("configs=get_configs()", "configs=get_configs")
    file.write_text(file.read_text() + "\n\n@autotune" + called.replace("def add(", "def add_called("))
    with pytest.raises(config_checks.ConfigError) as refused:
        job_grid.build_grid(autotune_config(file, entry={"autotune_max": 5}), installed="0.1.15")
    said = str(refused.value)
    assert "more than kernels[0].autotune_max (5)" in said and str(file.resolve()) in said, said
    # the import that answered for add left add_called's configs to TileLang's call: a second import calls them
    found = kernel_probe.probe(file, "add_called", {"M": 128, "N": 128}, autotune_max=5)
    assert found["autotune_configs"] == [{"block_M": 16 * (i % 4 + 1), "block_N": 16 * i} for i in range(1, 7)]


@pytest.mark.parametrize(
    ("more", "said"),
    [
        ({"autotune_max": 1000000}, r"config kernels\[0\]\.autotune_max: 1000000 is greater than the maximum of 10000"),
        ({"kernel_import_timeout_s": 1e300}, r"config kernel_import_timeout_s: 1e\+300 is greater than the maximum"),
        ({"kernel_import_timeout_s": 0}, r"config kernel_import_timeout_s: 0 is less than or equal to the minimum"),
    ],
)
def test_a_limit_of_the_probe_out_of_range_is_refused_naming_key_and_value(more, said):
    """autotune_max: 1000000 (minutes of configs read, then memory ran out) and a time limit the timers cannot take
    stop the config check in one line naming the key and the value."""
    entry = {"name": "k", "shipped": "rmsnorm", "params": [{}], **{k: v for k, v in more.items() if "autotune" in k}}
    cfg = {"shapes": [], "kernels": [entry], **{k: v for k, v in more.items() if "autotune" not in k}}
    with pytest.raises(config_checks.ConfigError, match=said):
        config_checks.validate_config(cfg)
    schema = yaml.safe_load(config_checks.SCHEMA.read_text())["properties"]
    assert schema[kernel_probe.TIMEOUT_KEY]["maximum"] == jobs.LONGEST_TIMEOUT_S
    assert schema[kernel_probe.TIMEOUT_KEY]["default"] == kernel_probe.PROBE_TIMEOUT_S


@pytest.mark.integration
def test_an_import_past_its_time_limit_is_stopped_named_with_the_key_and_cached_as_failed(tmp_path, monkeypatch, capfd):
    """get_configs() sleeps: after config kernel_import_timeout_s the import is stopped (nothing left running) and
    the config check names the key and the seconds; the next dry run has that answer from the cache at once, and
    a longer limit tries again."""
    require_tilelang()
    monkeypatch.chdir(tmp_path)
    file = write_kernel(tmp_path / "k", PLAIN)
    # get_configs() sleeping before TileLang's import (a limit of seconds suffices), as the after it
    file.write_text(
        """import os, time
from pathlib import Path


def get_configs():
    Path(__file__).with_name("import.pid").write_text(str(os.getpid()))
    time.sleep(1000)


SPACE = get_configs()
"""
        + file.read_text()
    )
    cfg = autotune_config(file, kernel_import_timeout_s=3)
    for attempt in range(2):
        new_run()
        capfd.readouterr()
        start = time.monotonic()
        with pytest.raises(config_checks.ConfigError) as refused:
            job_grid.build_grid(copy.deepcopy(cfg), installed="0.1.15")
        took = time.monotonic() - start
        said = str(refused.value)
        assert "did not end in 3 s and was stopped (config kernel_import_timeout_s: 3;" in said, said
        imported = "job_grid: importing" in capfd.readouterr().err
        assert (imported, took < 3) == (attempt == 0, attempt == 1), (attempt, took)  # the second from the cache
    assert all_gone([int((file.parent / "import.pid").read_text())])
    new_run()
    found = kernel_probe.probe(file, "add", {"M": 128, "N": 128}, timeout_s=4)
    assert "did not end in 4 s" in found["error"]
