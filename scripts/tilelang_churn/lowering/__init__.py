"""Kernels, tracing one lowering in every mode, the job grid and the release environments."""
