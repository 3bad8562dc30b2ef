"""Timing on a GPU: compiling and timing each configuration (gpu_bench), the knockout's variants (knockout_gpu), and the
site that carries TileLang to the GPU machine's Python (gpu_site)."""

__all__ = ["gpu_bench", "gpu_site", "knockout_gpu", "output_check"]
