"""The batches: the grid's jobs cut into the batches one process runs each, named from what they hold (batches),
and what a job is expected to cost, what a run recorded it took and the cores that batches running side by side
share (job_cost), and the key of a cached trace batch (trace_cache)."""

__all__ = ["batches", "job_cost", "trace_cache"]
