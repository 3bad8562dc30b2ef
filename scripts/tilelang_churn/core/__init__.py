"""The job model, the row model and the files every layer above shares (standard library only)."""
