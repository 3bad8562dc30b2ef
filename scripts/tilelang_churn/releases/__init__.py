"""TileLang versions: the entries of config versions, any TileLang a user points at (version_entries: a release, a
wheel, an environment), the release data and uv environments (release_envs), what a TileLang can do, probed from its
package (capabilities), running a command in one (release_process), and reading a TileLang's source without importing
it (tilelang_source: entry points, pass factories, pass config keys)."""

__all__ = ["capabilities", "release_envs", "release_process", "tilelang_source", "version_entries"]
