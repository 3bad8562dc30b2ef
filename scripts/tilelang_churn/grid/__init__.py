"""The job grid: the config expanded into jobs (job_grid) and the kernels it names (kernels: the kernel file
contract)."""

__all__ = ["job_grid", "kernels"]
