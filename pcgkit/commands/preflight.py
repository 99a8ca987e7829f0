"""`pcgkit preflight [--python ENV] [--arch ...] [--json] -- <sglang launch arguments>`.

The probe runs inside ENV (where the server would run: its SGLang, FlashInfer and torch) as
`python -m pcgkit.preflight.probe`, through the one subprocess chokepoint; this side only reads its JSON
document and decides (pcgkit.preflight.answer, pure), with the failure modes handed down from the catalog.
Exit status: 0 ok, 10 will crash, 11 unknown (pcgkit.errors.ExitCode); 2 for a usage error, 4 when ENV
cannot run the probe at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping

from pcgkit.catalog import Family, modes_of
from pcgkit.commands import wrapped
from pcgkit.errors import ExitCode, ProbeFailedError, UsageError
from pcgkit.preflight.answer import Answer, Preflight, decide
from pcgkit.preflight.resolve import BREAKABLE

ARCHES = ("sm120", "sm100", "sm90", "auto")
PROBE_TIMEOUT_S = 900.0
ANSWER_EXIT = {Answer.OK: ExitCode.SUCCESS, Answer.WILL_CRASH: ExitCode.PREFLIGHT_WILL_CRASH,
               Answer.UNKNOWN: ExitCode.PREFLIGHT_UNKNOWN}


def run_probe(python: str, arch: str, launch: list[str], timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """The probe's document from ENV (EnvironmentSetupError when ENV cannot run it)."""
    from pcgkit.util import proc
    from pcgkit.util.foreign_env import kit_on_path

    with kit_on_path("pcgkit-preflight-") as path:
        doc_path = Path(path) / "probe.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (path, os.environ.get("PYTHONPATH"))))}
        print(f"pcgkit preflight: probing with {python} (imports its SGLang, torch and FlashInfer, then traces)",
              file=sys.stderr, flush=True)
        try:
            done = proc.run([python, "-m", "pcgkit.preflight.probe", "--arch", arch, "--json", str(doc_path), "--",
                             *launch], env=env, timeout=timeout_s, echo=False, progress="preflight: probing")
        except OSError as exc:
            raise ProbeFailedError(f"--python {python}: cannot run it ({exc.strerror or exc})") from exc
        if not doc_path.is_file():
            why = "timed out" if done.returncode is None else f"exit {done.returncode}"
            tail = done.output_tail.strip().splitlines()[-1:] or ["no output"]
            raise ProbeFailedError(f"--python {python}: the preflight probe wrote no answer ({why}): {tail[0][:300]}")
        try:
            doc = json.loads(doc_path.read_text())
        except (ValueError, RecursionError) as exc:
            raise ProbeFailedError(f"--python {python}: the preflight probe's answer is not JSON ({exc})") from None
        from pcgkit.preflight.probe import answer_problem

        if (problem := answer_problem(doc)) is not None:  # another kit's probe, a damaged file: never a traceback
            raise ProbeFailedError(f"--python {python}: the preflight probe's answer is not what this kit reads "
                                   f"({problem}); is that environment's pcgkit another version?")
        return doc


def failure_modes() -> Mapping[str, Any]:
    """The failure modes as the catalog declares them, in its order (the same rules triage applies)."""
    return modes_of(Family.FAILURE)


def switch_line(probe: Mapping[str, Any]) -> str | None:
    """How to run this release without piecewise graphs, read from its own parser during this preflight."""
    from pcgkit.sglang.facts import PiecewiseFlags, switch_wording

    flags = probe.get("piecewise_flags")
    if not flags:
        return None
    _default, off = switch_wording(PiecewiseFlags.from_dict(flags))
    return f"{off} (sglang {flags.get('sglang')}'s own parser, read by this preflight)"


def render(p: Preflight) -> str:
    probe = p.probe
    versions = probe.get("versions") or {}
    device = (probe.get("device") or {}).get("label", "?")
    lines = [f"preflight: {p.answer.value.upper()}" + (f" ({p.mode})" if p.mode else ""), f"  {p.reason}",
             f"  on: sglang {versions.get('sglang')}, flashinfer-python {versions.get('flashinfer-python')}, "
             f"torch {versions.get('torch')}", f"  device: {device}"]
    piecewise = probe.get("piecewise") or {}
    if piecewise and piecewise.get("runner") != BREAKABLE:  # the breakable runner's why is the reason already
        lines.append(f"  piecewise capture: {'on' if piecewise.get('on') else 'off' if piecewise.get('on') is False else '?'}"
                     f" ({piecewise.get('why')})")
    if probe.get("quantization") is not None or probe.get("model"):
        dense = probe.get("dense") or {}
        lines.append(f"  quantization: {probe.get('quantization') or 'none'}; linear method: "
                     f"{dense.get('linear_method', 'not resolved')}")
    if p.signature is not None:
        lines.append(f"  signature: {p.signature.short()}")
        lines += [f"    {frame}" for frame in p.signature.frame_chain[-3:]]
    if p.advice:  # the kit's one answer (its `turn off:` line is the release's own switch)
        lines.append("  the kit's answer for this release and launch:")
        lines += [f"    {line}" for line in p.advice.get("lines", ())]
    elif p.answer is Answer.WILL_CRASH and (switch := switch_line(probe)):
        lines.append(f"  to launch without piecewise capture: {switch}")
    return "\n".join(row for line in lines for row in wrapped(line.strip(), line[: len(line) - len(line.lstrip())]))


def _launch_arguments(args: argparse.Namespace) -> list[str]:
    launch = list(args.launch)
    if launch and launch[0] == "--":
        launch = launch[1:]
    if not launch:
        raise UsageError("no launch arguments: pass them after `--`, e.g. `pcgkit preflight -- --model-path DIR`")
    return launch


def interpreter(args: argparse.Namespace) -> str:
    """The python that would serve: --python, or the environment built for --sglang VERSION, or this one."""
    if args.python and args.sglang:
        raise UsageError("--python and --sglang name two environments: pass one")
    if args.sglang:
        from pcgkit.preflight.envs import release_env

        return str(release_env(args.sglang).python)
    if args.python:
        return args.python
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        raise UsageError(f"this interpreter ({sys.executable}) has no SGLang: pass --python ENV (the python that "
                         "would serve) or --sglang VERSION (the kit builds that release's environment once)")
    return sys.executable


def advice_for(result: Preflight) -> dict[str, Any] | None:
    """The kit's one answer for the probed versions and this launch's flags (pcgkit.advice: affected, what to pass,
    the cost, where it is fixed, the safe call), one line per question with its dated sources (pcgkit.advice.render);
    not where the release refuses the launch at model load (no switch or upgrade changes that GPU's answer)."""
    if (result.probe.get("load_check") or {}).get("refusal"):
        return None
    from pcgkit.advice import Versions, advise, load_evidence
    from pcgkit.advice.render import answer_lines

    versions = result.probe.get("versions") or {}
    if not versions.get("sglang"):
        return None
    answer = advise(Versions(sglang=versions.get("sglang"), flashinfer=versions.get("flashinfer-python"),
                             torch=versions.get("torch")), probe_arch(result), load_evidence(),
                    tuple(result.probe.get("launch") or ()))
    asked = (PREFLIGHT_QUESTIONS[1:] if answer.launch_state == answer.state else PREFLIGHT_QUESTIONS
             if answer.launch_state != "not affected" else ("first try ran", "first try's cost", "fixed in"))
    return {**answer.to_dict(), "lines": answer_lines(answer, asked)}


# preflight's own verdict says whether this launch crashes: the answer adds what to pass, the cost and the fix (and
# what the launch's flags change, where they change the release's answer; a launch its flags keep clear of the bug,
# which preflight's own verdict says, gets what the first try did when the kit launched it, its cost and the fix only)
PREFLIGHT_QUESTIONS = ("this launch", "pass first", "turn off", "cost", "first try's cost", "fixed in")
NVFP4_METHOD = "ModelOptFp4LinearMethod"  # what the SGLang-level case (sglang-compile-sm120) measures


def probe_arch(result: Preflight) -> str | None:
    """The architecture the probe answered for: the device's compute capability, else the --arch it was given."""
    device = result.probe.get("device") or {}
    return f"sm{str(device.get('compute_capability', '')).replace('.', '')}" if device else result.probe.get("arch")


def with_measured_call_path(result: Preflight) -> Preflight:
    """A traced `ok` with what the kit's matrix measured of this release's call path (pcgkit.advice.call_path_state)."""
    from pcgkit.advice import load_evidence
    from pcgkit.advice.model import call_path_state
    from pcgkit.preflight.answer import with_call_path

    method = str((result.probe.get("dense") or {}).get("linear_method") or "")
    if not method.endswith(NVFP4_METHOD):  # the SGLang-level case measures the NVFP4 activation quantize only
        return with_call_path(result, None, f"the kit runs the NVFP4 linear method's call path only; this launch's "
                                            f"is {method.rsplit('.', 1)[-1] or 'not resolved'}")
    versions = result.probe.get("versions") or {}
    ran, measured = call_path_state(load_evidence(), versions.get("sglang"), probe_arch(result))
    return with_call_path(result, ran, measured)


def run(args: argparse.Namespace) -> int:
    launch = _launch_arguments(args)
    probe = run_probe(interpreter(args), args.arch, launch)
    result = with_measured_call_path(decide(probe, failure_modes()))
    result = dataclasses.replace(result, advice=advice_for(result))
    print(json.dumps(result.to_dict(), indent=1, default=str) if args.json else render(result))
    return int(ANSWER_EXIT[result.answer])


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "preflight", help="will this SGLang launch crash in piecewise capture? answered before any weight loads",
        description="Resolve an SGLang launch with the installed release's own parser and quantization code (the "
                    "checkpoint's config files only, never its weights) and trace what piecewise capture would "
                    "compile, on a real or simulated architecture. Answers ok / will crash / unknown.",
        epilog="examples:\n  %(prog)s --python ~/sglang-env/bin/python --arch sm120 -- --model-path ./Llama-NVFP4 "
               "--quantization modelopt_fp4\n  %(prog)s --sglang 0.5.12 -- --model-path ./Llama-NVFP4\n"
               "  %(prog)s --json -- --model-path ./ckpt\n"
               "exit status: 0 ok, 10 will crash, 11 unknown, 2 usage, 4 environment")
    parser.add_argument("--python", metavar="ENV", help="the interpreter that would serve (default: this one)")
    parser.add_argument("--sglang", metavar="VERSION",
                        help="instead of --python: a cached environment with this SGLang release and the pins it "
                             "declares (built with uv on first use), to ask before upgrading")
    parser.add_argument("--arch", choices=ARCHES, default="sm120",
                        help="the GPU family to answer for; sm120/sm100/sm90 are simulated (labelled), auto = this "
                             "machine's real GPU (default: sm120)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (pcgkit.preflight/1)")
    parser.add_argument("launch", nargs=argparse.REMAINDER, help="the sglang launch arguments, after --")
    parser.set_defaults(func=run)
