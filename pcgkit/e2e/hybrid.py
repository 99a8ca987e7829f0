"""The hybrid target `gpu-as-sm120`: a real GPU and a real SGLang server, with only the architecture
queries of SGLang, FlashInfer and dynamo answered as SM120 in every server process.

Why this shape (measured on the lent H200, 2026-12-01, FACTS.md "Mode 5 reproduced"): a blanket answer
makes Triton build kernels for sm_120 that the real GPU cannot load, so Triton, Inductor and torch get
the real capability; dynamo must get the answer (it runs the query at trace time, and without it the
trace silently takes the real GPU's path); SGLang's eager warm-up forward must be skipped (it runs
FlashInfer kernels built for sm_120f). Everything else is real: the driver, the kernels, the compiler.

The shim itself is pcgkit/e2e/hybrid_shim/sitecustomize.py; this module plans it (pure), copies it beside
the server's log and reads what it recorded.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Mapping

from pcgkit import resources
from pcgkit.e2e.logclass import Classification
from pcgkit.harness.hardware import Device
from pcgkit.values.logread import CaptureEvent, read_log
from pcgkit.values.verdict import Verdict

FX_GENERATED = "<fx-generated>"  # the shim's caller name for graphs dynamo generated (see the shim)


@dataclasses.dataclass(frozen=True)
class SkippedStep:
    target: str  # "module:Class.method:first", the shim's form
    why: str


@dataclasses.dataclass(frozen=True)
class HybridPlan:
    """What one hybrid server is told: the answer, to whom, and which of its steps are skipped."""

    answer: tuple[int, int]
    callers: tuple[str, ...]  # module-name prefixes of the callers that get `answer`
    skipped: tuple[SkippedStep, ...]
    server_args: tuple[str, ...]  # flags the hybrid launch adds, each for the reason in server_args_why
    server_args_why: str

    @property
    def answer_text(self) -> str:
        return f"{self.answer[0]}.{self.answer[1]}"


HYBRID_SM120 = HybridPlan(
    answer=(12, 0),
    callers=("sglang.srt.", "flashinfer.", "torch._dynamo.", FX_GENERATED),
    skipped=(
        SkippedStep(
            "sglang.srt.model_executor.piecewise_cuda_graph_runner:PiecewiseCudaGraphRunner.warmup_compile:first",
            "SGLang's eager warm-up forward before install_torch_compiled ('Dummy warmup for jit kernel', "
            "0.5.11/0.5.12 piecewise_cuda_graph_runner.py) runs FlashInfer kernels built for sm_120f, which an "
            "SM90 GPU cannot launch; skipped, the first model forward is then the piecewise dynamo trace",
        ),
    ),
    server_args=("--disable-cuda-graph",),
    server_args_why="decode CUDA graph capture runs the model eagerly before piecewise capture, with FlashInfer "
    "kernels built for sm_120f that an SM90 GPU cannot launch; the case is about piecewise capture",
)

ENV_ANSWER = "PCGKIT_HYBRID_ANSWER"
ENV_CALLERS = "PCGKIT_HYBRID_CALLERS"
ENV_SKIP = "PCGKIT_HYBRID_SKIP"
ENV_EVIDENCE = "PCGKIT_HYBRID_EVIDENCE"


def server_env(plan: HybridPlan, base: Mapping[str, str], shim_dir: Path, evidence_dir: Path) -> dict[str, str]:
    """The server's environment: the shim's folder first on PYTHONPATH, the plan in its variables. Pure."""
    path = [str(shim_dir), *filter(None, [base.get("PYTHONPATH")])]
    return {
        **base,
        "PYTHONPATH": ":".join(path),
        ENV_ANSWER: plan.answer_text,
        ENV_CALLERS: ",".join(plan.callers),
        ENV_SKIP: ",".join(step.target for step in plan.skipped),
        ENV_EVIDENCE: str(evidence_dir),
    }


def write_shim(folder: Path) -> Path:
    """Copy the shim into `folder` as sitecustomize.py (kept with the run's artifacts); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(resources.hybrid_shim(), folder / "sitecustomize.py")
    return folder


@dataclasses.dataclass(frozen=True)
class HybridEvidence:
    processes: int  # server processes the shim loaded in
    queries: tuple[dict, ...]  # {"caller", "answered", "answer"}, one per distinct caller and answer
    skipped: tuple[dict, ...]  # {"step", "pid"}, one per skipped call

    def to_dict(self) -> dict:
        return {"processes": self.processes, "queries": list(self.queries), "skipped": list(self.skipped)}


def plan_evidence(plan: HybridPlan) -> dict:
    """What the hybrid told the server, for the result's evidence."""
    return {
        "answer": plan.answer_text,
        "answered_callers": list(plan.callers),
        "everyone_else": "the real capability (Triton, Inductor, torch, the driver)",
        "skipped_steps": [dataclasses.asdict(s) for s in plan.skipped],
        "server_args": list(plan.server_args),
        "server_args_why": plan.server_args_why,
    }


def parse_evidence(lines: list[str]) -> HybridEvidence:
    """The shim's JSON lines (all processes) as one record. Pure; a torn last line is ignored."""
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    queries: dict[tuple[str, str], dict] = {}
    for r in records:
        if r.get("event") == "query":
            got = ".".join(map(str, r["answer"])) if "answer" in r else f"raised {r.get('raised')}"
            queries.setdefault((r["caller"], got), {"caller": r["caller"], "answered": r["answered"], "answer": got})
    return HybridEvidence(
        processes=len({r.get("pid") for r in records if r.get("event") == "loaded"}),
        queries=tuple(sorted(queries.values(), key=lambda q: (not q["answered"], q["caller"]))),
        skipped=tuple({"step": r["step"], "pid": r.get("pid")} for r in records if r.get("event") == "skipped"),
    )


def read_evidence(folder: Path) -> HybridEvidence:
    lines: list[str] = []
    for path in sorted(folder.glob("hybrid-*.jsonl")):
        lines += path.read_text(errors="replace").splitlines()
    return parse_evidence(lines)


def hybrid_device(real: Device, plan: HybridPlan = HYBRID_SM120) -> Device:
    """The device a hybrid result records: the real GPU, with what its queries were answered as."""
    return dataclasses.replace(real, answered_as=plan.answer)


_COMPILED_RE = re.compile(r"Compiling a graph for .*? takes [0-9.]+ s")
# A kernel the server built for the answered arch, launched on the real GPU: CUDA's and Triton's wordings.
_WRONG_ARCH_KERNEL_RE = re.compile(
    r"no kernel image is available|invalid device function|cudaErrorNoKernelImageForDevice|"
    r"CUDA_ERROR_NO_BINARY_FOR_GPU|the provided PTX was compiled with an unsupported toolchain"
)


def wrong_arch_kernel(log: str) -> str | None:
    """The log's words for a kernel built for the answered arch that the real GPU could not run, or None. Pure."""
    found = _WRONG_ARCH_KERNEL_RE.search(log)
    return found.group(0) if found else None


def took(plan: HybridPlan, evidence: HybridEvidence) -> str | None:
    """None when the hybrid took in the server (the shim loaded and SGLang or FlashInfer got the answer);
    else why not, which makes the run an `error`: nothing about the bug was tested on the hybrid. Pure."""
    if evidence.processes == 0:
        return "the hybrid shim loaded in no server process (sitecustomize not on the server's path?)"
    answered = [q for q in evidence.queries if q["answered"] and q["answer"] == plan.answer_text]
    if not any(q["caller"].startswith(("sglang.srt.", "flashinfer.")) for q in answered):
        return f"no SGLang or FlashInfer architecture query was answered as {plan.answer_text}"
    return None


def judge_hybrid(c: Classification, log: str, plan: HybridPlan, evidence: HybridEvidence) -> Classification:
    """The verdict of a run on the hybrid target, from the run's own classification. Pure.

    - the hybrid did not take -> error, whatever the log says;
    - the known dynamo failure in capture -> unchanged (`reproduced`): the trace ran the real SGLang,
      FlashInfer and dynamo on the SM120 path, which is what the hybrid answers;
    - dynamo finished the piecewise compile (SGLang logged "Compiling a graph ... takes") and the server
      then died running a kernel built for the answered arch -> `skipped`: the trace was clean, and
      running what it built needs a real SM120 GPU, which this is not;
    - anything else -> unchanged, with the hybrid named in the reason."""
    problem = took(plan, evidence)
    if problem:
        return dataclasses.replace(c, verdict=Verdict.ERROR, reason=f"hybrid target did not take: {problem}; run: {c.verdict}: {c.reason}")
    if c.verdict is Verdict.ERROR and c.capture_began:
        compiled = read_log(log).events(CaptureEvent.COMPILED)
        wrong_arch = wrong_arch_kernel(log)
        if compiled and wrong_arch:
            said = _COMPILED_RE.search(compiled[0].text)
            return dataclasses.replace(
                c,
                verdict=Verdict.SKIPPED,
                reason=f"hybrid limit: the piecewise trace ran without a dynamo failure (SGLang: "
                f"{said.group(0) if said else compiled[0].text.strip()[-100:]!r}), then a kernel built for sm_{plan.answer[0]}{plan.answer[1]} could "
                f"not run on this GPU ({wrong_arch}): serving needs a real SM120 GPU; {c.reason}",
            )
    return dataclasses.replace(c, reason=f"on the hybrid target: {c.reason}")
