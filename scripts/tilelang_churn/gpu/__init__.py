"""Timing on a GPU: compiling and timing each configuration (gpu_bench), the knockout's variants (knockout_gpu), and the
site that carries TileLang to the GPU machine's Python (gpu_site), the GPU's clock while a kernel is timed
(gpu_clock)."""

__all__ = ["gpu_bench", "gpu_clock", "gpu_site", "knockout_gpu", "output_check"]
