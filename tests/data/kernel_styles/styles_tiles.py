"""A module beside the kernels that one of them imports inside its body (part of the kernel: tilelang-churn
retraces it when this file changes)."""

COPY_BLOCK = 128
