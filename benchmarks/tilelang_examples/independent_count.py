"""An independent count of a workflow run over TileLang's examples: TileLang alone, none of this project's code.

    TL_PYTHON count CONFIG.yaml OUT.json        # with the Python whose TileLang traced the run
    python compare OUT.json RESULTS/churn.csv   # the run's instrument rows against that count

`count` imports each example file of CONFIG, gets each kernel's PrimFunc as TileLang's own compile does
(``get_tir(**params)``, an @autotune's ``jit_impl.get_tir``, under the cuda sm_90 target), and lowers it with
``tilelang.lower`` under the decorator's own pass configs, with a plain TVM pass instrument in an outer
PassContext counting the pass runs and the runs after which the IR text (``mod.script()``) differs from before
(nested passes on a stack). A configuration that TileLang cannot get or lower is recorded with its exception.
`compare` says, for each configuration TileLang lowers, whether the workflow's instrument rows have as many IR
pass runs and changed runs, and lists the ones TileLang itself cannot lower. PyYAML is read only by `count`
when CONFIG is YAML; a release environment without it takes the config as JSON.
"""

import importlib.util
import json
import sys
from pathlib import Path


def language_value(value, language):
    """A config value as the kernel gets it: "T.<name>" is that object of tilelang.language, a list a tuple."""
    if isinstance(value, str) and value.startswith("T."):
        found = language
        for part in value.split(".")[1:]:
            found = getattr(found, part)
        return found
    if isinstance(value, list):
        return tuple(language_value(item, language) for item in value)
    return value


def configurations(config: dict):
    """(key, file, function, params) of every parameter set of the config's kernels."""
    for entry in config["kernels"]:
        functions = entry["function"] if isinstance(entry["function"], list) else [entry["function"]]
        for function in functions:
            sets = entry["params"].get(function, [{}]) if isinstance(entry["params"], dict) else entry["params"]
            for params in sets:
                params = {**entry.get("defaults", {}), **params}
                key = f"{entry['name']}.{function} {json.dumps(params, sort_keys=True)}"
                yield key, entry["file"], function, params


def count(config_path: str, out_path: str) -> int:
    import tilelang
    import tilelang.language as T
    from tilelang import tvm

    text = Path(config_path).read_text(encoding="utf-8")
    config = json.loads(text) if config_path.endswith(".json") else __import__("yaml").safe_load(text)

    @tvm.instrument.pass_instrument
    class Counter:
        def __init__(self):
            self.runs, self.changed, self.before = 0, 0, []

        def run_before_pass(self, mod, info):
            self.before.append(mod.script())

        def run_after_pass(self, mod, info):
            self.runs += 1
            self.changed += int(mod.script() != self.before.pop())

    results = {}
    for key, file, function, params in configurations(config):
        try:
            sys.path.insert(0, str(Path(file).resolve().parent))
            spec = importlib.util.spec_from_file_location(f"example_{function}", file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            kernel = getattr(module, function)
            impl = getattr(kernel, "jit_impl", kernel)
            target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
            get_tir = getattr(impl, "get_tir", None)
            if get_tir is None:  # 0.1.6's and 0.1.7's jit: a wrapper that compiles what __wrapped__ returns
                get_tir = impl.__wrapped__
                impl = next(cell.cell_contents for cell in kernel.__closure__ if hasattr(cell.cell_contents, "out_idx"))
            with target:
                func = get_tir(**{name: language_value(v, T) for name, v in params.items()})
            own = {}
            if "tilelang_pass_configs" in func.attrs:
                own = {str(k): v for k, v in dict(func.attrs["tilelang_pass_configs"]).items()}
            own |= {getattr(k, "value", str(k)): v for k, v in (impl.pass_configs or {}).items()}
            counter = Counter()
            with target, tvm.transform.PassContext(config=own, instruments=[counter]):
                tilelang.lower(func, target=target)
            results[key] = {"status": "ok", "pass_runs": counter.runs, "changed_runs": counter.changed}
        except BaseException as exc:  # noqa: BLE001 - what TileLang itself says of this configuration
            said = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            results[key] = {"status": "failed", "error": f"{type(exc).__name__}: {said}"}
        print(key, results[key], flush=True)
    Path(out_path).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


def compare(count_path: str, churn_path: str) -> int:
    import pandas as pd

    counted = json.loads(Path(count_path).read_text(encoding="utf-8"))
    churn = pd.read_csv(churn_path)
    churn = churn[churn["mode"] == "instrument"]
    runs = [(kernel, json.loads(params), rows) for (kernel, params), rows in churn.groupby(["kernel", "params"])]
    equal, differ = 0, []
    for key, found in counted.items():
        name, params = key.split(" ", 1)
        entry = name.rsplit(".", 1)[0]
        matching = [rows for kernel, given, rows in runs if kernel in (entry, name) and given == json.loads(params)]
        if found["status"] != "ok":
            print(f"TileLang itself cannot lower {name}: {found['error'][:120]}")
            continue
        if len(matching) != 1 or (matching[0]["status"] == "failed").any():
            differ.append(f"{name}: no traced rows")
            continue
        passes = matching[0][matching[0]["status"].isin(["changed", "noop"])]
        mine = (len(passes), int((passes["status"] == "changed").sum()))
        if mine == (found["pass_runs"], found["changed_runs"]):
            equal += 1
        else:
            differ.append(f"{name}: workflow {mine}, TileLang alone {(found['pass_runs'], found['changed_runs'])}")
    lowered = sum(found["status"] == "ok" for found in counted.values())
    print(f"TileLang alone lowers {lowered} of {len(counted)} configurations; the workflow's rows equal its count "
          f"for {equal}, differ for {len(differ)}")  # fmt: skip
    for line in differ:
        print("  " + line)
    return 0 if not differ else 1


if __name__ == "__main__":
    commands = {"count": count, "compare": compare}
    if len(sys.argv) != 4 or sys.argv[1] not in commands:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(commands[sys.argv[1]](sys.argv[2], sys.argv[3]))
