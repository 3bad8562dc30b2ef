"""The GPU's SM clock, and what held it down, while a kernel is timed: read from NVML, the driver's own library.

On the H100 the stage's timings of one kernel differed by up to 17 % where the GPU reached its power cap: its SM
clock fell from 1,980 MHz to 1,200-1,600 MHz, by how long it had been busy (docs/gpu-stage.md). A row that says
its clock and the reason lets a reader tell a slower kernel from a slower GPU.

``ClockWatch(gpu_uuid)`` samples NVML every ``PERIOD_S`` in a thread while its block runs; ``columns()`` gives the
median and lowest SM clock and the limits NVML reported. Where NVML cannot be read (no driver library, another
vendor), the columns are empty and nothing fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import statistics
import threading

PERIOD_S = 0.01
NVML_CLOCK_SM = 1
# NVML's clock event reasons (nvmlClocksEventReason*) that hold a busy GPU's clock down, by their bit
LIMITS = {
    0x2: "applications_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}
CLOCK_COLUMNS = ("sm_clock_mhz", "sm_clock_min_mhz", "clock_limits")
NO_LIMIT = "none"  # clock_limits where NVML read but named no limit


def limit_names(reasons: int) -> list[str]:
    """The names of the clock limits set in an NVML reasons bitmask, in bit order (idle and others left out)."""
    return [name for bit, name in LIMITS.items() if reasons & bit]


def summarize(samples: list[tuple[int, int]]) -> dict:
    """kernel_speed's clock columns from (SM clock MHz, reasons) samples: median and lowest clock, and every limit
    seen in any sample (``none`` when none); all empty without a sample."""
    if not samples:
        return dict.fromkeys(CLOCK_COLUMNS)
    clocks = [clock for clock, _ in samples]
    seen = 0
    for _, reasons in samples:
        seen |= reasons
    return {
        "sm_clock_mhz": statistics.median(clocks),
        "sm_clock_min_mhz": min(clocks),
        "clock_limits": " ".join(limit_names(seen)) or NO_LIMIT,
    }


class _Nvml:
    """The few NVML calls the watch needs, through ctypes: the driver ships libnvidia-ml with every install."""

    def __init__(self, gpu_uuid: str):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        uuid = gpu_uuid if gpu_uuid.startswith("GPU-") else f"GPU-{gpu_uuid}"
        found = self.lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(self.handle))
        if found != 0:  # torch without the uuid property: the first GPU, as probe_device reads
            self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)), "handle")
        reasons = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or self.lib.nvmlDeviceGetCurrentClocksThrottleReasons  # its name before CUDA 12.2

    @staticmethod
    def _check(result: int, call: str) -> None:
        if result != 0:
            raise OSError(f"NVML {call} returned {result}")

    def read(self) -> tuple[int, int]:
        clock, reasons = ctypes.c_uint(), ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(clock)), "clock")
        self._check(self._reasons(self.handle, ctypes.byref(reasons)), "reasons")
        return clock.value, reasons.value

    def close(self) -> None:
        self.lib.nvmlShutdown()


class Watch:
    """Samples read() every period in a thread between start() and stop(); a failed read ends the sampling."""

    def __init__(self, read, period_s: float = PERIOD_S):
        self.read, self.period_s = read, period_s
        self.samples: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="gpu_clock", daemon=True)

    def _sample(self) -> None:
        while True:
            try:
                self.samples.append(self.read())
            except OSError:
                return
            if self._stop.wait(self.period_s):
                return

    def start(self) -> Watch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(OSError):
            self.samples.append(self.read())  # the clock at the end, also for a block shorter than a period


class ClockWatch:
    """The GPU's clock sampled while a block runs: ``with ClockWatch(uuid) as clock: ...``, then
    ``clock.columns()``. Without NVML here the block runs unwatched and the columns are empty."""

    def __init__(self, gpu_uuid: str, period_s: float = PERIOD_S):
        self.gpu_uuid, self.period_s = gpu_uuid, period_s
        self.samples: list[tuple[int, int]] = []
        self._nvml = self._watch = None

    def __enter__(self) -> ClockWatch:
        try:
            self._nvml = _Nvml(self.gpu_uuid)
        except (OSError, AttributeError):  # no NVML here: the columns stay empty
            return self
        self._watch = Watch(self._nvml.read, self.period_s).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._watch is not None:
            self._watch.stop()
            self.samples = self._watch.samples
            self._nvml.close()
            self._nvml = self._watch = None

    def columns(self) -> dict:
        return summarize(self.samples)
