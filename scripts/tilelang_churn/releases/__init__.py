"""TileLang releases: their data and uv environments (release_envs), running a command in one (release_process), and
reading a release's source without importing it (tilelang_source: entry points, pass factories, pass config keys)."""

__all__ = ["release_envs", "release_process", "tilelang_source"]
