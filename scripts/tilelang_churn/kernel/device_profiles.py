"""A kernel built as if on a GPU it cannot see: inside ``active(profile)`` (a core/devices.py profile, or any
object with its fields), TileLang's and torch's device questions (``driver.get_num_sms()``,
``torch.cuda.get_device_properties``) get the profile's answers, and a tensor the kernel's file makes on ``cuda``
is made on torch's ``meta`` device (shape and dtype, no memory). Nothing changes while a GPU is visible: the GPU
answers itself. Standard library only, nothing of this project: the capture's hook loads this file by its path
inside a user's program (capture_hook.py); torch and TileLang are imported only when a profile becomes active.
"""

from __future__ import annotations

import contextlib

# cudaDeviceGetAttribute's numbers that TileLang's cuda_driver asks (CUDA runtime API, cudaDeviceAttr) -> field
ATTRIBUTES = {
    1: "max_threads_per_block",
    12: "regs_per_block",
    81: "shared_memory_per_multiprocessor",
    108: "max_persisting_l2_cache_size",
}


def gpu_visible() -> bool:
    """Whether torch sees a CUDA GPU here (then the GPU answers, not a profile)."""
    import torch

    return torch.cuda.is_available()


@contextlib.contextmanager
def active(profile, meta_tensors: bool = True):
    """Within: TileLang's and torch's device questions answered by PROFILE, and (META_TENSORS) a tensor made on
    ``cuda`` made on ``meta``. A no-op for None or where a GPU is visible."""
    if profile is None or gpu_visible():
        yield
        return
    with contextlib.ExitStack() as stack:
        for owner, name, answer in _answers(profile):
            stack.enter_context(_replaced(owner, name, answer))
        if meta_tensors:
            stack.enter_context(_MetaForCuda())
        yield


def _answers(profile):
    """(object, attribute, replacement) for each device question torch and TileLang's cuda_driver ask."""
    import torch

    properties = _Properties(profile)

    def device_properties(device=None):
        return properties

    def attribute(attr: int, device_id: int = 0) -> int:
        if attr not in ATTRIBUTES:
            raise RuntimeError(f"the device profile of {profile.name} gives no cudaDeviceGetAttribute {attr}")
        return getattr(properties, ATTRIBUTES[attr])

    answers = [
        (torch.cuda, "get_device_properties", device_properties),
        (torch.cuda, "get_device_capability", lambda device=None: (profile.major, profile.minor)),
        (torch.cuda, "get_device_name", lambda device=None: profile.name),
        (torch.cuda, "device_count", lambda: 1),
        (torch.cuda, "current_device", lambda: 0),
    ]
    try:
        from tilelang.carver.arch import driver
        from tilelang.carver.arch.driver import cuda_driver
    except ImportError:  # a TileLang without the carver's driver asks through torch alone
        return answers
    for owner in (cuda_driver, driver):
        if hasattr(owner, "get_cuda_device_properties"):
            answers.append((owner, "get_cuda_device_properties", device_properties))
        if hasattr(owner, "get_device_attribute"):
            answers.append((owner, "get_device_attribute", attribute))
    return answers


@contextlib.contextmanager
def _replaced(owner, name: str, value):
    had, old = hasattr(owner, name), getattr(owner, name, None)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, name, old)
        else:
            delattr(owner, name)


class _Properties:
    """torch's _CudaDeviceProperties, from a profile."""

    def __init__(self, profile):
        for name, value in vars(profile).items():
            if value is not None:  # a number the profile does not know is asked in vain (__getattr__)
                setattr(self, name, value)
        self.max_threads_per_multiprocessor = profile.max_threads_per_multi_processor
        self.is_integrated = self.is_multi_gpu_board = 0

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"the device profile of {self.name} does not know {name}; give config device a mapping "
                           "with it")  # fmt: skip

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name={self.name!r}, major={self.major}, minor={self.minor}, profile)"


def _meta_mode_type():
    from torch.overrides import TorchFunctionMode

    class MetaForCuda(TorchFunctionMode):
        """A tensor asked for on ``cuda`` (a factory's device, ``.cuda()``, ``.to("cuda")``) made on ``meta``."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = "meta"
            name = getattr(func, "__name__", "")
            if name == "cuda":
                return args[0].to("meta")
            if name == "to":
                args = tuple("meta" if _is_cuda(arg) else arg for arg in args)
            return func(*args, **kwargs)

    return MetaForCuda


def _is_cuda(device) -> bool:
    import torch

    if isinstance(device, int) and not isinstance(device, bool):
        return True  # an ordinal is a CUDA device
    if not isinstance(device, (str, torch.device)):
        return False
    try:
        return torch.device(device).type == "cuda"
    except RuntimeError:
        return False


class _MetaForCuda(contextlib.AbstractContextManager):
    def __enter__(self):
        self._mode = _meta_mode_type()()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)
