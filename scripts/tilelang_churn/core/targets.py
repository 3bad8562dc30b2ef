"""Targets: the short names the workflow knows, the TVM target kinds, and the name a target dict gets in the
tables. Standard library only: the config check, the job spec and the trace command line share them."""

from __future__ import annotations

import re

# Short target names -> TVM target dicts. The JSON dict form is accepted by every TileLang release;
# CLI strings such as "cuda -arch=sm_90" are rejected from 0.1.10 on.
TARGETS: dict[str, dict] = {
    "cuda-sm80": {"kind": "cuda", "arch": "sm_80"},
    "cuda-sm86": {"kind": "cuda", "arch": "sm_86"},
    "cuda-sm89": {"kind": "cuda", "arch": "sm_89"},
    "cuda-sm90": {"kind": "cuda", "arch": "sm_90"},
    # the arch-specific features TileLang writes for (wgmma and setmaxnreg on Hopper, tcgen05 on Blackwell)
    "cuda-sm90a": {"kind": "cuda", "arch": "sm_90a"},
    "cuda-sm100a": {"kind": "cuda", "arch": "sm_100a"},
    "cuda-sm120": {"kind": "cuda", "arch": "sm_120"},
    "hip": {"kind": "hip"},
    "hip-gfx942": {"kind": "hip", "mcpu": "gfx942"},
    "hip-gfx950": {"kind": "hip", "mcpu": "gfx950"},
    # No layout for a T.gemm fragment on CPU targets: these record a real lowering failure.
    "llvm": {"kind": "llvm"},
    "c": {"kind": "c"},
}
DEFAULT_TARGET = "cuda-sm90"
SIMT_TARGET_KINDS = ("cuda", "hip", "rocm", "metal", "webgpu")
# The target kinds TVM registers (tvm.target.Target.list_kinds() of every supported release, without its
# internal test, composite and ext_dev kinds; a test compares): another "kind" is a typo, refused before any
# import. Whether TileLang can lower for a kind is the job's to find out (a failed row, as llvm's).
TARGET_KINDS = ("cuda", "nvptx", "hip", "rocm", "llvm", "c", "metal", "webgpu", "opencl", "vulkan", "hexagon", "ascend")


# What TileLang's errors name when a kernel needs a newer GPU than the job's target: the arch it needs
_NEEDS_ARCH = (
    (re.compile(r"Blackwell|tcgen05|TCGEN5|sm_?100", re.IGNORECASE), "sm_100a", "Blackwell"),
    (re.compile(r"Hopper|wgmma|WGMMA|sm_?90", re.IGNORECASE), "sm_90", "Hopper"),
)


def missing_target_hint(error: str, target: dict) -> str:
    """' (...)' naming the target a failure asks for when the job's is another (TileLang: "T.tcgen05_gemm()
    requires Blackwell TCGEN5MMA lowering, ... arch sm_90"), '' otherwise."""
    if target.get("kind") != "cuda":
        return ""
    for pattern, arch, family in _NEEDS_ARCH:
        if pattern.search(error or "") and not str(target.get("arch", "")).startswith(arch.rstrip("a")):
            name = f"cuda-{arch.replace('_', '')}"  # a short name of TARGETS
            job = target.get("arch", "cuda")
            needs = f"the kernel needs a {family} target, {arch}, and this job's is {job}"
            return f" ({needs}: give the kernel's entry its own targets, e.g. targets: [{name}])"
    return ""


def target_kind_problem(target: dict) -> str | None:
    """Why a target dict's "kind" is not one TVM knows, else None (the config check uses it too)."""
    if target.get("kind") in TARGET_KINDS:
        return None
    return f"unknown target kind {target.get('kind')!r}; TVM's kinds are {', '.join(TARGET_KINDS)}"


def target_name_for(target: dict) -> str:
    """The table's name for a dict equal to one of its entries, else 'json-<kind>[-<arch or mcpu>]'."""
    for name, known in TARGETS.items():
        if known == target:
            return name
    detail = target.get("arch") or target.get("mcpu")
    return "json-" + "-".join(str(part) for part in (target["kind"], detail) if part)
