"""The GPU clock beside a timing (gpu_clock), on the CPU: NVML's reasons by name, the columns from samples, the
sampling thread, and a machine without NVML. The clock NVML reads on a GPU: tests/test_gpu_bench.py."""

from __future__ import annotations

import threading

from tilelang_churn.gpu import gpu_clock


def test_the_limits_are_nvmls_reasons_that_hold_a_busy_gpu_down():
    # 0x1 (idle) and 0x10 (sync boost) say nothing about a kernel's speed
    assert gpu_clock.limit_names(0x1 | 0x4 | 0x10 | 0x20) == ["sw_power_cap", "sw_thermal"]
    assert gpu_clock.limit_names(0x1) == []


def test_the_columns_are_the_median_and_lowest_clock_and_every_limit_seen():
    samples = [(1980, 0x0), (1500, 0x4), (1410, 0x4), (1965, 0x0), (1650, 0x40)]
    assert gpu_clock.summarize(samples) == {
        "sm_clock_mhz": 1650,
        "sm_clock_min_mhz": 1410,
        "clock_limits": "sw_power_cap hw_thermal",
    }
    assert gpu_clock.summarize([(1980, 0x1)])["clock_limits"] == gpu_clock.NO_LIMIT == "none"
    assert gpu_clock.summarize([]) == dict.fromkeys(gpu_clock.CLOCK_COLUMNS)


def test_the_watch_samples_until_stopped_and_a_failed_read_ends_it():
    clocks = iter([1980, 1800, 1600] + [1500] * 10_000)
    sampled = threading.Event()

    def read():
        clock = next(clocks)
        if clock == 1500:
            sampled.set()
        return clock, 0x4

    watch = gpu_clock.Watch(read, period_s=0.001).start()
    assert sampled.wait(5)
    watch.stop()
    assert watch.samples[:3] == [(1980, 0x4), (1800, 0x4), (1600, 0x4)] and len(watch.samples) >= 4
    assert not watch._thread.is_alive()

    def broken():
        raise OSError("NVML clock returned 999")

    failed = gpu_clock.Watch(broken, period_s=0.001).start()
    failed._thread.join(5)
    assert not failed._thread.is_alive()  # ended at the first failed read, before stop
    failed.stop()
    assert failed.samples == []


def test_without_nvml_the_block_runs_and_the_columns_are_empty(monkeypatch):
    def no_library(uuid):
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    monkeypatch.setattr(gpu_clock, "_Nvml", no_library)
    ran = []
    with gpu_clock.ClockWatch("GPU-0") as clock:
        ran.append(True)
    assert ran and clock.columns() == dict.fromkeys(gpu_clock.CLOCK_COLUMNS)


def test_with_nvml_the_watch_reads_the_gpu_it_was_given_and_closes(monkeypatch):
    opened = []

    class FakeNvml:  # what _Nvml answers on a GPU under its power cap
        def __init__(self, uuid):
            opened.append(uuid)

        def read(self):
            return 1410, 0x4

        def close(self):
            opened.append("closed")

    monkeypatch.setattr(gpu_clock, "_Nvml", FakeNvml)
    with gpu_clock.ClockWatch("GPU-1234", period_s=0.001) as clock:
        pass
    assert opened == ["GPU-1234", "closed"]
    assert clock.columns() == {"sm_clock_mhz": 1410, "sm_clock_min_mhz": 1410, "clock_limits": "sw_power_cap"}
