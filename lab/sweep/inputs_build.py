"""Build the certificate's derived inputs for the installed FlashInfer (workshop: it writes the kit's data).

`read_tests_at(git_dir, ref)`: FlashInfer's tests/ at a tag of a git mirror (the `fetch` tool's
copy of github:flashinfer-ai/flashinfer), read as syntax (pcgkit.sweep.upstream_tests), with the
commit id and date -> fixtures/certificates/inputs/upstream-tests-<ref>.json.
`build_inputs(upstream)`: every public function's parameters (inspect.signature + its numpydoc
section, parsed by docstring_parser) -> lab.sweep.derive -> fixtures/certificates/inputs/
flashinfer-<version>.json (schema INPUTS_SCHEMA), one entry per callable: a call with the source
of every argument, or the reason none could be derived; and `ops`: per registered op with a required
`str` schema argument, the value the release's own code names for it (`op_str_values`, lab.sweep.op_strings),
with file:line. `bin/pcgkit lab certificate-inputs` runs it.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import io
import tarfile
import tempfile
from pathlib import Path

from lab.sweep.derive import KIT, UPSTREAM, Dim, Param, derive_call, load_kit_dims, with_documentation_of
from lab.sweep.doctext import documented_by
from lab.sweep.upstream_tests import read_test_sources, smallest_dims

INPUTS_SCHEMA = "pcgkit.certificate-inputs/1"
UPSTREAM_SCHEMA = "pcgkit.upstream-tests/1"
METHOD_REASON = "a method: its instance needs constructor (and plan()) arguments, which only a hand spec gives"


class UpstreamReadError(RuntimeError):
    """The git mirror could not give tests/ at that ref."""


def read_tests_at(git_dir: Path, ref: str) -> dict:
    """FlashInfer's tests/ at `ref` (a tag), as upstream_tests data with the commit and its date."""
    from pcgkit.util import proc

    def git(*args: str, log: Path | None = None):
        return proc.run(["git", "--git-dir", str(git_dir), *args], timeout=120, echo=False, log_path=log)

    commit = git("rev-parse", f"{ref}^{{commit}}")
    if not commit.ok:
        said = (commit.output_tail.strip().splitlines() or ["no output"])[0]  # git's `fatal: ...` line, whole
        raise UpstreamReadError(f"{git_dir}: no commit for {ref!r}: {said[:200]}")
    date = git("log", "-1", "--format=%cI", ref)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "tests.tar"
        done = git("archive", "--format=tar", "-o", str(archive), ref, "tests")
        if not done.ok:
            raise UpstreamReadError(f"git archive {ref} tests: {done.describe_failure()}")
        files = {}
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".py"):
                    handle = tar.extractfile(member)
                    if handle is not None:
                        files[member.name] = io.TextIOWrapper(handle, encoding="utf-8", errors="replace").read()
    return {"schema": UPSTREAM_SCHEMA, "repo": "github:flashinfer-ai/flashinfer", "ref": ref,
            "commit": commit.output_tail.strip().splitlines()[-1], "commit_date": date.output_tail.strip(),
            "read": _dt.date.today().isoformat(), "files": len(files), **read_test_sources(files),
            "template_calls": _template_calls(files)}


def _template_calls(files: dict[str, str]) -> list[dict]:
    """The calls tests/trace/ makes with a trace template's init() output (lab.sweep.template_calls)."""
    from lab.sweep.template_calls import template_test_calls

    found = []
    for path, source in sorted(files.items()):
        if path.startswith("tests/trace/"):
            try:
                found += template_test_calls(source, path)
            except SyntaxError:
                continue
    return found


def dims_for(upstream: dict | None) -> dict[str, Dim]:
    """Upstream tests' values first, the kit's table for the rest."""
    dims = {name: Dim(value, KIT, "pcgkit/sweep/dims.toml") for name, value in load_kit_dims().items()}
    for name, (value, path) in smallest_dims(upstream or {}).items():
        dims[name] = Dim(value, UPSTREAM, path)
    return dims


def params_of(obj) -> list[Param] | None:
    """The parameters as the release states them (signature + numpydoc), or None without a signature."""
    import docstring_parser

    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    try:
        # numpydoc lets one entry document several parameters ("branch, residual : torch.Tensor"):
        # the release states the same description for each of them.
        documented = {name.strip(): p for p in docstring_parser.parse(inspect.getdoc(obj) or "").params
                      for name in p.arg_name.split(",") if name.strip()}
    except docstring_parser.ParseError:
        documented = {}
    params = []
    for name, p in signature.parameters.items():
        if name in ("self", "cls"):
            continue
        annotation = "" if p.annotation is inspect.Parameter.empty else inspect.formatannotation(p.annotation)
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        doc = documented.get(name)
        params.append(Param(name, p.kind.name, annotation, default, (doc.type_name or "") if doc else "",
                            (doc.description or "") if doc else ""))
    return params


def _referred(obj, name: str):
    """The callable a docstring names (":func:`~flashinfer.fused_moe.trtllm_bf16_moe`", ":func:`cute_dsl_fused_moe`"):
    a dotted path from the top, else a name in the referring function's module or in flashinfer."""
    import importlib

    import flashinfer

    module_name, _, attr = name.rpartition(".")
    candidates = [module_name] if module_name else [getattr(inspect.unwrap(obj), "__module__", ""), "flashinfer"]
    for candidate in candidates:
        try:
            found = getattr(importlib.import_module(candidate), attr, None) if candidate else None
        except ImportError:
            found = None
        if callable(found) and found is not obj:
            return found
    return getattr(flashinfer, attr, None)


def documented_params(obj) -> tuple[list[Param] | None, str]:
    """params_of(obj), where its docstring refers to another callable for the parameters' documentation
    (lab.sweep.derive.documented_by), with that callable's entries for the ones it leaves unsized; and the
    name it referred to ("" if none)."""
    params = params_of(obj)
    name = documented_by(inspect.getdoc(obj) or "")
    other = _referred(obj, name) if params is not None and name else None
    documented = params_of(other) if other is not None else None
    if params is None or not documented or not name:
        return params, ""
    return with_documentation_of(params, documented), name


def _from_upstream_call(obj, call: dict, docstring_reason: str) -> dict:
    """A call FlashInfer's own test makes (pcgkit.sweep.upstream_tests.calls_in), if it binds to the
    installed signature; else the docstring's reason with the binding's."""
    from pcgkit.sweep.inputs import build_call
    from pcgkit.sweep.specs import SpecError, parse_call

    try:
        args, kwargs = build_call(parse_call({"args": call["args"], "kwargs": call["kwargs"]}, where=call["test"]))
        inspect.signature(obj).bind(*args, **kwargs)
    except (TypeError, ValueError, SpecError) as exc:
        return {"reason": f"{docstring_reason}; the upstream test's call does not bind here ({str(exc)[:80]})"}
    names = [*inspect.signature(obj).parameters][: len(call["args"])]
    return {"args": call["args"], "kwargs": call["kwargs"], "sources": dict.fromkeys([*names, *call["kwargs"]], UPSTREAM),
            "source": UPSTREAM, "dims": [], "upstream_call": f"{call['file']}:{call['line']} ({call['test']})"}


def _source_file(function) -> Path | None:
    """The file a Python function was defined in, or None (a builtin, a partial: no source to read)."""
    import inspect

    try:
        found = inspect.getsourcefile(function)
    except TypeError:
        return None
    return Path(found).resolve() if found and Path(found).is_file() else None


def op_str_values(ops, package: Path | None = None) -> dict[str, dict]:
    """qualname -> the values the release's code names for each required `str` argument of the op's schema
    (lab.sweep.op_strings, read from the source of the op's registered Python function and its fake: their
    modules first, then the package modules they import, then their package's other modules), each with
    file:line and rule; or the reason none. `package`: the folder whose code is read (default: flashinfer's)."""
    from torch._library.custom_ops import OPDEFS

    from lab.sweep.derive import schema_args
    from lab.sweep.op_strings import package_imports, str_value

    if package is None:
        import flashinfer

        package = Path(flashinfer.__file__).parent
    package = package.resolve()
    root = package.parent
    out: dict[str, dict] = {}
    for op in ops:
        try:
            names = [name for type_, name, default, _ in schema_args(op.schemas[0]) if type_ == "str" and default is None]
        except (ValueError, IndexError):
            continue  # derive_op_call says why
        if not names:
            continue
        opdef = OPDEFS.get(op.qualname)
        functions = [getattr(opdef, "_init_fn", None), getattr(opdef, "_abstract_fn", None)]
        files = list(dict.fromkeys(path for f in functions if f is not None and (path := _source_file(f)) is not None))
        files = [f for f in files if f.is_relative_to(package)]
        if not files:  # not a custom_op of the release's Python (torch.library.define, another package's): nothing to read
            continue
        own = list(files)
        imported = [f.parent / f"{stem}.py" for f in own for stem in package_imports(f.read_text(encoding="utf-8", errors="replace"))]
        files += [f for f in dict.fromkeys(imported) if f.is_file() and f not in files]
        files += sorted({n for f in own for n in f.parent.glob("*.py")} - set(files))
        sources = [(f.relative_to(root).as_posix(), f.read_text(encoding="utf-8", errors="replace")) for f in files]
        values = {name: found.to_dict() for name in names if (found := str_value(sources, name)) is not None}
        missing = [name for name in names if name not in values]
        out[op.qualname] = {"str_values": values, **({"reason": f"no value in the release's code for {', '.join(missing)}"}
                                                      if missing else {})}
    return out


def _template_entry(call: dict, version: str) -> dict[str, dict]:
    """The derived inputs one tests/trace/ call gives: the wrapper's run() (and forward(), where the class has one
    the same call binds to), with its constructor and plan() calls, from the installed release's template init()
    at its defaults on the CPU. Raises TemplateError, or ImportError / AttributeError / TypeError / KeyError from
    the release, when the release cannot give it."""
    import importlib

    import flashinfer

    from lab.sweep.derive import KIT
    from lab.sweep.template_calls import TEMPLATE, spec_call
    from pcgkit.sweep.inputs import build_call
    from pcgkit.sweep.specs import parse_call

    module_name, _, name = call["template"].partition(":")
    template = getattr(importlib.import_module(module_name), name)
    cls = getattr(flashinfer, call["class"])
    init = template.init
    inputs = init(device="cpu")
    workspace = "u8[1048576]"  # the kit's workspace, as the hand specs (nothing traced reads its size)
    source_file = Path(inspect.getsourcefile(init) or "").as_posix().rpartition("site-packages/")[2]
    where = f"{source_file}:{inspect.getsourcelines(init)[1]}"
    construct = spec_call(call["construct"], inputs, workspace)
    plan = spec_call(call["plan"], inputs, workspace) if "plan" in call else None
    run = spec_call(call["run"], inputs, workspace)
    instance_args = build_call(parse_call(construct, where=call["file"]))
    inspect.signature(cls).bind(*instance_args[0], **instance_args[1])
    if plan is not None:
        plan_args = build_call(parse_call(plan, where=call["file"]))
        inspect.signature(cls.plan).bind(None, *plan_args[0], **plan_args[1])
    run_args = build_call(parse_call(run, where=call["file"]))
    lines = ", ".join(f"{k} :{call[k]['line']}" for k in ("construct", "plan", "run") if k in call)
    out = {}
    for method in ("run", "forward"):
        function = getattr(cls, method, None)
        if function is None:
            continue
        try:
            inspect.signature(function).bind(None, *run_args[0], **run_args[1])
        except TypeError:
            continue
        names = [*inspect.signature(function).parameters][1: 1 + len(run["args"])]
        alias = "" if method == "run" else "; forward() given run()'s call"
        out[f"flashinfer.{call['class']}.{method}"] = {
            **run, "construct": construct, **({"plan": plan} if plan is not None else {}),
            "sources": {**dict.fromkeys([*names, *run["kwargs"]], TEMPLATE), "float_workspace_buffer": KIT},
            "source": TEMPLATE,
            "template": f"{where} ({name}.init() at its defaults, flashinfer {version}, device cpu)",
            "upstream_call": f"{call['file']} ({lines}){alias}",
        }
    return out


def template_inputs(calls: list[dict], version: str) -> dict[str, dict]:
    """target -> derived inputs from the release's trace templates (tests/trace/ calls read from the upstream tests);
    a call the installed release cannot give is left out (the hand spec, where one exists, judges the target)."""
    from lab.sweep.template_calls import TemplateError

    out: dict[str, dict] = {}
    for call in calls:
        try:
            entries = _template_entry(call, version)
        except (TemplateError, ImportError, AttributeError, TypeError, KeyError, ValueError):
            continue
        for target, entry in entries.items():
            out.setdefault(target, entry)
    return out


def build_inputs(upstream: dict | None) -> dict:
    """The derived inputs of every public callable of the installed release."""
    import flashinfer

    from lab.sweep.discover import discover, public_callables
    from lab.sweep.discovery import judgeable
    from pcgkit.sweep.engine import resolve

    dims = dims_for(upstream)
    callables, _ = public_callables(flashinfer)
    templated = template_inputs((upstream or {}).get("template_calls") or [], flashinfer.__version__)
    entries: dict[str, dict] = {}
    for found in callables:
        if not judgeable(found):
            continue
        if found.kind == "method":
            entries[found.target] = templated.get(found.target) or {"reason": METHOD_REASON}
            continue
        params, documented_by_name = documented_params(resolve(found.target))
        if params is None:
            entries[found.target] = {"reason": "no signature to read"}
            continue
        derived = derive_call(params, dims).to_dict()
        if documented_by_name:
            derived["documented_by"] = documented_by_name
        call = (upstream or {}).get("evaluated_calls", {}).get(found.target.removeprefix("flashinfer."))
        if "reason" in derived and call is not None:
            derived = _from_upstream_call(resolve(found.target), call, derived["reason"])
        entries[found.target] = derived
    return {
        "schema": INPUTS_SCHEMA, "flashinfer": flashinfer.__version__, "created": _dt.date.today().isoformat(),
        "upstream_tests": {k: upstream[k] for k in ("repo", "ref", "commit", "commit_date")} if upstream else None,
        "dims": {name: {"value": d.value, "source": d.source, "from": d.note} for name, d in sorted(dims.items())},
        "callables": entries,
        "ops": op_str_values(discover().ops),
    }
