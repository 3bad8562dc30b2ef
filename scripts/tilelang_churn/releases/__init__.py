"""TileLang versions: the entries of config versions, any TileLang a user points at (version_entries: a release, a
wheel, an environment), the release data and uv environments (release_envs), what a TileLang can do, probed from its
package (capabilities), running a command in one (release_process), the stub CUDA driver 0.1.6 and 0.1.7 need
(cuda_stub), and the packages a kernel's file needs beyond one (kernel_requirements)."""

__all__ = ["capabilities", "cuda_stub", "kernel_requirements", "release_envs", "release_process", "version_entries"]
