"""The one status vocabulary: every ``status`` cell the workflow writes, and every comparison with one, names a
constant of this module (tests/test_statuses.py refuses a status spelled as a literal anywhere else).

Plain ``str`` constants, so a cell is written as the very same bytes and the modules that import this one run
under every Python a release environment has. docs/outputs.md documents both vocabularies (a test keeps it in
step). Standard library only.
"""

from __future__ import annotations

# passes.csv / churn.csv: the status of a step. changed/noop are IR-to-IR passes; codegen compares TIR with
# generated source and is never churn; failed is a pass (or codegen, or the set-up) that raised, its text in
# ``error``; unsupported is the one row of a job whose mode the TileLang release lacks (e.g. lower_trace before
# 0.1.13), the reason in ``error``.
STATUS_CHANGED = "changed"
STATUS_NOOP = "noop"
STATUS_FAILED = "failed"
STATUS_CODEGEN = "codegen"
STATUS_UNSUPPORTED = "unsupported"
STATUSES = (STATUS_CHANGED, STATUS_NOOP, STATUS_FAILED, STATUS_CODEGEN, STATUS_UNSUPPORTED)
CHURN_STATUSES = (STATUS_CHANGED, STATUS_NOOP)  # the rows whose line counts are churn
PASS_RUN_STATUSES = CHURN_STATUSES + (STATUS_FAILED,)  # the rows that are a pass run

# results/gpu/kernel_speed.csv (gpu_bench.py): the status of one kernel configuration on the GPU.
STATUS_OK = "ok"  # compiled, launched, and right (or launched, for a kernel without a reference)
STATUS_WRONG = "wrong"  # its result is off the reference by more than the tolerance
STATUS_BUILD_FAILED = "build_failed"  # the kernel file's function raised, or TileLang is not the release's own
STATUS_COMPILE_FAILED = "compile_failed"  # tilelang.compile (lowering, codegen or nvcc) raised
STATUS_LAUNCH_FAILED = "launch_failed"  # inputs, the launch, the reference or the timing raised
GPU_STATUSES = (STATUS_OK, STATUS_WRONG, STATUS_BUILD_FAILED, STATUS_COMPILE_FAILED, STATUS_LAUNCH_FAILED)

# results/knockout/knockout.csv (pass_knockout.py): the status of one lowering of a configuration, the baseline or
# a pass knocked out.
STATUS_LOWERED = "lowered"  # tilelang.lower returned: the generated source is in the row's hash
STATUS_LOWER_FAILED = "lower_failed"  # tilelang.lower (or the kernel's build) raised: its first line in error
STATUS_TIMEOUT = "timeout"  # the lowering ran past knockout.timeout_s and was killed
STATUS_CRASHED = "crashed"  # the lowering's process died (a signal: abort, segfault) or ended without a result
KNOCKOUT_STATUSES = (STATUS_LOWERED, STATUS_LOWER_FAILED, STATUS_TIMEOUT, STATUS_CRASHED)
UNFINISHED_STATUSES = (STATUS_TIMEOUT, STATUS_CRASHED)  # lowerings (or GPU runs) that gave no result
# kernel_speed.csv: a GPU job's own statuses, or timeout (it held the GPU past gpu_timeout_s) / crashed (its process
# died by a signal or ended without its row)
SPEED_STATUSES = GPU_STATUSES + UNFINISHED_STATUSES
