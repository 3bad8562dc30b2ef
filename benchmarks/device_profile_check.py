#!/usr/bin/env python3
"""Does a device profile build a kernel as the real GPU does? Run twice on a machine with that GPU: once seeing it,
once with ``CUDA_VISIBLE_DEVICES=`` (no GPU visible, so the profile answers); then compare.

    python3 benchmarks/device_profile_check.py build OUT.json --device H100 --examples DIR [--newer DIR2]
    CUDA_VISIBLE_DEVICES= python3 benchmarks/device_profile_check.py build OUT2.json --device H100 --examples DIR
    python3 benchmarks/device_profile_check.py compare OUT.json OUT2.json

``build`` writes, for each kernel of KERNELS that asks the GPU while it is built, the sha256 and text of the
PrimFunc TileLang gives (``kernels.build``, inside ``device_profiles.active``: a no-op where the GPU is visible),
and every number of the profile as TileLang's driver and torch answer it. ``compare`` prints one line per kernel
and per number, and exits 1 when any differs. DIR is TileLang's ``examples/`` folder of the installed release.
tests/data/gpu/PROVENANCE.md records a run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from tilelang_churn.core import devices  # noqa: E402
from tilelang_churn.kernel import device_profiles, kernels  # noqa: E402

GEMM = {"M": 8192, "N": 8192, "K": 8192, "block_M": 128, "block_N": 256, "block_K": 64, "threads": 256}
STREAMK = {
    "M": 256, "N": 1024, "K": 512, "streamk_tiles": 20, "block_M": 16, "block_N": 128, "block_K": 32,
    "trans_A": False, "trans_B": True, "dtypeAB": "T.float16", "dtypeC": "T.float32", "accum_dtype": "T.float32",
    "num_stages": 2, "threads": 64,
}  # fmt: skip
# (name, file: relative to the repository or {examples}, function, params): kernels that ask the GPU while built
KERNELS = [
    ("persistent_scale", "tests/data/kernel_styles/persistent.py", "persistent_scale", {}),
    ("gemm_persistent", "{examples}/gemm/example_gemm_persistent.py", "matmul_persistent", {**GEMM, "num_stages": 3}),
    ("gemm_streamk", "{examples}/gemm_streamk/example_tilelang_gemm_streamk.py", "tl_matmul_streamk", STREAMK),
]
AWS = {"block_M": 128, "store_block_N": 64, "block_K": 64, "dtype": "T.bfloat16", "accum_dtype": "T.float32",
       "num_stages": 4, "num_persistent_stages": 2}  # fmt: skip
ATTENTION = {"batch": 1, "heads": 16, "seq_len": 16384, "dim": 128, "block_M": 128, "block_N": 128,
             "store_block_N": 16, "dtype": "T.bfloat16", "accum_dtype": "T.float32", "num_stages": 2,
             "num_persistent_stages": 2}  # fmt: skip
# newer examples than a release's (TileLang's main branch): {newer} is a folder holding them
NEWER = [
    ("aws_gemm", "{newer}/aws/gemm.py", "gemm", {"M": 8192, "N": 8192, "K": 8192, "block_N": 256, **AWS}),
    ("aws_gemm_ws", "{newer}/aws/gemm.py", "gemm_ws", {"M": 8192, "N": 8192, "K": 8192, "block_N": 256, **AWS}),
    ("aws_flash_attention", "{newer}/aws/flash_attention.py", "flash_attention", ATTENTION),
    ("aws_flash_attention_ws", "{newer}/aws/flash_attention.py", "flash_attention_ws", ATTENTION),
]


def answers() -> dict:
    """Every number of a profile as TileLang's driver and torch answer it here."""
    import torch
    from tilelang.carver.arch import driver

    properties = torch.cuda.get_device_properties(0)
    found = {name: getattr(properties, name, None) for name in devices.FIELDS}
    found["driver.get_num_sms"] = driver.get_num_sms()
    found["driver.get_max_dynamic_shared_size_bytes"] = driver.get_max_dynamic_shared_size_bytes()
    found["driver.get_registers_per_block"] = driver.get_registers_per_block()
    found["driver.get_persisting_l2_cache_max_size"] = driver.get_persisting_l2_cache_max_size()
    found["torch.cuda.get_device_capability"] = list(torch.cuda.get_device_capability())
    return found


def build(out: Path, device: str, examples: Path, newer: Path | None = None) -> int:
    profile = devices.read(device)
    record = {"gpu_visible": device_profiles.gpu_visible(), "device": profile.label, "kernels": {}}
    with device_profiles.active(profile):
        record["answers"] = answers()
    for name, file, function, params in KERNELS + (NEWER if newer else []):
        path = Path(file.format(examples=examples, newer=newer)) if file.startswith("{") else REPO / file
        try:
            with device_profiles.active(profile):
                text = str(kernels.build(path, function, params).script())
            record["kernels"][name] = {"sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text}
        except Exception as exc:  # noqa: BLE001 - a kernel that does not build is a line of the comparison
            record["kernels"][name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    out.write_text(json.dumps(record, indent=1))
    built = sum("sha256" in kernel for kernel in record["kernels"].values())
    print(f"{out}: GPU visible {record['gpu_visible']}, {built} of {len(record['kernels'])} kernels built")
    return 0


def compare(real_path: Path, profile_path: Path) -> int:
    real, profile = (json.loads(path.read_text()) for path in (real_path, profile_path))
    assert real["gpu_visible"] and not profile["gpu_visible"], "first the run that sees the GPU, then the one without"
    differ = 0
    for name in real["answers"]:
        a, b = real["answers"][name], profile["answers"].get(name)
        differ += a != b
        print(f"{'same' if a == b else 'DIFFERS'}  {name}: GPU {a}, profile {b}")
    for name in real["kernels"]:
        a, b = real["kernels"][name], profile["kernels"].get(name, {})
        same = "sha256" in a and a.get("sha256") == b.get("sha256")
        differ += not same
        said = a.get("sha256", a.get("error"))[:16] if same else f"GPU {a.get('sha256', a.get('error'))}, profile " \
            f"{b.get('sha256', b.get('error'))}"  # fmt: skip
        print(f"{'same' if same else 'DIFFERS'}  kernel {name}: {said}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("build")
    run.add_argument("out", type=Path)
    run.add_argument("--device", required=True)
    run.add_argument("--examples", type=Path, required=True)
    run.add_argument("--newer", type=Path, help="a folder of TileLang's newer examples (aws/gemm.py, ...)")
    both = commands.add_parser("compare")
    both.add_argument("real", type=Path)
    both.add_argument("profile", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.out, args.device, args.examples, args.newer)
    return compare(args.real, args.profile)


if __name__ == "__main__":
    raise SystemExit(main())
