#!/usr/bin/env python3
"""The pass knockout of many kernel configurations, TileLang imported once (the knockout rules' `script:`; the
command line too):

    python3 scripts/knockout_batch.py --jobs JOBS.json [--workers N] [--passes changed] [--occurrence all]

The logic, its outputs and exit statuses: tilelang_churn/knockout/knockout_batch.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.knockout import knockout_batch  # noqa: E402
from tilelang_churn.trace import trace_batch  # noqa: E402


def _from_rule(smk) -> int:
    params = smk.params
    return trace_batch.run_in_own_process(
        params.jobs,
        smk.threads,
        [],
        params.release_env,
        smk.log.batch,
        script=knockout_batch.SCRIPT,
        extra_args=params.options,
    )


if __name__ == "__main__":
    raise SystemExit(_from_rule(snakemake) if "snakemake" in globals() else knockout_batch.main())  # noqa: F821
