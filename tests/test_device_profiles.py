"""Device profiles (core/devices.py, kernel/device_profiles.py): a kernel that asks the GPU its numbers while it is
built (a persistent kernel's grid is the SM count) builds on this CPU machine as if on that GPU, and TileLang's own
PrimFunc holds the profile's numbers. tests/data/kernel_styles/persistent.py is written in the style of TileLang's
persistent examples: a tensor on ``cuda`` at import, ``driver.get_num_sms()`` in the builder."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from conftest import REPO, require_tilelang
from tilelang_churn.core import devices
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.grid.config_checks import ConfigError
from tilelang_churn.kernel import device_profiles, kernel_probe, kernels

PERSISTENT = REPO / "tests" / "data" / "kernel_styles" / "persistent.py"
H100 = devices.PROFILES["H100"]


def block_extents(func) -> list[int]:
    """The blockIdx.x extents of a PrimFunc, read with TVM's own visitor (TVM's tir, tirx in newer TileLang)."""
    import importlib

    from tilelang import tvm  # noqa: F401 - TileLang's TVM on sys.path

    tir = importlib.import_module("tvm.tirx" if importlib.util.find_spec("tvm.tirx") else "tvm.tir")
    found = []

    def visit(node):
        if isinstance(node, tir.For) and node.thread_binding is not None:
            if node.thread_binding.thread_tag == "blockIdx.x":
                found.append(int(node.extent))

    tir.stmt_functor.post_order_visit(func.body, visit)
    return found


# ------------------------------------------------------------------------------------------ reading a config's value
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("H10", "'H10' names no device profile; the shipped ones are H100, H200, B200"),
        (132, "132 is neither a profile's name"),
        ({"name": "x"}, "missing major"),
        ({**dataclasses.asdict(H100), "sms": 1}, "unknown sms"),
        ({**dataclasses.asdict(H100), "multi_processor_count": 0}, "multi_processor_count must be a positive integer"),
        ({**dataclasses.asdict(H100), "major": True}, "major must be a non-negative integer, not True"),
        ({**dataclasses.asdict(H100), "name": " "}, "name must be the GPU's name"),
    ],
)
def test_a_value_that_is_no_profile_is_refused_naming_it(value, said):
    with pytest.raises(devices.ProfileError, match=said.replace("(", r"\(")):
        devices.read(value)


def test_a_shipped_name_in_any_case_and_a_mapping_read_and_travel_as_json():
    assert devices.read("h100") is H100 and devices.read(None) is None and devices.read("") is None
    mine = devices.read({**dataclasses.asdict(H100), "name": "NVIDIA H20", "multi_processor_count": 78})
    assert (mine.label, devices.read("B200").label) == ("NVIDIA-H20", "B200")
    assert devices.from_json(mine.to_json()) == mine and devices.folder_suffix(H100.to_json()) == "+on-H100"


def _grid(device, tmp_path, where="kernels"):
    cfg = {"shapes": [], "targets": ["cuda-sm90"], "modes": ["instrument"]}
    cfg["kernels"] = [{"name": "persistent", "file": str(PERSISTENT), "function": "persistent_scale", "params": [{}]}]
    if where == "kernels":
        cfg["kernels"][0]["device"] = device
    else:
        cfg["device"] = device
    return job_grid.build_grid(config_checks.validate_config(cfg), installed="0.1.15")


@pytest.mark.parametrize("where", ["kernels", "grid"])
def test_the_config_names_the_key_of_a_bad_device(tmp_path, where):
    key = r"kernels\[0\].device" if where == "kernels" else "device"
    with pytest.raises(ConfigError, match=rf"config {key}: 'A100' names no device profile"):
        _grid("A100", tmp_path, where)


@pytest.mark.parametrize("where", ["kernels", "grid"])
def test_a_jobs_profile_is_its_folder_label_and_device_column(tmp_path, where):
    grid = _grid("H100", tmp_path, where)
    (job,) = grid.jobs.values()
    assert job.wildcards["shape"] == "persistent+on-H100"
    provenance = job.spec.provenance("0.1.15")
    assert (provenance["device"], provenance["kernel_label"]) == ("H100", "persistent on H100")
    assert devices.from_json(job.spec.device) == H100


# ----------------------------------------------------------------------------------- the kernel built under it
@pytest.mark.integration
def test_tilelangs_and_torchs_device_questions_get_the_profiles_answers_and_nothing_stays_changed():
    require_tilelang()
    import torch
    from tilelang.carver.arch import driver
    from tilelang.carver.arch.driver import cuda_driver

    with device_profiles.active(H100):
        assert driver.get_num_sms() == H100.multi_processor_count == 132
        assert cuda_driver.get_max_dynamic_shared_size_bytes() == H100.shared_memory_per_multiprocessor
        assert cuda_driver.get_registers_per_block() == H100.regs_per_block
        assert torch.cuda.get_device_capability() == (9, 0) and torch.cuda.get_device_name() == H100.name
        assert torch.cuda.get_device_properties(0).shared_memory_per_block_optin == 232448
        made = [torch.randn(2, device="cuda"), torch.zeros(2).cuda(), torch.ones(2).to("cuda"), torch.ones(2)]
        assert [tensor.device.type for tensor in made] == ["meta", "meta", "meta", "cpu"]
    with pytest.raises(RuntimeError, match="Failed to get device properties"):
        driver.get_num_sms()
    with pytest.raises((AssertionError, RuntimeError)):
        torch.randn(2, device="cuda")


@pytest.mark.integration
def test_a_persistent_kernel_is_built_with_the_profiles_sm_count_and_fails_in_one_line_without():
    require_tilelang()
    with pytest.raises(kernels.KernelError, match=r"needs a GPU, which this machine lacks .*builds with config device"):
        kernels.build(PERSISTENT, "persistent_scale", {})
    for name in ("H100", "B200"):
        profile = devices.PROFILES[name]
        with device_profiles.active(profile):
            func = kernels.build(PERSISTENT, "persistent_scale", {})
        assert block_extents(func) == [profile.multi_processor_count], name


@pytest.mark.integration
def test_the_import_probe_imports_under_the_profile_and_keys_its_cache_by_it(tmp_path, monkeypatch):
    require_tilelang()
    monkeypatch.chdir(tmp_path)  # the probe's cache lives under the working directory
    kernel = tmp_path / "computed.py"
    kernel.write_text(
        PERSISTENT.read_text().replace(
            "@tilelang.jit(out_idx=[-1])",
            "CONFIGS = {'tl.disable_warp_specialized': X.shape[1] == 1024}\n\n\n"
            "@tilelang.jit(out_idx=[-1], pass_configs=CONFIGS)",
        )
    )
    without = kernel_probe.probe(kernel, "persistent_scale", {}, timeout_s=120)
    assert "needs a GPU" in without["error"]
    found = kernel_probe.probe(kernel, "persistent_scale", {}, timeout_s=120, device=H100.to_json())
    assert found["pass_configs"] == {"tl.disable_warp_specialized": True}, found
    assert len(list((tmp_path / kernel_probe.CACHE_DIR).glob("*.json"))) == 1  # a failed import is not cached
    assert json.loads(devices.PROFILES["B200"].to_json())["multi_processor_count"] == 148
    assert sys.modules.get("computed") is None  # the probe imported it in a child


# ------------------------------------------------------------------------------- against the lent H100 (recorded)
RECORDED = REPO / "tests" / "data" / "gpu" / "device_profile_real_h100.json"


def test_the_h100_profile_is_what_the_real_h100_reports():
    """Every number torch and TileLang's driver gave on the lent H100 (benchmarks/device_profile_check.py), as the
    profile gives it; torch has no attribute for two of them (None there): the driver's answer is the profile's."""
    real = json.loads(RECORDED.read_text())["answers"]
    for name in devices.FIELDS:
        if real[name] is not None:
            assert getattr(H100, name) == real[name], name
    assert H100.max_persisting_l2_cache_size == real["driver.get_persisting_l2_cache_max_size"]
    assert H100.regs_per_block == real["driver.get_registers_per_block"]
    assert H100.multi_processor_count == real["driver.get_num_sms"]


@pytest.mark.integration
def test_the_persistent_kernel_built_here_under_the_profile_is_the_one_the_real_h100_built():
    require_tilelang()
    import hashlib

    import tilelang

    recorded = json.loads(RECORDED.read_text())
    if tilelang.__version__.split("+")[0] != recorded["tilelang"]:
        pytest.skip(f"recorded with TileLang {recorded['tilelang']}, {tilelang.__version__} installed")
    with device_profiles.active(H100):
        text = str(kernels.build(PERSISTENT, "persistent_scale", {}).script())
    assert hashlib.sha256(text.encode()).hexdigest() == recorded["kernels"]["persistent_scale"]["sha256"]


def test_a_number_a_profile_does_not_know_is_an_error_naming_it():
    pytest.importorskip("torch")
    with device_profiles.active(devices.PROFILES["B200"]):
        import torch

        properties = torch.cuda.get_device_properties(0)
        assert properties.multi_processor_count == 148 and properties.major == 10
        with pytest.raises(RuntimeError, match="the device profile of NVIDIA B200 does not know L2_cache_size"):
            _ = properties.L2_cache_size


def test_a_command_lines_device_is_a_name_or_a_json_mapping_read_once_for_every_command():
    mapping = {**dataclasses.asdict(H100), "name": "NVIDIA H20", "multi_processor_count": 78}
    assert devices.read_argument(json.dumps(mapping)) == devices.read(mapping)
    assert devices.read_argument("h100") is H100 and devices.read_argument(None) is None
    with pytest.raises(devices.ProfileError, match=r"""'\{"name": ' is not valid JSON"""):
        devices.read_argument('{"name": ')
