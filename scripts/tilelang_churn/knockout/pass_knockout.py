"""Pass knockout: lower one kernel configuration as it is, then once per pass knocked out, and say what changed.

    from tilelang_churn.knockout import pass_knockout
    baseline = pass_knockout.lower(spec, None)                       # every pass runs
    variants = pass_knockout.plan_variants(baseline["runs"], "changed", "all")
    result = pass_knockout.lower(spec, variants[0])                  # that pass skipped in every run

A knocked-out pass is skipped by TVM itself: the tracer's pass instrument (pass_instrument.py) answers
``should_run(mod, info)`` with False for it, and TVM returns the module the pass was handed, unchanged. The same
instrument, attached through an outer ``PassContext`` around ``tilelang.lower``, sees every pass of every
release from 0.1.8, nested runs included (ConvertSSA inside SplitHostDevice), and counts the runs it skipped:
``skipped_runs`` 0 means the knockout did not take effect (the pass never ran, or the release ignored the
answer), and the row says so. A pass is named by its identity (core/pass_names.py: ``tl.Simplify``, not the
``Simplify`` that tirx.Simplify shares; an anonymous ``pass_fn`` by its factory); its N-th run is the N-th time
TVM asks about that pass in the lowering, the order the baseline's trace lists its runs in.

Which variants (``plan_variants``): ``changed`` every pass with a run that changed the IR in the baseline,
``all`` every pass that ran, or the names given (a short name that several passes share: one variant each);
``occurrence`` ``all`` knocks out every run of the pass, ``first`` its first run, ``each`` one variant per run
(with ``changed``: per run that changed the IR).

``lower`` runs in a child forked for it (knockout_batch.py): a pass whose absence makes TVM abort, segfault or
hang takes only that child down. TileLang's cache is off in the batch (TILELANG_DISABLE_CACHE), and only
``tilelang.lower`` runs, which generates source and compiles nothing: every row's source hash is of the
source that very lowering generated.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from dataclasses import dataclass
from pathlib import Path

from tilelang_churn.core import knockout_rows, pass_names, statuses
from tilelang_churn.trace import pass_identity, pass_instrument
from tilelang_churn.trace.fork_pool import signal_name

CHANGED_PASSES, ALL_PASSES = "changed", "all"  # config knockout.passes, or a list of pass names
PASS_SELECTIONS = (CHANGED_PASSES, ALL_PASSES)
OCCURRENCES = ("all", "first", "each")
# how a knockout reached tilelang.compile's passes (compiling_without), recorded in each GPU row
HOOK_NONE = "none"  # the baseline: nothing knocked out
HOOK_SESSION = "tilelang.instrumentation compile session"  # 0.1.14 and later
HOOK_PASS_CONTEXT = "every PassContext of the compile"  # earlier releases
COMPILE_HOOKS = (HOOK_NONE, HOOK_SESSION, HOOK_PASS_CONTEXT)


def pass_name(name: str) -> str:
    """A pass as the run record and passes.csv name it: tl.LowerTileOp and LowerTileOp are LowerTileOp."""
    return pass_instrument.run_record_name(name)


class Knockout:
    """TVM's ``should_run`` for one variant: False for the knocked-out pass (every run, or its N-th run only).

    The pass is named by its identity (``tl.Simplify``, ``tilelang.transform.HoistBroadcastValues``:
    core/pass_names.py), so only its runs are skipped, not those of another pass with the same short name. A short
    name (a knockout table written before identities) skips every pass it names, as it did then."""

    def __init__(self, knocked_pass_id: str, occurrence: int | None):
        self.knocked_pass_id = knocked_pass_id
        self.occurrence = occurrence  # None: every run
        self.runs_asked = 0  # how often TVM asked about the pass
        self.skipped_runs = 0

    def should_run(self, info) -> bool:
        tvm_name = str(info.name)
        if not pass_names.matches(self.knocked_pass_id, pass_identity.identity(info), pass_name(tvm_name)):
            return True
        self.runs_asked += 1
        if self.occurrence is not None and self.runs_asked != self.occurrence:
            return True
        self.skipped_runs += 1
        return False


@dataclass(frozen=True)
class Variant:
    """One lowering to make: the pass knocked out (None: the baseline) and which of its runs (None: every run),
    with where the baseline runs it. ``knocked_pass_id`` is the pass's identity (the name as the config gave it
    for a pass the baseline never ran), ``knocked_pass`` the run record's spelling, ``label`` what the variant is
    called: the short name where no other pass of the baseline shares it, else the identity."""

    knocked_pass_id: str | None
    occurrence: int | None = None
    pipeline_step: int | None = None  # the baseline's step of the first run skipped
    baseline_runs: int = 0
    knocked_pass: str | None = None
    label: str | None = None

    @property
    def name(self) -> str:
        return knockout_rows.variant_name(self.label or self.knocked_pass_id, self.occurrence)

    def knockout(self) -> Knockout | None:
        return None if self.knocked_pass_id is None else Knockout(self.knocked_pass_id, self.occurrence)

    def as_dict(self) -> dict:
        return {
            "knocked_pass": self.knocked_pass,
            "knocked_pass_id": self.knocked_pass_id,
            "label": self.label,
            "occurrence": self.occurrence,
            "pipeline_step": self.pipeline_step,
            "baseline_runs": self.baseline_runs,
        }


BASELINE = Variant(None)


def plan_variants(runs: list[dict], passes, occurrence: str) -> list[Variant]:
    """The variants of a configuration from its baseline's pass runs (dicts with step, pass, pass_id, status, in
    step order), in pipeline order (a named pass that never ran comes last, as the config lists it).

    A pass is one identity: ``tl.Simplify`` and ``tirx.Simplify`` are two variants, as are two anonymous passes. A
    name the config gives matches by identity, short name or spelling (``pass_names.matches``): ``Simplify``
    becomes one variant per pass it names (``tl.Simplify`` and ``tirx.Simplify``), ``pass_fn`` one per anonymous
    pass."""
    if occurrence not in OCCURRENCES:
        raise ValueError(f"occurrence {occurrence!r} is not one of {', '.join(OCCURRENCES)}")
    by_id: dict[str, list[dict]] = {}
    for run in runs:
        if run["status"] in statuses.PASS_RUN_STATUSES:
            by_id.setdefault(pass_names.identity_of(run), []).append(run)
    labels = pass_names.display_names(by_id)
    if passes == CHANGED_PASSES:
        chosen = [pass_id for pass_id, found in by_id.items() if any(_changed(run) for run in found)]
    elif passes == ALL_PASSES:
        chosen = list(by_id)
    elif isinstance(passes, (list, tuple)):
        chosen = []
        for given in passes:
            named = [
                pass_id for pass_id, found in by_id.items() if pass_names.matches(given, pass_id, found[0]["pass"])
            ]
            chosen += named or [str(given)]
        chosen = list(dict.fromkeys(chosen))
    else:
        raise ValueError(f"passes {passes!r} is not changed, all or a list of pass names")
    variants = []
    for pass_id in chosen:
        found = by_id.get(pass_id, [])
        common = {"knocked_pass": found[0]["pass"] if found else pass_name(pass_id), "label": labels.get(pass_id)}
        if not found or occurrence == "all":
            variants.append(Variant(pass_id, None, found[0]["step"] if found else None, len(found), **common))
        elif occurrence == "first":
            variants.append(Variant(pass_id, 1, found[0]["step"], len(found), **common))
        else:
            variants += [
                Variant(pass_id, number, run["step"], len(found), **common)
                for number, run in enumerate(found, 1)
                if passes != CHANGED_PASSES or _changed(run)
            ]
    never_ran = 1 << 62
    return sorted(variants, key=lambda v: never_ran if v.pipeline_step is None else v.pipeline_step)


def _changed(run: dict) -> bool:
    return run["status"] == statuses.STATUS_CHANGED


def first_line(error: BaseException | str) -> str:
    """The exception's type and the first line of its message (TVM's InternalError: the failed check)."""
    if not isinstance(error, BaseException):
        return str(error)[:500]
    message = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return (f"{type(error).__name__}: {message}" if message else type(error).__name__)[:500]


def child_result(path: Path, ended, timeout: float, what: str) -> dict:
    """What a child (fork_pool.Ended) wrote to PATH as JSON, or the result of one that ended without it
    (``ended_without_result``; WHAT: its work)."""
    if ended.timed_out or ended.status < 0:
        return ended_without_result(ended, timeout, what)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ended_without_result(ended, timeout, what)


def ended_without_result(ended, timeout: float | None, what: str) -> dict:
    """The result of a child that gave none: a ``timeout`` past TIMEOUT seconds, ``crashed`` by a signal (its
    number in ``signal``) or by an exit without its result."""
    if ended.timed_out:
        return {"status": statuses.STATUS_TIMEOUT, "error": f"{what} ran past {timeout:g} s and was killed"}
    if ended.status < 0:
        number = -ended.status
        return {
            "status": statuses.STATUS_CRASHED,
            "error": f"{what}'s process was killed by {signal_name(number)} (signal {number})",
            "signal": number,
        }
    return {
        "status": statuses.STATUS_CRASHED,
        "error": f"{what}'s process ended (exit status {ended.status}) without its result",
    }


def lower(spec, variant: Variant | None) -> dict:
    """Build the kernel and lower it for its target under the tracer, ``variant``'s pass knocked out (None: the
    baseline). Runs in a child of its own. The result: status, error, the generated source, skipped runs, the
    pass runs (step, pass, status: what plan_variants reads), pass runs and IR churn total, seconds."""
    from tilelang_churn.trace import tilelang_trace  # imports tilelang: the batch has imported it already

    cpu_started = time.process_time()
    knockout = variant.knockout() if variant is not None else None
    result: dict = {"status": statuses.STATUS_LOWERED, "error": None, "source": None, "skipped_runs": 0}
    try:
        target = tilelang_trace.make_target(spec)
        func = tilelang_trace.build_kernel(spec)
        configs = tilelang_trace.pass_config_context(spec)
    except Exception as exc:  # noqa: BLE001 - the kernel's build raising is this lowering's failure
        result.update(status=statuses.STATUS_LOWER_FAILED, error=f"build: {first_line(exc)}")
        result["lower_cpu_seconds"] = round(time.process_time() - cpu_started, 4)
        return result
    with configs:
        rows, error, info = pass_instrument.run_instrument(func, target, knockout=knockout, keep_source=True)
    churn = [row for row in rows if row["status"] in statuses.CHURN_STATUSES]
    result.update(
        source=info.get("kernel_source"),
        skipped_runs=knockout.skipped_runs if knockout is not None else 0,
        runs=[
            {
                "step": row["step"],
                "pass": row["pass"],
                "pass_id": pass_names.identity_of(row),
                "status": row["status"],
            }
            for row in rows
            if row["status"] in statuses.PASS_RUN_STATUSES
        ],
        pass_runs=info["pass_runs"],
        churn_total=sum((row["added"] or 0) + (row["deleted"] or 0) for row in churn),
        lower_seconds=info["lower_seconds"],
        lower_cpu_seconds=round(time.process_time() - cpu_started, 4),
    )
    if error is not None:
        result.update(status=statuses.STATUS_LOWER_FAILED, error=first_line(error))
    elif result["source"] is None:
        result.update(status=statuses.STATUS_LOWER_FAILED, error="tilelang.lower returned no kernel source")
    return result


# ------------------------------------------------------------------------------------------ compiling


def _should_run_instrument(knockout: Knockout):
    """A TVM pass instrument with nothing but ``should_run``: the knockout inside ``tilelang.compile``."""
    from tilelang import tvm

    class KnockoutInstrument:
        def __init__(self, knockout):
            self.knockout = knockout

        def should_run(self, mod, info):
            return self.knockout.should_run(info)

    return tvm.ir.instrument.pass_instrument(KnockoutInstrument)(knockout)


@contextlib.contextmanager
def compiling_without(knockout: Knockout | None):
    """Around ``tilelang.compile``: its lowering skips the knocked-out pass; yields how (``COMPILE_HOOKS``).

    tilelang.compile opens PassContexts of its own, so an outer one's instruments never reach it. 0.1.14 and later
    take their instruments from the compile session of ``tilelang.instrumentation``: the knockout is a
    ``PassInstrumentationTool`` of a session opened here, which TileLang's own nested sessions reuse. Older
    releases have no session: every PassContext created inside this block gets the instrument appended to its
    instruments. ``knockout.skipped_runs`` says whether either reached a pass (0: say so in the row)."""
    if knockout is None:
        yield HOOK_NONE
        return
    try:
        from tilelang import instrumentation
    except ImportError:
        instrumentation = None
    if instrumentation is not None and hasattr(instrumentation, "compile_pass_instrumentation"):

        class KnockoutTool(instrumentation.PassInstrumentationTool):
            def create_pass_instrument(self):
                return _should_run_instrument(knockout)

        with (
            pass_identity.watching(),
            instrumentation.compile_pass_instrumentation(name="tilelang-churn knockout", tools=[KnockoutTool()]),
        ):
            yield HOOK_SESSION
        return
    from tilelang import tvm

    context_class = tvm.transform.PassContext
    original = context_class.__init__
    parameters = inspect.signature(original)

    def with_knockout(self, *args, **kwargs):
        bound = parameters.bind(self, *args, **kwargs)
        bound.arguments["instruments"] = [*(bound.arguments.get("instruments") or []), _should_run_instrument(knockout)]
        original(*bound.args, **bound.kwargs)

    context_class.__init__ = with_knockout
    try:
        with pass_identity.watching():
            yield HOOK_PASS_CONTEXT
    finally:
        context_class.__init__ = original
