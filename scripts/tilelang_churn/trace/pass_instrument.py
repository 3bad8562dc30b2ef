"""--mode instrument: one TVM pass instrument that traces tilelang.lower in every release from 0.1.8 to 0.1.15.

    from tilelang_churn.trace import pass_instrument
    rows, error, info = pass_instrument.run_instrument(func, target, keep_ir=True)
    ir_archive.write(info["ir"], "ir.json.gz")

From the command line: ``gemm_lower_trace.py --mode instrument`` (``--keep-ir`` for the archive).

The tracer is a class decorated with ``tvm.ir.instrument.pass_instrument``, attached through an outer
``tvm.transform.PassContext(instruments=[tracer])`` around ``with target: tilelang.lower(func, target=target)``.
``tilelang.lower`` never opens a PassContext of its own, so the tracer sees every pass run, including passes
run from inside another pass (ConvertSSA inside SplitHostDevice): those have ``depth`` > 0.

One row per pass run, in the order the runs started (a nested run comes after its parent), with the columns
of passes.csv plus ``seconds``:

    step     execution order, from 0
    phase    see "Phases" below
    pass     the pass name as TileLang's run record spells it (``tl.LowerTileOp`` -> ``LowerTileOp``)
    pass_id  the pass's identity (pass_identity.py): TVM's full name, or an anonymous pass's factory
    status   changed | noop | failed | codegen
    changed  whether the printed IR text changed (None for failed)
    added, deleted
             difflib line counts between the IR printed before and after the run, exactly as
             ``run_record.count_line_changes`` counts them (None for failed)
    depth    nesting depth, 0 for a pass run by the pipeline itself
    seconds  the run's own wall time: from the pass's start to its end, less the time the tracer spent
             inside that window (printing and diffing for nested runs); nested runs are part of their parent
    error    failed rows only: ``passes_table.error_text`` of the exception ``tilelang.lower`` raised

A lowering that succeeds ends with a ``codegen`` row (phase "codegen"): the IR the last pass returned against
``artifact.kernel_source``, as TileLang's run record compares ``<NN>_codegen_before.tir`` with its ``.cpp``.
Its ``seconds`` is the time from the end of the last pass to the return of ``tilelang.lower``. A lowering
that fails gives the rows before the failure plus one failed row per pass run left open (the failing pass
and, for a nested failure, its parents); a failure outside every pass is one failed row named ``codegen``
when the traceback passes through TileLang's codegen, else ``lower`` (phase "tilelang.lower").

Phases, by what the running release offers:

- 0.1.14 and later (``tilelang.instrumentation``): ``current_pass_phase()`` as TL_LOWER_TRACE names it, so
  ``pipeline_<backend>`` inside the backend pipeline and ``unscoped`` outside it; passes run inside backend
  codegen (``run_codegen_with_instrumentation`` on the call stack) are ``codegen``, as in TileLang's trace.
  Not reproduced: the ``run<N>_`` prefix TL_LOWER_TRACE gives a second pipeline run inside one session.
- 0.1.12 and 0.1.13 (``PassPipeline``, no phase scopes): ``pipeline_<name>`` when a ``PassPipeline.lower``
  frame is on the call stack (the label 0.1.13's lower_trace gives), else ``unscoped``.
- 0.1.8 to 0.1.11 (``tilelang.engine.phase``): the outermost CamelCase function of that module on the call
  stack (``PreLowerSemanticCheck``, ``LowerAndLegalize``, ``OptimizeForTarget``), else ``unscoped``.

Cost: printing the module is nearly all of it, so a module is printed only when no text is known for the very
same contents (``content_key``): the object handles of its GlobalVars, of each PrimFunc's params, buffer_map,
ret_type, attrs and body, and of the module's attrs and global infos. Those objects are held while their text
is kept, so copy-on-write changes none of them in place and no handle is reused: equal keys name the same
objects, which print the same text. The input of a run is nearly always what an earlier run returned, and
many no-op passes return new function objects around the same fields: neither is printed again. The module
object alone is no proof (``mod[gv] = f`` changes a module in place and returns it: AnnotateEntryFunc does),
and ``structural_equal`` is never used to skip printing: it ignores names, which the printed text shows.

Tracer failures never break compilation: every callback catches its own exceptions; they are listed in
``info["tracer_errors"]``. TL_LOWER_TRACE must be unset or 0 when tilelang is imported, or TileLang's own
trace runs (and prints) as well.

``keep_ir=True`` adds ``info["ir"]``, every printed IR text once (``core/ir_archive.py``):

    {"format": 1, "initial": <index of the IR before the first pass>,
     "steps": [{"step": int, "pass": str, "before": <index of the IR the run was handed>,
                "after": <index of the IR after that run, None when it failed>}],
     "texts": [str, ...], "kernel_source": str | None}

``steps`` holds pass runs only, in step order (the codegen row's text is ``kernel_source``). ``before`` is what
the run was handed: for a top-level run in the pipeline the ``after`` of the top-level run before it, but a
nested run starts from IR its parent built, and outside the pipeline a pass may be handed an older module (the
second ``Filter`` gets the pipeline's output, not the first ``Filter``'s); archives written before ``before``
existed lack it (the comparison then infers it where it can, ``tables/pass_edits.py``).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import time
from dataclasses import dataclass

from tilelang_churn.core import ir_archive, line_churn, passes_table
from tilelang_churn.trace import pass_identity, run_record

UNSCOPED_PHASE = "unscoped"  # TL_LOWER_TRACE's label for a pass outside every phase scope
CODEGEN_PHASE = "codegen"
LOWER_PHASE = "tilelang.lower"  # a failure outside every pass and outside codegen (as tilelang_trace names it)
_RECENT_TEXTS = 4  # printed modules kept for reuse: the last outputs cover inputs handed on later (Filter x2)
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")
# functions that run backend codegen, in every release from 0.1.8 (a failure raised under them is codegen's)
_CODEGEN_FUNCTION_NAMES = (
    "device_codegen",
    "device_codegen_without_compile",
    "host_codegen",
    "run_codegen_with_instrumentation",
)


def run_record_name(tvm_name: str) -> str:
    """A TVM pass name as TileLang's run record spells it: the part after the last dot, filename-safe."""
    return safe_filename(str(tvm_name).rsplit(".", 1)[-1])


def safe_filename(name: str) -> str:
    """A name as TileLang writes it into one path component of its run record (phase folders too)."""
    return _UNSAFE_FILENAME.sub("_", str(name))


# ---------------------------------------------------------------------------------------------- phases


class PhaseResolver:
    """Names the phase of the pass run now starting, with what the running TileLang release offers."""

    def __init__(self):
        self.current_scope = None  # tilelang.instrumentation.current_pass_phase (0.1.14+)
        self.codegen_codes: set = set()
        self.pipeline_code = None  # PassPipeline.lower (0.1.12+)
        self.legacy_phase_codes: dict = {}  # tilelang.engine.phase functions (up to 0.1.11)
        try:
            from tilelang import instrumentation

            self.current_scope = instrumentation.current_pass_phase
            run_codegen = getattr(instrumentation, "run_codegen_with_instrumentation", None)
            if run_codegen is not None:
                self.codegen_codes.add(run_codegen.__code__)
        except (ImportError, AttributeError):
            pass
        if self.current_scope is None:
            try:
                from tilelang.backend.pass_pipeline import PassPipeline

                self.pipeline_code = PassPipeline.lower.__code__
            except (ImportError, AttributeError):
                pass
        if self.current_scope is None and self.pipeline_code is None:
            try:
                from tilelang.engine import phase as engine_phase

                self.legacy_phase_codes = {
                    value.__code__: name
                    for name, value in vars(engine_phase).items()
                    if inspect.isfunction(value) and value.__module__ == engine_phase.__name__ and name[:1].isupper()
                }
            except ImportError:
                pass

    @property
    def source(self) -> str:
        """How phases are named in this release, for the run's info."""
        if self.current_scope is not None:
            return "tilelang.instrumentation.current_pass_phase"
        if self.pipeline_code is not None:
            return "call stack: PassPipeline.lower"
        if self.legacy_phase_codes:
            return "call stack: tilelang.engine.phase"
        return "none"

    def __call__(self) -> str:
        if self.current_scope is not None:
            # TL_LOWER_TRACE's codegen wrapper opens a "codegen" scope over any other: the codegen call on the
            # stack stands in for it (that wrapper only runs when TileLang's own trace is on)
            if self.codegen_codes and _innermost_frame(self.codegen_codes) is not None:
                return CODEGEN_PHASE
            return safe_filename(self.current_scope() or UNSCOPED_PHASE)
        if self.pipeline_code is not None:
            frame = _innermost_frame({self.pipeline_code})
            pipeline = frame.f_locals.get("self") if frame is not None else None
            return safe_filename(f"pipeline_{pipeline.name}") if pipeline is not None else UNSCOPED_PHASE
        if self.legacy_phase_codes:
            outermost = None
            frame = sys._getframe(1)
            while frame is not None:
                outermost = self.legacy_phase_codes.get(frame.f_code, outermost)
                frame = frame.f_back
            return outermost or UNSCOPED_PHASE
        return UNSCOPED_PHASE


def _innermost_frame(codes: set):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in codes:
            return frame
        frame = frame.f_back
    return None


def _failure_place(error: BaseException) -> tuple[str, str]:
    """(phase, pass) of a failure outside every pass: codegen when the traceback runs through it."""
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in _CODEGEN_FUNCTION_NAMES:
            return CODEGEN_PHASE, "codegen"
        tb = tb.tb_next
    return LOWER_PHASE, "lower"


# ---------------------------------------------------------------------------------------------- recording


def content_key(mod) -> tuple[tuple, list]:
    """What the printer reads from a module, as object identities: (key, the objects it names).

    The key lists the module's GlobalVars and, per function, the fields the printer reads (params,
    buffer_map, ret_type, attrs, body of a PrimFunc; the function object itself otherwise), then the module's
    attrs and global infos, each as its object handle. The caller keeps the objects list alive with the key:
    a referenced object is never changed in place by copy-on-write and its handle is never reused, so two
    equal keys name the very same objects, which print the very same text. The module object itself is no
    such proof: ``mod[gv] = f`` (AnnotateEntryFunc, SplitHostDevice) changes a module in place and returns
    it. Many no-op passes return new function objects that keep every field, which this key sees through.
    """
    objects: list = [mod.functions]  # the Map that shallow_key names
    functions = tuple((_handle(gvar, objects), _function_key(func, objects)) for gvar, func in mod.functions.items())
    key = (
        functions,
        _handle(getattr(mod, "attrs", None), objects),
        _handle(getattr(mod, "global_infos", None), objects),
    )
    return key, objects


def shallow_key(mod) -> tuple[int, int, int]:
    """Handles of the module's functions Map, attrs and global infos: equal while ``content_key`` holds them."""
    attrs = getattr(mod, "attrs", None)
    infos = getattr(mod, "global_infos", None)
    return (
        mod.functions.__chandle__(),
        0 if attrs is None else attrs.__chandle__(),
        0 if infos is None else infos.__chandle__(),
    )


def _function_key(func, objects: list) -> tuple:
    objects.append(func)  # held as well: no copy-on-write can then change it in place
    buffer_map = getattr(func, "buffer_map", None)
    if buffer_map is None:  # not a PrimFunc: only the very same function object proves the same text
        return (_handle(func, objects),)
    return (
        tuple(_handle(param, objects) for param in func.params),
        tuple((_handle(var, objects), _handle(buffer, objects)) for var, buffer in buffer_map.items()),
        _handle(func.ret_type, objects),
        _handle(func.attrs, objects),
        _handle(func.body, objects),
    )


def _handle(obj, objects: list) -> int:
    """The address of the FFI object (0 for None); ``same_as`` is no option: Type.same_as recurses forever."""
    if obj is None:
        return 0
    objects.append(obj)
    return obj.__chandle__()


def print_ir(mod) -> str:
    """The printed IR the counts are taken over (TileLang's trace uses str(mod), the same text)."""
    script = getattr(mod, "script", None)
    return script() if callable(script) else str(mod)


@dataclass
class _OpenRun:
    """A pass run whose after-callback has not come yet."""

    row: dict
    tvm_name: str
    before_text: str | None = None
    started: float = 0.0
    tracer_seconds_at_start: float = 0.0


class _TextStore:
    """Printed IR texts, each stored once, for the IR archive."""

    def __init__(self):
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str) -> int:
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.texts)
            self.texts.append(text)
        return index


class PassRecorder:
    """The tracer's state: one row per pass run, paired before/after callbacks, printed texts for reuse."""

    def __init__(self, resolve_phase, keep_ir: bool = False):
        self.resolve_phase = resolve_phase
        self.rows: list[dict] = []
        self.open_runs: list[_OpenRun] = []
        # (shallow key, content key, the objects both name, printed text), newest first
        self.recent: list[tuple[tuple, tuple, list, str]] = []
        self.tracer_seconds = 0.0  # time spent inside the callbacks: taken out of each pass's seconds
        # another tracer's time (time_elsewhere) since the last pass ended: taken out of the codegen row's seconds
        self.seconds_elsewhere = 0.0
        self.tracer_errors: list[str] = []
        self.prints = 0
        self.store = _TextStore() if keep_ir else None
        self.initial_text: int | None = None
        self.after_text_index: dict[int, int | None] = {}
        self.before_text_index: dict[int, int] = {}  # the IR each run was handed (a nested run's is its own)
        self.final_ir_text: str | None = None  # what the last pass outside codegen returned
        self.last_pass_ended: float | None = None
        self.changed_texts: list[tuple[dict, str, str]] = []  # (row, before, after) of each finished run

    # -- callbacks (called by the instrument; they never raise)

    def pass_started(self, mod, info) -> None:
        entered = time.perf_counter()
        run = None
        try:
            tvm_name = str(info.name)
            row = {
                "step": len(self.rows),
                "phase": None,
                "pass": run_record_name(tvm_name),
                "pass_id": None,
                "depth": len(self.open_runs),
            }
            self.rows.append(row)
            run = _OpenRun(row=row, tvm_name=tvm_name)
            self.open_runs.append(run)  # first, so that the after-callback pairs even if the rest fails
            row["pass_id"] = pass_identity.identity(info)
            row["phase"] = self.resolve_phase()
            run.before_text = self._text_of(mod)
            if self.store is not None:
                self.before_text_index[row["step"]] = self.store.add(run.before_text)
                if self.initial_text is None:
                    self.initial_text = self.before_text_index[row["step"]]
        except Exception as exc:  # noqa: BLE001 - the tracer must never break compilation
            self._tracer_error("run_before_pass", exc)
        finally:
            left = time.perf_counter()
            self.tracer_seconds += left - entered
            if run is not None:
                run.started = left
                run.tracer_seconds_at_start = self.tracer_seconds

    def pass_finished(self, mod, info) -> None:
        entered = time.perf_counter()
        run = None
        try:
            tvm_name = str(info.name)
            position = next(
                (i for i in range(len(self.open_runs) - 1, -1, -1) if self.open_runs[i].tvm_name == tvm_name), None
            )
            if position is None:
                raise RuntimeError(f"after-pass callback for {tvm_name!r} without its before-pass callback")
            # runs above it never got their after-callback: they raised and a caller caught the exception
            for unfinished in self.open_runs[position + 1 :]:
                self._fail(unfinished, "no after-pass callback: the pass raised and its caller went on", entered)
            run = self.open_runs[position]
            del self.open_runs[position:]
            run.row["seconds"] = self._own_seconds(run, entered)
            if run.before_text is None:
                raise RuntimeError("the IR before this run could not be printed")
            after_text = self._text_of(mod)
            changed = after_text != run.before_text
            added, deleted = run_record.count_line_changes(run.before_text, after_text) if changed else (0, 0)
            status = passes_table.STATUS_CHANGED if changed else passes_table.STATUS_NOOP
            run.row.update(status=status, changed=changed, added=added, deleted=deleted)
            # the whitespace-insensitive count is made after lowering, outside the passes' timed windows
            self.changed_texts.append((run.row, run.before_text, after_text) if changed else (run.row, "", ""))
            if self.store is not None:
                self.after_text_index[run.row["step"]] = self.store.add(after_text)
            if run.row["phase"] != CODEGEN_PHASE:
                self.final_ir_text = after_text
        except Exception as exc:  # noqa: BLE001 - the tracer must never break compilation
            self._tracer_error("run_after_pass", exc)
            if run is not None:  # the pass ran; only the tracer cannot say what it did
                self._fail(run, f"pass_instrument: {passes_table.error_text(exc)}", entered)
        finally:
            self.last_pass_ended = time.perf_counter()
            self.tracer_seconds += self.last_pass_ended - entered
            self.seconds_elsewhere = 0.0

    def time_elsewhere(self, seconds: float) -> None:
        """SECONDS that another tracer of the same lowering spent (TileLang's own under TL_LOWER_TRACE): not the
        passes' time, as this tracer's own is not."""
        self.tracer_seconds += seconds
        self.seconds_elsewhere += seconds

    def _own_seconds(self, run: _OpenRun, ended: float) -> float:
        """Wall time from the run's start to ``ended``, less what the tracer spent in between."""
        return round(max(0.0, (ended - run.started) - (self.tracer_seconds - run.tracer_seconds_at_start)), 6)

    # -- after tilelang.lower returned or raised

    def close_failed_runs(self, error: BaseException, ended: float) -> int:
        """Every run still open when tilelang.lower raised failed: the innermost raised, its parents with it."""
        closed = len(self.open_runs)
        for run in self.open_runs:
            self._fail(run, error, ended)
        self.open_runs.clear()
        return closed

    def close_unfinished_rows(self, ended: float) -> None:
        """Rows the tracer itself could not finish (it broke before pairing) still get a status."""
        for row in self.rows:
            if "status" not in row:
                self._fail(
                    _OpenRun(row=row, tvm_name=row["pass"]), "pass_instrument: no after-pass callback recorded", ended
                )

    def _fail(self, run: _OpenRun, error: BaseException | str, ended: float) -> None:
        run.row.update(
            status=passes_table.STATUS_FAILED,
            changed=None,
            added=None,
            deleted=None,
            error=passes_table.error_text(error),
        )
        if run.row.get("seconds") is None:
            run.row["seconds"] = self._own_seconds(run, ended) if run.started else None
        if self.store is not None:
            self.after_text_index[run.row["step"]] = None

    def _text_of(self, mod) -> str:
        """The printed IR of ``mod``, reused when a known text was printed from the very same contents."""
        # Fast path: the same functions Map (held, so copy-on-write gives any change a new Map) and attrs.
        shallow = shallow_key(mod)
        for known_shallow, _, _, text in self.recent:
            if shallow == known_shallow:
                return text
        key, objects = content_key(mod)
        for _, known, _, text in self.recent:
            if key == known:
                return text
        text = print_ir(mod)
        self.prints += 1
        self.recent.insert(0, (shallow, key, objects, text))
        del self.recent[_RECENT_TEXTS:]
        return text

    def _tracer_error(self, where: str, exc: BaseException) -> None:
        self.tracer_errors.append(f"{where}: {passes_table.error_text(exc)}")

    def ir_archive(self, kernel_source: str | None) -> dict:
        steps = [
            {
                "step": row["step"],
                "pass": row["pass"],
                "before": self.before_text_index.get(row["step"]),
                "after": self.after_text_index.get(row["step"]),
            }
            for row in self.rows
        ]
        return {
            "format": ir_archive.FORMAT,
            "initial": self.initial_text,
            "steps": steps,
            "texts": list(self.store.texts),
            "kernel_source": kernel_source,
        }


_INSTRUMENT_CLASSES: dict = {}


def make_instrument(recorder: PassRecorder, knockout=None):
    """A TVM PassInstrument that hands each pass run to ``recorder``; with ``knockout`` (an object whose
    ``should_run(info) -> bool`` says whether TVM runs a pass: pass_knockout.Knockout) TVM skips the passes it
    refuses, and a skipped pass gets no callback and no row."""
    kind = "tracer" if knockout is None else "knockout"
    if kind not in _INSTRUMENT_CLASSES:
        from tilelang import tvm

        class PassTracer:
            """Forwards TVM's callbacks; the state lives in the recorder (older TVMs wrap the class)."""

            def __init__(self, recorder: PassRecorder, knockout=None):
                self.recorder = recorder
                self.knockout = knockout

            # enter_pass_ctx / exit_pass_ctx are left out on purpose: TileLang 0.1.14+ may re-attach
            # instruments mid-lowering (override_instruments), which exits and re-enters them.
            def run_before_pass(self, mod, info):
                self.recorder.pass_started(mod, info)

            def run_after_pass(self, mod, info):
                self.recorder.pass_finished(mod, info)

        if kind == "knockout":  # only then: TVM calls should_run for every pass of every traced lowering

            def should_run(self, mod, info):
                return self.knockout.should_run(info)

            PassTracer.should_run = should_run
        _INSTRUMENT_CLASSES[kind] = tvm.ir.instrument.pass_instrument(PassTracer)
    return _INSTRUMENT_CLASSES[kind](recorder, knockout)


def outer_pass_context(tvm, instruments=(), config: dict | None = None):
    """A PassContext that keeps the caller's options (opt_level, config, pass lists), adding instruments and
    config (pass configs set over the caller's)."""
    current = tvm.transform.PassContext.current()
    merged = {**dict(current.config), **(config or {})}
    try:
        return tvm.transform.PassContext(
            opt_level=current.opt_level,
            required_pass=list(current.required_pass),
            disabled_pass=list(current.disabled_pass),
            instruments=list(instruments),
            config=merged,
        )
    except (TypeError, AttributeError):  # a release whose PassContext differs: the book's plain form
        return tvm.transform.PassContext(instruments=list(instruments), config=merged)


def run_instrument(
    func, target, *, keep_ir: bool = False, knockout=None, keep_source: bool = False, lower=None, other_tracer=None
) -> tuple[list[dict], BaseException | None, dict]:
    """Lower ``func`` for ``target`` under the tracer: (rows, the exception tilelang.lower raised or None, info).

    info: ``kernel_source_lines`` (when lowering succeeded), ``phase_source``, ``prints`` (modules printed),
    ``lower_seconds``, ``tracer_seconds``, ``tracer_errors``; with ``keep_ir``, ``ir`` (module docstring); with
    ``keep_source``, ``kernel_source`` (the generated source, None when lowering failed). ``knockout``: the
    passes TVM is to skip (``make_instrument``). ``lower(func, target)``: what lowers under the tracer, by default
    ``tilelang.lower``; tilelang_trace.run_trace_env passes its own, so that one lowering gives both records.
    ``other_tracer(time_elsewhere)``: a context manager around the lowering that hands the seconds another tracer
    spends in it to the recorder, so that each pass's ``seconds`` stays its own.
    """
    import tilelang
    from tilelang import tvm

    lower = lower or (lambda func, target: tilelang.lower(func, target=target))
    recorder = PassRecorder(PhaseResolver(), keep_ir=keep_ir)
    error: BaseException | None = None
    artifact = None
    started = time.perf_counter()
    timed_apart = other_tracer(recorder.time_elsewhere) if other_tracer else contextlib.nullcontext()
    try:
        with pass_identity.watching(), outer_pass_context(tvm, [make_instrument(recorder, knockout)]), timed_apart:
            with target:
                artifact = lower(func, target)
    except Exception as exc:  # noqa: BLE001 - a failing pass is data
        error = exc
    lowered = time.perf_counter()

    failed_runs = recorder.close_failed_runs(error, lowered) if error is not None else 0
    recorder.close_unfinished_rows(lowered)
    for row, before, after in recorder.changed_texts:
        row["added_stripped"], row["deleted_stripped"] = line_churn.sequence_matcher_counts(before, after, strip=True)
    rows = list(recorder.rows)  # the pass runs; the rows added below are not runs (nor IR archive steps)
    pass_runs = len(rows)
    last_pass_ended = recorder.last_pass_ended or started
    after_passes = round(max(0.0, lowered - last_pass_ended - recorder.seconds_elsewhere), 6)
    if error is not None and not failed_runs:
        # outside every pass: TileLang's trace records a codegen failure as a failed "codegen" record
        phase, name = _failure_place(error)
        rows.append(passes_table.failed_row(len(rows), phase, name, error, depth=0, seconds=after_passes))
    kernel_source = getattr(artifact, "kernel_source", None) if artifact is not None else None
    if artifact is not None and recorder.final_ir_text is not None:
        # as TileLang's run record: the IR handed to codegen (what the last pass returned) against the source
        rows.append(
            {
                "step": len(rows),
                "phase": CODEGEN_PHASE,
                "pass": "codegen",
                "pass_id": "codegen",
                "status": passes_table.STATUS_CODEGEN,
                "changed": True,
                **run_record.churn_columns(recorder.final_ir_text, kernel_source or ""),
                "depth": 0,
                "seconds": after_passes,
            }
        )

    info: dict = {
        "phase_source": recorder.resolve_phase.source,
        "pass_runs": pass_runs,
        "prints": recorder.prints,
        "lower_seconds": round(lowered - started, 6),
        "tracer_seconds": round(recorder.tracer_seconds, 6),
        "tracer_errors": list(recorder.tracer_errors),
    }
    if artifact is not None:
        info["kernel_source_lines"] = len((kernel_source or "").splitlines())
    if keep_ir:
        info["ir"] = recorder.ir_archive(kernel_source)
    if keep_source:
        info["kernel_source"] = kernel_source
    return rows, error, info
