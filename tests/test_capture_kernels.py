"""scripts/capture_kernels.py: a program run once, unchanged, and every kernel it asks TileLang for written as a
config entry (grid/kernel_capture.py, kernel/capture_hook.py).

The programs are real ones of tests/data/capture/, run as child processes with the real TileLang on this CPU
machine: what they ask for is what their source says they call (the expected entries below are those calls), the
outputs of the stand-in kernels are checked by the programs themselves, and a captured entry's PrimFunc as the
workflow builds it is compared with TileLang's own for the program's call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, require_tilelang
from tilelang_churn.grid import capture_records, kernel_capture
from tilelang_churn.kernel import capture_hook, kernels

CAPTURE = REPO / "scripts" / "capture_kernels.py"
DATA = REPO / "tests" / "data" / "capture"
PREFIX = "capture_kernels.py: "


def run_capture(out: Path, *command: str, options: tuple[str, ...] = (), cwd: Path | None = None, env=None):
    return subprocess.run(
        [sys.executable, str(CAPTURE), *options, "--out", str(out), "--", *command],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def entries(out: Path) -> list[dict]:
    return yaml.safe_load(out.read_text())["kernels"]


def said(proc) -> list[str]:
    return [line.removeprefix(PREFIX) for line in proc.stderr.splitlines() if line.startswith(PREFIX)]


def line_of(path: Path, text: str) -> int:
    (number,) = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return number


# the calls tests/data/capture/program.py makes, as a config names them (a function's defaults left out)
PROGRAM_KERNELS = [
    ("lazy_scale", {"M": 256, "N": 128}),
    ("eager_add", {"M": 96, "N": 64, "block_M": 64}),  # M, N: its T.const names, read from the tensors' shapes
    ("eager_add", {"M": 64, "N": 64}),  # .compile(M=64, N=64, block_M=32): 32 is the default
    ("tuned_copy", {"M": 128, "N": 256, "block_M": 64, "block_N": 64}),  # the first config of its search space
    ("fixed_negate", {}),
    ("build_copy", {"N": 512}),
    ("lazy_scale", {"M": 512, "N": 64}),  # from its subprocess
]


@pytest.mark.integration
def test_a_program_in_every_style_is_captured_as_it_asked_for_its_kernels(tmp_path):
    require_tilelang()
    program = DATA / "program.py"
    out = tmp_path / "kernels.yaml"
    proc = run_capture(out, sys.executable, str(program))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "program: done" in proc.stdout  # every stand-in returned outputs of the shapes and dtypes it checks
    found = entries(out)
    assert [(e["function"], e["params"][0]) for e in found] == PROGRAM_KERNELS
    assert {e["file"] for e in found} == {str(program.resolve())}
    assert [e["name"] for e in found] == [  # the function and the values of the first three parameters it sets
        "lazy_scale_256_128", "eager_add_96_64_64", "eager_add_64_64", "tuned_copy_128_256_64", "fixed_negate",
        "build_copy_512", "lazy_scale_512_64",
    ]  # fmt: skip
    assert all(e["folders"] == [e["name"]] for e in found)
    by_function = {e["function"]: e for e in found}
    builder = by_function["build_copy"]
    assert builder["pass_configs"] == [{"tl.disable_warp_specialized": True}]  # tilelang.compile's, not the kernel's
    assert builder["captured"]["inputs"] == {"A": {"shape": [7, 512], "dtype": "float16"}}  # its first call's
    assert builder["captured"]["out_idx"] == [-1] and builder["captured"]["style"] == "builder"
    assert by_function["tuned_copy"]["captured"]["autotune"] == capture_records.AUTOTUNED
    assert "pass_configs" not in by_function["lazy_scale"]
    inner, callable_ = line_of(program, "make_inner(64)(32)"), line_of(program, "with_callable(64, 64")
    lines = said(proc)
    assert any(
        line.startswith("cannot be replayed: inner") and f"line {inner}" in line and "inside make_inner()" in line
        for line in lines
    ), lines
    assert any(
        f"line {callable_}" in line and "its argument combine is a callable" in line for line in lines
    ), lines  # fmt: skip
    assert lines[-1].startswith("9 kernels recorded (7 that a config can name") and "from 2 processes" in lines[-1]


@pytest.mark.integration
def test_a_captured_entry_builds_the_primfunc_the_program_asked_for(tmp_path):
    """The eager kernel's T.const values read from the program's tensors, and a factory's arguments: the
    workflow's PrimFunc of the captured entry is TileLang's own for the program's call."""
    require_tilelang()
    import torch
    from tilelang import tvm

    program = DATA / "program.py"
    out = tmp_path / "kernels.yaml"
    assert run_capture(out, sys.executable, str(program)).returncode == 0
    found = {(e["function"], json.dumps(e["params"][0], sort_keys=True)): e for e in entries(out)}
    module = kernels.load_module(program)
    x = torch.randn(96, 64)
    theirs = [  # TileLang's own PrimFunc for the program's call: its tensors, its positional arguments
        ("eager_add", {"M": 96, "N": 64, "block_M": 64}, module.eager_add.get_tir(x, x, block_M=64)),
        ("build_copy", {"N": 512}, module.build_copy(512)),
        ("tuned_copy", {"M": 128, "N": 256, "block_M": 64, "block_N": 64},
         module.tuned_copy.jit_impl.get_tir(128, 256, block_M=64, block_N=64)),
    ]  # fmt: skip
    for function, params, func in theirs:
        entry = found[(function, json.dumps(params, sort_keys=True))]
        assert tvm.ir.structural_equal(kernels.build(entry["file"], function, entry["params"][0]), func), function


@pytest.mark.integration
def test_a_tensor_put_on_cuda_ends_the_capture_in_one_line_and_the_file_keeps_what_was_recorded(tmp_path):
    require_tilelang()
    program = DATA / "gpu_late.py"
    out = tmp_path / "kernels.yaml"
    proc = run_capture(out, sys.executable, str(program))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [(e["function"], e["params"]) for e in entries(out)] == [("double", [{"N": 256}])]
    stopped = [line for line in said(proc) if line.startswith("the program stopped")]
    line = line_of(program, 'device="cuda"')
    assert len(stopped) == 1 and f"at {program.relative_to(REPO)}, line {line}: it needs a GPU" in stopped[0], stopped
    assert "--cuda-on-cpu" in stopped[0] and str(out) in stopped[0]
    # again into the same file, torch's cuda device standing in for the CPU: the program goes on to its next kernel
    again = run_capture(out, sys.executable, str(program), options=("--cuda-on-cpu",))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "gpu_late: done" in again.stdout
    assert [(e["function"], e["params"]) for e in entries(out)] == [("double", [{"N": 256}]), ("double", [{"N": 512}])]
    assert "1 new in" in said(again)[-1] and "1 it already had" in said(again)[-1]
    header = [line for line in out.read_text().splitlines() if line.startswith("# 20")]
    assert len(header) == 2 and all(str(program) in line for line in header)  # each program's command and time


@pytest.mark.integration
def test_the_hook_failing_never_breaks_the_program(tmp_path):
    """A record file that cannot be written, and a hook that cannot be loaded: each said once on stderr, and the
    program runs as without capture (a kernel TileLang compiles for the host, run on CPU tensors and checked)."""
    require_tilelang()
    env = kernel_capture.capture_env(tmp_path, tmp_path)  # the record file is a folder: every write fails
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    program = [sys.executable, str(DATA / "host_kernel.py")]
    broken = subprocess.run(program, capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    notes = [line for line in broken.stderr.splitlines() if line.startswith("tilelang-churn capture:")]
    assert broken.returncode == 0 and "host_kernel: 1 kernels right" in broken.stdout, broken.stderr[-2000:]
    assert len(notes) == 1 and "could not hook tilelang" in notes[0], broken.stderr[-2000:]
    env[capture_hook.HOOK_ENV] = str(tmp_path / "no_such_hook.py")
    unloaded = subprocess.run([sys.executable, "-c", "print('program ran')"], capture_output=True, text=True,
                              cwd=tmp_path, timeout=60, env=env)  # fmt: skip
    notes = [line for line in unloaded.stderr.splitlines() if line.startswith("tilelang-churn capture:")]
    assert unloaded.returncode == 0 and unloaded.stdout == "program ran\n"
    assert len(notes) == 1 and "the hook did not load" in notes[0], unloaded.stderr[-2000:]


# ---------------------------------------------------------------------------------------- without TileLang


@pytest.mark.parametrize(
    "text, said_of_it",
    [
        ("kernels: [\n", "line 2: not a YAML file"),
        ("- a\n- b\n", "it holds a list"),
        ("shapes: []\nkernels: []\n", "it also sets shapes"),
        ("kernels: {a: 1}\n", "kernels is a dict, not a list"),
        ("kernels:\n- name: a\n- 3\n", "kernels[1] is a int, not a kernel entry"),
        ("kernels:\n- file: a.py\n", "kernels[0].name is None"),
    ],
)
def test_a_bad_file_stops_the_capture_before_the_program_runs(tmp_path, text, said_of_it):
    out = tmp_path / "kernels.yaml"
    out.write_text(text)
    proc = run_capture(out, sys.executable, "-c", "open('ran', 'w')", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(f"{PREFIX}error: {out}"), proc.stderr
    assert said_of_it in proc.stderr
    assert not (tmp_path / "ran").exists() and out.read_text() == text


def test_a_bad_record_is_one_line_naming_the_record_file_and_line_and_nothing_is_lost(tmp_path):
    out = tmp_path / "kernels.yaml"
    out.write_text("kernels: []\n")
    garbage = "import os; open(os.environ['TLCHURN_CAPTURE_RECORDS'], 'a').write('{\"kind\": \"kernel\"}\\n')"
    proc = run_capture(out, sys.executable, "-c", garbage, cwd=tmp_path)
    kept = tmp_path / "kernels.yaml.records.jsonl"
    lines = said(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "records.jsonl, line 1: a kernel record without pid" in lines[0] and f"kept in {kept}" in lines[0]
    assert kept.read_text() == '{"kind": "kernel"}\n' and out.read_text() == "kernels: []\n"


def test_a_file_spoiled_while_the_program_ran_is_read_again_and_not_overwritten(tmp_path):
    out = tmp_path / "kernels.yaml"
    out.write_text("kernels: []\n")
    spoils = f"open({str(out)!r}, 'w').write('kernels: [\\n')"
    proc = run_capture(out, sys.executable, "-c", spoils, cwd=tmp_path)
    lines = said(proc)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {out}, line 2: not a YAML file") and "nothing was recorded" in lines[0]
    assert out.read_text() == "kernels: [\n" and not (tmp_path / "kernels.yaml.records.jsonl").exists()


def test_records_are_checked_before_they_are_merged(tmp_path):
    path = tmp_path / "records.jsonl"
    good = {"kind": "process", "pid": 1, "gpu": False, "argv": ["x"]}
    for line, problem in [
        ("not json", "line 2: not a JSON record"),
        ('{"kind": "other"}', "line 2: its kind is 'other'"),
        (json.dumps({**good, "pid": True}), "line 2: a process record whose pid is True"),
        (json.dumps({"kind": "call", "pid": 1, "key": "k", "inputs": []}), "line 2: a call record whose inputs"),
    ]:
        path.write_text(json.dumps(good) + "\n" + line + "\n")
        with pytest.raises(capture_records.CaptureError) as error:
            capture_records.read_records(path)
        assert str(error.value).startswith(f"{path}, {problem}"), error.value
    path.write_text(json.dumps(good) + "\n")
    assert capture_records.read_records(path) == [good]


def test_the_programs_own_sitecustomize_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(  # the capture command runs it too: the program's is the hooked one
        "import os\nif 'TLCHURN_CAPTURE_RECORDS' in os.environ:\n    print('own sitecustomize ran')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(own)}
    proc = run_capture(tmp_path / "k.yaml", sys.executable, "-c", "print('program ran')", cwd=tmp_path, env=env)
    assert proc.stdout.splitlines() == ["own sitecustomize ran", "program ran"]
    assert said(proc) == [f"no kernel recorded (no process imported TileLang with the hook: -I and -E ignore "
                          f"PYTHONPATH); {tmp_path / 'k.yaml'} not written"]  # fmt: skip
    assert proc.returncode == 1 and not (tmp_path / "k.yaml").exists()


def test_nothing_the_program_started_is_left_running(tmp_path):
    starts = "import subprocess; print(subprocess.Popen(['sleep', '60']).pid)"
    proc = run_capture(tmp_path / "k.yaml", sys.executable, "-c", starts, cwd=tmp_path)
    pid = int(proc.stdout.strip())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)
    assert not _running(pid)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_signal_is_passed_on_to_the_program_and_a_killed_program_is_said(tmp_path):
    """SIGTERM to the capture reaches the program (which says so) and stops the capture with 128 + 15; the capture
    killed, its program gets SIGTERM; a program killed by SIGKILL (the out-of-memory killer) is one line, 128 + 9."""
    waits = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM'), sys.exit(3)))\n"
    waits += "print('waiting', flush=True)\ntime.sleep(60)\n"
    command = [sys.executable, str(CAPTURE), "--out", str(tmp_path / "k.yaml"), "--", sys.executable, "-c", waits]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "waiting\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + 15 and out == "got SIGTERM\n", err
    assert err.splitlines()[-1] == f"{PREFIX}stopped by SIGTERM: nothing was recorded"
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "waiting\n"
    proc.kill()  # the capture itself killed: its program is not left running
    proc.wait()
    assert proc.stdout.read() == "got SIGTERM\n"
    kills = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    killed = run_capture(tmp_path / "k.yaml", sys.executable, "-c", kills, cwd=tmp_path)
    assert killed.returncode == 128 + 9
    assert said(killed)[-1] == "the program was killed by SIGKILL (out of memory?): nothing was recorded"


@pytest.mark.integration
def test_a_program_that_asks_the_gpu_is_captured_under_a_device_profile_each_entry_naming_it(tmp_path):
    """tests/data/capture/persistent_program.py sizes its kernel from the SM count and makes its input on cuda:
    without a GPU it stops in one line that names --device; with --device H100 it runs to its end, told the H100's
    132 SMs, and its entry names the profile, as the trace reads it (tests/test_device_profiles.py)."""
    require_tilelang()
    program = DATA / "persistent_program.py"
    out = tmp_path / "kernels.yaml"
    stopped = run_capture(out, sys.executable, str(program))
    assert "--device H100" in said(stopped)[0] and not out.exists(), stopped.stderr[-2000:]
    proc = run_capture(out, sys.executable, str(program), options=("--device", "H100"))
    assert proc.returncode == 0 and "persistent_program: 132 SMs, out (2048, 256)" in proc.stdout, proc.stderr[-3000:]
    (entry,) = entries(out)
    assert (entry["function"], entry["params"], entry["device"]) == ("scale", [{"M": 2048, "N": 256}], "H100")
    assert entry["captured"]["inputs"]["A"] == {"shape": [2048, 256], "dtype": "float16"}
    bad = run_capture(tmp_path / "other.yaml", sys.executable, str(program), options=("--device", "H20"))
    assert bad.returncode == 2 and "--device: 'H20' names no device profile" in bad.stderr
