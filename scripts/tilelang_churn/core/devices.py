"""Device profiles: the numbers a kernel asks the GPU for while it is built (its SM count, shared memory, compute
capability), by name (``device: H100``) or as a mapping of the numbers. kernel/device_profiles.py answers the
kernel's questions with them; this module holds the profiles and reads a config's value. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Profile:
    """What torch's ``get_device_properties`` and CUDA's ``cudaDeviceGetAttribute`` report for one GPU
    (kernel/device_profiles.py ATTRIBUTES: which attribute is which field)."""

    name: str  # torch's get_device_name, e.g. "NVIDIA H100 80GB HBM3"
    major: int  # compute capability
    minor: int
    multi_processor_count: int
    total_memory: int | None  # bytes; None (null): not known, and a kernel that asks fails saying so
    shared_memory_per_block: int  # bytes, without opt-in
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    regs_per_block: int
    max_threads_per_multi_processor: int
    max_threads_per_block: int
    warp_size: int
    L2_cache_size: int | None  # bytes  # noqa: N815 - torch's own attribute name
    max_persisting_l2_cache_size: int | None

    @property
    def label(self) -> str:
        """The profile's short name in folder names and the ``device`` column: the shipped name, or the GPU's."""
        for short, profile in PROFILES.items():
            if profile == self:
                return short
        return "".join(char if char.isalnum() else "-" for char in self.name).strip("-")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


# Hopper (compute capability 9.0) and Blackwell (10.0) limits: CUDA C++ Programming Guide, "Features and Technical
# Specifications" (228 KB shared memory per SM, 227 KB per block with opt-in, 64 K registers, 2048 threads per SM).
_HOPPER = dict(
    major=9, minor=0, shared_memory_per_block=49152, shared_memory_per_block_optin=232448,
    shared_memory_per_multiprocessor=233472, regs_per_multiprocessor=65536, regs_per_block=65536,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32,
)  # fmt: skip
PROFILES = {
    # H100 SXM5 80 GB: every number as torch and TileLang's driver report it on the lent H100
    # (benchmarks/device_profile_check.py, tests/data/gpu/PROVENANCE.md "Device profiles")
    "H100": Profile(
        name="NVIDIA H100 80GB HBM3", multi_processor_count=132, total_memory=85_017_493_504,
        L2_cache_size=52_428_800, max_persisting_l2_cache_size=32_768_000, **_HOPPER,
    ),
    # H200 SXM: the H100's die (132 SMs, 50 MB L2: NVIDIA H200 data sheet), the name torch reports on the lent
    # H200 (tests/data/gpu/kernel_speed_h200.csv); its memory and persisting L2 as torch reports them: not recorded
    "H200": Profile(
        name="NVIDIA H200", multi_processor_count=132, total_memory=None,
        L2_cache_size=52_428_800, max_persisting_l2_cache_size=None, **_HOPPER,
    ),
    # B200: 148 SMs (74 per die), compute capability 10.0, Hopper's shared memory and registers per SM (CUDA C++
    # Programming Guide); its memory and L2 as torch reports them: not measured (published L2 sizes disagree)
    "B200": Profile(
        name="NVIDIA B200", multi_processor_count=148, total_memory=None,
        L2_cache_size=None, max_persisting_l2_cache_size=None, **{**_HOPPER, "major": 10},
    ),
}  # fmt: skip
FIELDS = tuple(field.name for field in fields(Profile))
UNKNOWN_ALLOWED = ("total_memory", "L2_cache_size", "max_persisting_l2_cache_size")  # may be null: not known


class ProfileError(ValueError):
    """A device value that names no profile, or a mapping that is not one: its message names the value."""


def read(value) -> Profile | None:
    """The profile a config's ``device`` value names: a shipped name (any case), a mapping of every field, or
    None/"" for none. A ProfileError naming what is wrong otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        for short, profile in PROFILES.items():
            if value.strip().lower() == short.lower():
                return profile
        raise ProfileError(f"{value!r} names no device profile; the shipped ones are {', '.join(PROFILES)}")
    if not isinstance(value, dict):
        raise ProfileError(
            f"{value!r} is neither a profile's name ({', '.join(PROFILES)}) nor a mapping of its numbers"
        )
    unknown = sorted(set(value) - set(FIELDS))
    missing = [name for name in FIELDS if name not in value]
    if unknown or missing:
        said = "; ".join(part for part in (f"unknown {', '.join(unknown)}" if unknown else "",
                                            f"missing {', '.join(missing)}" if missing else "") if part)  # fmt: skip
        raise ProfileError(f"a device mapping needs exactly the fields {', '.join(FIELDS)} ({said})")
    for name in FIELDS[1:]:
        number = value[name]
        if number is None and name in UNKNOWN_ALLOWED:
            continue
        least = 0 if name in ("major", "minor") else 1  # a compute capability 9.0 has minor 0
        if isinstance(number, bool) or not isinstance(number, int) or number < least:
            kind = "a non-negative" if least == 0 else "a positive"
            raise ProfileError(f"a device mapping's {name} must be {kind} integer, not {number!r}")
    if not isinstance(value["name"], str) or not value["name"].strip():
        raise ProfileError(f"a device mapping's name must be the GPU's name, not {value['name']!r}")
    return Profile(**value)


def argument_value(text: str | None):
    """A command line's ``--device`` as config device holds it: a shipped name as given, or its JSON mapping
    parsed. A ProfileError for JSON that does not parse."""
    if isinstance(text, str) and text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProfileError(f"{text!r} is not valid JSON ({exc.msg})") from None
    return text


def read_argument(text: str | None) -> Profile | None:
    """The profile a command line names (``--device``, ``argument_value``). A ProfileError naming what is wrong
    otherwise."""
    return read(argument_value(text))


def from_json(text: str | None) -> Profile | None:
    """The profile of a job's ``--device`` argument (``Profile.to_json``), None for none."""
    return Profile(**json.loads(text)) if text else None


def label_of(text: str | None) -> str | None:
    """The label (``Profile.label``) of a job's profile JSON, None for none."""
    profile = from_json(text)
    return profile.label if profile else None


def folder_suffix(text: str | None) -> str:
    """What a configuration's folder gets for a job's profile (``+on-H100``), '' for none."""
    label = label_of(text)
    return f"+on-{label}" if label else ""
