"""The environment of every rule's job: the interpreter the rules' `python3` finds on PATH."""

import os
import sys


# Jobs run `python3` from PATH: this Snakemake's own venv first, as activating it would (with --sdm conda the
# rule's env comes first). The interpreter's path is no param, so Snakemake from another venv reruns nothing.
envvars:
    "PATH",


INHERITED_PATH = os.environ["PATH"]
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), INHERITED_PATH])
