"""The job grid: the config expanded into jobs (job_grid) and the kernels it names (kernels: loading and building a
kernel file's kernel; kernel_source: every style TileLang defines a kernel in, read from the source; kernel_probe:
the settings a source computes, read by importing it; pass_config_options: the pass config options and their types
that the installed TileLang's TVM registers)."""

__all__ = ["job_grid", "kernel_probe", "kernel_source", "kernels", "pass_config_options"]
