"""Bad arguments exit 2 with the argument and value named, before TileLang is imported."""

from __future__ import annotations

import re

import pytest
from conftest import run_script

pytestmark = pytest.mark.integration  # tier: tests/conftest.py checks it against what the tests use

CASES = [
    (("--shape", "1024x1024"), "--shape", "1024x1024"),
    (("--shape", "0,1024,1024"), "--shape", "0,1024,1024"),
    (("--shape", "-5,1024,1024"), "--shape", "-5,1024,1024"),
    (("--block", "128,0,32"), "--block", "128,0,32"),
    (("--threads", "0"), "--threads", "0"),
    (("--stages", "-1"), "--stages", "-1"),
    (("--dtype", "fp16"), "--dtype", "fp16"),
    (("--target", "cuda -arch=sm_90"), "--target", "cuda -arch=sm_90"),
    (("--target", "cuda-sm99"), "--target", "cuda-sm99"),
    (("--target", '{"kind": "cuda", "arch": '), "--target", '{"kind": "cuda", "arch": '),
    (("--target", '{"arch": "sm_90"}'), "--target", '{"arch": "sm_90"}'),
    (("--target", '{"kind": "nonsense"}'), "--target", "unknown target kind 'nonsense'"),
    (("--target-name", "my sm90"), "--target-name", "my sm90"),
    (("--passes", "BindTarget,NoSuchPass"), "--passes", "NoSuchPass"),
    (("--passes", "Filter"), "--passes", "Filter"),
]


@pytest.mark.parametrize("args,argument,value", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_exit_2_naming_argument_and_value_without_importing_tilelang(tmp_path, args, argument, value):
    out = tmp_path / "out"
    proc = run_script("--mode", "trace-api", *args, "--out", str(out), python_flags=("-X", "importtime"))
    assert proc.returncode == 2
    message = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert message, proc.stderr
    assert f"argument {argument}" in message[-1] and value in message[-1]
    assert not re.search(r"\|\s+tilelang$", proc.stderr, re.M), "tilelang was imported"
    assert not out.exists()


def test_unknown_pass_lists_the_names_that_resolve():
    proc = run_script("--mode", "pass-diff", "--passes", "NoSuchPass")
    assert proc.returncode == 2
    assert "passes that resolve:" in proc.stderr
    assert "LayoutInference" in proc.stderr and "BindTarget" in proc.stderr


def test_neither_static_only_nor_mode_is_an_error():
    proc = run_script()
    assert proc.returncode == 2 and "--mode" in proc.stderr


def test_a_json_target_tvm_does_not_know_exits_2(tmp_path):
    """A known kind with an option TVM lacks: only TVM can tell, after the import, and it is still exit 2."""
    target = '{"kind": "cuda", "arch": "sm_90", "no_such_option": 1}'
    proc = run_script("--mode", "trace-api", "--target", target, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "argument --target: TVM rejects" in proc.stderr and "no_such_option" in proc.stderr
    assert not (tmp_path / "out" / "passes.csv").exists()
