"""Pass configs as a grid axis (config pass_configs, core/pass_configs.py): the grid, every mode's lowering, the
knockout beside TileLang's own switch, and the workflow.

Expected values come from TileLang itself: a driver subprocess lowers the same kernel under
``PassContext(config=...)`` with a pass instrument of its own written here, and records the passes that ran, the
generated source's sha256, or the error TVM raises for a key it does not know.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FAILS_AT_SETUP, NO_WS, WS_PASSES, require_tilelang, run_batch
from test_job_grid import grid_of, refused
from tilelang_churn.core import knockout_rows, pass_configs, passes_table
from tilelang_churn.tables import knockout_table
from tilelang_churn.trace import trace_cli

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
UNKNOWN_KEY = {"tirx.no_such_option": True}
GEMM_256 = ["--mode", "instrument", "--shape", "256,256,256", "--block", "64,64,32", "--target", "cuda-sm90"]

# TileLang lowering the kernel of the arguments under each set of pass configs, with an instrument of the test's own
REFERENCE = textwrap.dedent(
    """
    import hashlib, json, os, sys
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    sys.path.insert(0, sys.argv[1])
    import tilelang
    from tilelang import tvm
    from tilelang_churn.trace import trace_cli, tilelang_trace

    @tvm.ir.instrument.pass_instrument
    class Names:
        def __init__(self):
            self.names = []

        def run_before_pass(self, mod, info):
            self.names.append(str(info.name).rsplit(".", 1)[-1])

    spec = trace_cli.parse_args(json.loads(sys.argv[2])).spec
    results = []
    for config in json.loads(sys.argv[3]):
        names = Names()
        target = tvm.target.Target(spec.target)
        try:
            with tvm.transform.PassContext(config=config, instruments=[names]), target:
                source = tilelang.lower(tilelang_trace.build_kernel(spec), target=target).kernel_source
            results.append({"passes": names.names, "sha256": hashlib.sha256(source.encode()).hexdigest()})
        except Exception as exc:
            results.append({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"})
    print(json.dumps(results))
    """
)


def reference(args: list, configs: list) -> list:
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(SCRIPTS), json.dumps(args), json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# -------------------------------------------------------------------------------------------- no TileLang


def test_a_set_is_named_by_its_keys_in_the_folder_and_the_label():
    assert pass_configs.folder_suffix({}) == pass_configs.label({}) == ""
    configs = {"tl.disable_warp_specialized": True, "tl.config_index_bitwidth": 64}
    assert pass_configs.folder_suffix(configs) == "+config_index_bitwidth-64+disable_warp_specialized"
    assert pass_configs.label(configs) == " [tl.config_index_bitwidth=64, tl.disable_warp_specialized]"
    assert pass_configs.canonical(configs) == '{"tl.config_index_bitwidth":64,"tl.disable_warp_specialized":true}'
    with pytest.raises(pass_configs.PassConfigError, match="'disable' is not a pass config key"):
        pass_configs.parse('{"disable": true}')
    with pytest.raises(pass_configs.PassConfigError, match=r"tl.x: \{'a': 1\} is not a boolean"):
        pass_configs.check({"tl.x": {"a": 1}})


def test_each_set_is_a_configuration_of_every_shape_and_kernel_without_its_own():
    grid = grid_of(
        shapes=[{"M": 256, "N": 256, "K": 256}],
        kernels=[
            {"name": "rmsnorm", "shipped": "rmsnorm", "params": [{}]},
            {"name": "rms2", "shipped": "rmsnorm", "params": [{}], "pass_configs": [{"tl.disable_tma_lower": True}]},
        ],
        defaults={"pass_configs": [{}, NO_WS]},
    )
    assert grid.configurations == [
        "256x256x256",
        "256x256x256+disable_warp_specialized",
        "rmsnorm",
        "rmsnorm+disable_warp_specialized",
        "rms2+disable_tma_lower",
    ]
    for (_, _, shape, _), job in grid.jobs.items():
        spec = trace_cli.parse_args(list(job.args)).spec  # the job's own command line carries the set
        expected = NO_WS if "warp" in shape else {"tl.disable_tma_lower": True} if "tma" in shape else {}
        assert spec.pass_configs == expected, shape
        provenance = spec.provenance("0.1.15")
        assert provenance["pass_configs"] == pass_configs.canonical(expected)
        args = list(job.args)
        if "--pass-configs" in args:
            del args[args.index("--pass-configs") : args.index("--pass-configs") + 2]
        plain = trace_cli.parse_args(args).spec
        assert provenance["kernel_label"] == plain.kernel_label + pass_configs.label(expected)


def test_a_bad_set_stops_the_workflow_naming_its_key():
    assert refused(defaults={"pass_configs": [{"disable": True}]}).startswith(
        "config defaults.pass_configs[0]: 'disable' does not match"
    )
    assert refused(kernels=[{"name": "r", "shipped": "rmsnorm", "params": [{}], "pass_configs": [{"tl.x": {}}]}]) == (
        "config kernels[0].pass_configs[0].tl.x: {} is none of what it takes: true or false; a number; a string; a list"
    )
    assert refused(shapes=[{"M": 8, "N": 8, "K": 8, "pass_configs": [NO_WS, NO_WS]}]) == (
        "config shapes[0].pass_configs[1]: {'tl.disable_warp_specialized': True} is also "
        "shapes[0].pass_configs[0]; the jobs would be identical"
    )


@pytest.mark.integration
def test_a_tl_key_the_installed_release_lacks_is_refused_with_the_closest_keys():
    require_tilelang()
    message = refused(defaults={"pass_configs": [{"tl.disable_warp_specialised": True}]})
    assert message.startswith("config pass_configs (configuration '256x256x256+disable_warp_specialised'): ")
    assert "'tl.disable_warp_specialised' is not a pass config of TileLang" in message
    assert "did you mean tl.disable_warp_specialized" in message


@pytest.mark.integration
@pytest.mark.parametrize(
    "pass_config, says",
    [
        ({"foo.bar": True}, "'foo.bar' is not a pass config option of TileLang "),
        ({"tir.disable_vectorize": True}, "did you mean tirx.disable_vectorize"),
        ({"tl.disable_warp_specialized": "yes"}, 'takes true, false or an integer, not "yes" (TVM\'s type ir.IntImm'),
        ({"tl.layout_visualization_formats": ["png"]}, 'takes a string, not ["png"] (TVM\'s type str'),
        ({"tirx.Simplify": True}, "is TVM's config object tirx.transform.SimplifyConfig, which pass_configs cannot"),
    ],
)
def test_a_key_or_value_tvm_refuses_is_refused_before_any_job_with_the_closest_options(pass_config, says):
    """Round four: a wrong value type for a known key, and keys outside tl. (tir.disable_vectorize, foo.bar), passed
    the config check; every job of the set then failed with TVM's list of all its options. The check asks TVM's own
    registry of the installed TileLang (PassContext.list_configs: every key and its type)."""
    require_tilelang()
    message = refused(defaults={"pass_configs": [pass_config]})
    assert message.startswith("config pass_configs (configuration '256x256x256+") and says in message, message
    grid_of(defaults={"pass_configs": [{"tirx.disable_vectorize": True, "tl.disable_warp_specialized": 1}]})


def test_a_table_written_before_the_column_reads_as_the_defaults(tmp_path):
    columns = [c for c in passes_table.COLUMNS if c not in passes_table.ADDED_COLUMNS]
    row = {c: "" for c in columns} | {"step": "0", "pass": "p", "status": "noop", "mode": "instrument"}
    path = tmp_path / "passes.csv"
    path.write_text(",".join(columns) + "\n" + ",".join(row[c] for c in columns) + "\n")
    (read,) = passes_table.read_rows(path)
    assert read["pass_configs"] == pass_configs.DEFAULT and list(read) == passes_table.COLUMNS
    assert read["pass_id"] == "p"  # a pass's identity, before the column, is its name
    # a column missing that was always there is still refused
    path.write_text(",".join(columns[1:]) + "\n" + ",".join(row[c] for c in columns[1:]) + "\n")
    with pytest.raises(passes_table.TableError, match="are not the passes.csv schema"):
        passes_table.read_rows(path)


# ---------------------------------------------------------------------------------------------- TileLang


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """The GEMM traced in two modes, without and with the switch (and, in mode instrument, with a key TVM does
    not know), and TileLang's own lowering of it."""
    require_tilelang()
    tmp = tmp_path_factory.mktemp("pass_configs")
    out = {}
    sets = {"instrument": (("default", {}), ("no_ws", NO_WS), ("unknown_key", UNKNOWN_KEY))}
    sets["trace-env"] = sets["instrument"][:2]
    for mode in ("instrument", "trace-env"):  # a batch per mode (trace-env's is read at import): one import each
        jobs = {}
        for name, configs in sets[mode]:
            args = [*GEMM_256, "--pass-configs", json.dumps(configs)]
            args[1] = mode
            jobs[tuple(args)] = name
        for args, (done, folder) in run_batch(tmp / mode, list(jobs)).items():
            assert done.returncode == (trace_cli.EXIT_PASS_FAILED if jobs[args] == "unknown_key" else 0), done.stderr
            out[mode, jobs[args]] = passes_table.read_rows(folder / "passes.csv")
    return out, reference(GEMM_256, [{}, NO_WS, UNKNOWN_KEY])


@pytest.mark.integration
def test_every_mode_lowers_under_the_set_as_tilelang_does(traced):
    out, (default, no_ws, _) = traced
    # the switch matters here: TileLang itself runs the warp-specialization passes only without it
    assert set(WS_PASSES) <= set(default["passes"]) and not set(WS_PASSES) & set(no_ws["passes"])
    for name, want in (("default", default), ("no_ws", no_ws)):
        runs = [row["pass"] for row in out["instrument", name] if row["status"] in ("changed", "noop", "failed")]
        assert runs == want["passes"], name
        assert {row["pass_configs"] for row in out["instrument", name]} == {
            pass_configs.canonical({} if name == "default" else NO_WS)
        }
        # trace-env reads TileLang's own run record: its passes follow the set too
        env_passes = {row["pass"] for row in out["trace-env", name]}
        assert bool(set(WS_PASSES) & env_passes) == (name == "default"), name


@pytest.mark.integration
def test_a_key_tvm_does_not_know_is_the_jobs_failed_row_with_tvms_words(traced):
    """The job exits EXIT_PASS_FAILED (checked as the batch ran it) with one failed row: TVM's refusal."""
    out, (_, _, bad) = traced
    (row,) = out["instrument", "unknown_key"]
    assert row["status"] == "failed" and row["pass"] == "setup"
    assert row["error"].startswith(bad["error"].split(" candidates")[0])


@pytest.fixture(scope="module")
def knocked(tmp_path_factory):
    """The warp-specialization passes knocked out of the GEMM, beside the same GEMM with TileLang's switch."""
    require_tilelang()
    tmp = tmp_path_factory.mktemp("knockout_switch")
    jobs = []
    for name, configs in (("default", {}), ("no_ws", NO_WS)):
        args = [*GEMM_256, "--pass-configs", json.dumps(configs), "--out", str(tmp / name)]
        jobs.append({"args": args, "log": str(tmp / f"{name}.log")})
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "knockout_batch.py"), "--jobs", str(tmp / "jobs.json"), "--workers", "2"]
        + ["--passes", ",".join(WS_PASSES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp


@pytest.mark.integration
def test_a_knockout_is_read_beside_the_official_switch(knocked):
    rows = knockout_table.gather([knocked / "default" / "knockout.json", knocked / "no_ws" / "knockout.json"])
    default = {row["variant"]: row for row in rows if row["pass_configs"] == "{}"}
    switched = {row["variant"]: row for row in rows if row["pass_configs"] != "{}"}
    sources = knockout_rows.read_sources(knocked / "default" / knockout_rows.SOURCES)
    (switched_source,) = {s for s in knockout_rows.read_sources(knocked / "no_ws" / knockout_rows.SOURCES).values()}
    assert switched["baseline"]["source_sha256"] == hashlib.sha256(switched_source.encode()).hexdigest()
    for name in WS_PASSES:
        row = default[name]
        assert row["skipped_runs"] >= 1 and row["switch"] == pass_configs.canonical(NO_WS)
        assert row["switch_pass_configs"] == pass_configs.canonical(NO_WS)
        assert row["switch_source_equal"] == (sources[name] == switched_source), name
        # under the switch the pass never runs: its knockout cannot take effect, and no other switch is sought
        assert switched[name]["skipped_runs"] == 0 and switched[name]["switch_pass_configs"] in ("", None)
    assert default["baseline"]["switch"] in ("", None)


# -------------------------------------------------------------------------------------------- the workflow


@pytest.mark.slow
def test_the_workflow_traces_and_knocks_out_each_set(pass_configs_run):
    churn = passes_table.read_rows(pass_configs_run / "results" / "churn.csv")
    sets = {"{}", pass_configs.canonical(NO_WS), pass_configs.canonical(FAILS_AT_SETUP)}
    assert {row["pass_configs"] for row in churn} == sets
    gathered = knockout_rows.read_rows(pass_configs_run / "results" / "knockout" / "knockout.csv")
    assert {row["pass_configs"] for row in gathered} == sets
    beside = [row for row in gathered if row["switch_pass_configs"]]
    assert {row["variant"] for row in beside} == set(WS_PASSES)
    assert {row["pass_configs"] for row in beside} == {"{}"}
    page = next((pass_configs_run / "results" / "knockout" / "pages").glob("*256x256x256_b64x64x32.html")).read_text()
    assert page.count("switch tl.disable_warp_specialized=true: ") == len(WS_PASSES)


@pytest.mark.integration
def test_tvms_refusal_of_a_key_is_one_short_line_naming_the_closest_keys():
    """TVM refuses an unknown key listing every key it knows (about 80, on one line); a row says the key, how many
    TVM knows and the closest of them, from TVM's own list."""
    require_tilelang()
    from tilelang import tvm

    for key, closest in [("tirx.disable_vectorise", "tirx.disable_vectorize"), ("foo.bar", None)]:
        with pytest.raises(Exception) as caught:
            with tvm.transform.PassContext(config={key: True}):
                pass
        said = passes_table.error_text(caught.value)
        assert "candidates are" in str(caught.value) and "candidates are" not in said
        assert f"Invalid config option {key!r}: TVM knows " in said and len(said) < 200
        assert (f"the closest {closest}" in said) if closest else ("none close to it" in said)
