"""What a kernel is before any job lowers it: a kernel file loaded and its PrimFunc built as TileLang gets it
(kernels: the contract, its parameters, COLUMNS and LOWERING_COST), every style TileLang defines a kernel in, read
from the source (kernel_source), the settings a source computes, read by importing it in a child (kernel_probe), the
capture's hook inside a user's program (capture_hook), and TileLang's own source read without importing it
(tilelang_source: entry points, pass factories, the pass config keys a kernel may set), and a kernel built as if on
a GPU this machine lacks (device_profiles)."""

__all__ = ["capture_hook", "device_profiles", "kernel_probe", "kernel_source", "kernels", "tilelang_source"]
