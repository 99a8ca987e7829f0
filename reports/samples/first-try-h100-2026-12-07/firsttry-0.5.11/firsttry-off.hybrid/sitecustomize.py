"""pcgkit's hybrid-target shim (gpu-as-sm120), loaded as `sitecustomize` by every Python process of one server.

Written next to the server's log by pcgkit.e2e.hybrid and put first on the server's PYTHONPATH; it does
nothing unless PCGKIT_HYBRID_ANSWER is set. Standalone on purpose (no pcgkit import): it must load in
any interpreter of the server, and travels with the log as part of the reproduction.

What it changes, and nothing else:
- `torch.cuda.get_device_capability` answers PCGKIT_HYBRID_ANSWER (e.g. 12.0) when the calling frame's
  module starts with one of PCGKIT_HYBRID_CALLERS (sglang.srt., flashinfer., torch._dynamo., and
  <fx-generated> for the graphs dynamo made of their code), and the
  real capability to everyone else (Triton, Inductor, torch itself): Triton takes its compile target from
  the same query, and a kernel built for sm_120 cannot load on the real GPU. Dynamo is among the callers
  because it looks the query up by name and runs it at trace time: leaving it out would send the traced
  SGLang/FlashInfer code down the real GPU's path silently.
- each step in PCGKIT_HYBRID_SKIP (`module:Class.method:first`) has its first call skipped: SGLang's
  eager warm-up forward runs FlashInfer kernels built for the answered arch, which the real GPU cannot run.
Evidence: PCGKIT_HYBRID_EVIDENCE/hybrid-<pid>.jsonl gets one line per process start, per distinct
(caller, answer) of the query, and per skipped call.
"""

import functools
import importlib.abc
import importlib.util
import json
import os
import runpy
import sys
import time

# The caller name given to code that torch.fx generated from a dynamo trace ("<eval_with_key>.N", no module):
# a traced query is also called when the graph runs, and must get the answer the trace got.
FX_GENERATED = "<fx-generated>"


class _Recorder:
    def __init__(self, folder):
        self.path = os.path.join(folder, f"hybrid-{os.getpid()}.jsonl") if folder else None
        self.seen = set()

    def write(self, record):
        if not self.path:
            return
        try:
            with open(self.path, "a") as handle:
                handle.write(json.dumps({**record, "pid": os.getpid(), "t": round(time.time(), 3)}) + "\n")
        except OSError:  # evidence is best effort; never break the server over it
            pass

    def once(self, key, record):
        if key not in self.seen:
            self.seen.add(key)
            self.write(record)


class _HookedLoader(importlib.abc.Loader):
    """Runs the real loader, then a hook on the fresh module; everything else is the real loader's."""

    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._hook(module)

    def __getattr__(self, name):  # get_source, get_code, ...: inspect and linecache need them
        return getattr(self._loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, hooks):
        self.hooks = hooks
        self.busy = set()

    def find_spec(self, name, path, target=None):
        if name not in self.hooks or name in self.busy:
            return None
        self.busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _HookedLoader(spec.loader, self.hooks.pop(name))
        return spec


def _answering(real, answer, callers, recorder):
    @functools.wraps(real)
    def get_device_capability(device=None):
        frame = sys._getframe(1)
        caller = frame.f_globals.get("__name__") or (
            FX_GENERATED if frame.f_code.co_filename.startswith("<eval_with_key>") else "?")
        answered = caller.startswith(callers)
        where = f"{caller}:{frame.f_code.co_name}"
        record = {"event": "query", "query": "torch.cuda.get_device_capability", "caller": where, "answered": answered}
        try:
            result = answer if answered else real(device)
        except Exception as exc:  # the real query failed: say so, and fail as it would have
            recorder.once((where, type(exc).__name__), {**record, "raised": type(exc).__name__})
            raise
        recorder.once((where, result), {**record, "answer": list(result)})
        return result

    get_device_capability.pcgkit_hybrid = True
    return get_device_capability


def _skipping_first(real, step, recorder):
    state = {"skipped": False}

    @functools.wraps(real)
    def method(*args, **kwargs):
        if not state["skipped"]:
            state["skipped"] = True
            recorder.write({"event": "skipped", "step": step,
                            "arguments": {k: repr(v)[:80] for k, v in kwargs.items()}})
            return None
        return real(*args, **kwargs)

    return method


def _install():
    answer_text = os.environ.get("PCGKIT_HYBRID_ANSWER")
    if not answer_text:
        return
    answer = tuple(int(part) for part in answer_text.split("."))
    callers = tuple(c for c in os.environ.get("PCGKIT_HYBRID_CALLERS", "").split(",") if c)
    recorder = _Recorder(os.environ.get("PCGKIT_HYBRID_EVIDENCE"))
    recorder.write({"event": "loaded", "argv": sys.argv[:3], "answer": list(answer), "callers": list(callers)})

    def patch_torch_cuda(module):
        module.get_device_capability = _answering(module.get_device_capability, answer, callers, recorder)

    hooks = {"torch.cuda": patch_torch_cuda}
    for step in filter(None, os.environ.get("PCGKIT_HYBRID_SKIP", "").split(",")):
        module_name, qualname, _which = step.split(":")
        class_name, method_name = qualname.split(".")

        def patch_step(module, class_name=class_name, method_name=method_name, step=step):
            owner = getattr(module, class_name)
            setattr(owner, method_name, _skipping_first(getattr(owner, method_name), step, recorder))

        hooks[module_name] = patch_step
    if "torch.cuda" in sys.modules:  # imported before us (never in a fresh interpreter): patch in place
        hooks.pop("torch.cuda")(sys.modules["torch.cuda"])
    sys.meta_path.insert(0, _AfterImport(hooks))


_install()


def _chain_next_sitecustomize():
    """Run the sitecustomize this one shadows (the next on sys.path), as Python would have."""
    here = os.path.dirname(os.path.abspath(__spec__.origin))  # this file's folder
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        candidate = os.path.join(folder, "sitecustomize.py")
        if folder != here and os.path.isfile(candidate):
            runpy.run_path(candidate, run_name="sitecustomize_shadowed")
            return


_chain_next_sitecustomize()
