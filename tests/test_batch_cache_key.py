"""batching/trace_cache.py on its own: a cached trace batch's key (config trace_cache) beyond its jobs' arguments,
as the trace rule's params hold it: its release, the tracing code's digest, every kernel file it builds by content."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

from tilelang_churn.batching import trace_cache
from tilelang_churn.kernel import kernels


def scripts_tree(root: Path) -> Path:
    scripts = root / "scripts"
    (scripts / "tilelang_churn" / "core").mkdir(parents=True)
    (scripts / "b_entry.py").write_text("b")
    (scripts / "a_entry.py").write_text("a")
    (scripts / "tilelang_churn" / "__init__.py").write_text("init")
    (scripts / "tilelang_churn" / "core" / "rows.py").write_text("rows")
    (scripts / "tilelang_churn" / "core" / "notes.md").write_text("not code")
    (root / "releases.yaml").write_text("0.1.15: {}")
    return scripts


def test_the_code_digest_is_every_entry_script_and_module_found_then_the_release_data(tmp_path):
    scripts = scripts_tree(tmp_path)
    releases = tmp_path / "releases.yaml"
    package = scripts / "tilelang_churn"
    expected = hashlib.sha256(b"abinitrows0.1.15: {}").hexdigest()  # entry files, then the package, sorted each
    assert trace_cache.code_digest(scripts, releases) == expected
    (package / "core" / "notes.md").write_text("edited")  # not code: the same digest
    assert trace_cache.code_digest(str(scripts), str(releases)) == expected
    (package / "core" / "rows.py").write_text("rows edited")  # a module nobody lists by hand
    edited = trace_cache.code_digest(scripts, releases)
    (package / "grid").mkdir()
    (package / "grid" / "new.py").write_text("new")  # a module added: found
    assert len({expected, edited, trace_cache.code_digest(scripts, releases)}) == 3


def job(kernel_file: str | None, source: str) -> SimpleNamespace:
    return SimpleNamespace(kernel_file=kernel_file, spec=SimpleNamespace(source=source))


def test_a_batch_key_names_each_kernel_file_once_a_shipped_one_by_its_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("mine").mkdir()
    Path("mine/helper.py").write_text("SCALE = 2\n")
    Path("mine/kernel.py").write_text("from helper import SCALE\n\ndef build(M=8):\n    pass\n")
    batch = SimpleNamespace(
        version="0.1.15",
        jobs=(job("mine/kernel.py", "mine/kernel.py"), job(None, "rmsnorm"), job("mine/kernel.py", "mine/kernel.py")),
    )
    sources = trace_cache.kernel_sources(batch)
    assert sources == [
        ("mine/helper.py", Path("mine/helper.py")),
        ("mine/kernel.py", Path("mine/kernel.py")),
        ("shipped rmsnorm", kernels.shipped("rmsnorm")),
    ]
    key = trace_cache.cache_key(batch, "code")
    digest = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in sources}
    assert key == {"release": "0.1.15", "code": "code", "kernels": digest}
    Path("mine/helper.py").write_text("SCALE = 3\n")  # a module the kernel imports from its folder: another key
    assert trace_cache.cache_key(batch, "code")["kernels"]["mine/helper.py"] != digest["mine/helper.py"]
