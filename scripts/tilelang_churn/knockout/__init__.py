"""The pass knockout: one lowering per knocked-out pass (pass_knockout) and a batch of them (knockout_batch)."""

__all__ = ["knockout_batch", "pass_knockout"]
