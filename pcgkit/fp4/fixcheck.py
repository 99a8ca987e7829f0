"""What a fix must show beyond tracing, shared by the fix cases: that its call path runs, right.

Every fix that traces runs through its public entry point with the caller's arguments: the argument audit and the
fake execution (pcgkit.fp4.argaudit, any machine) find an argument landing in another parameter, a TypeError, a
schema mismatch. A custom op's fake must give the real op's output shapes and dtypes (simulated: against
FlashInfer's own Python wrapper, pcgkit.fp4.fake_shapes; GPU: the real op and opcheck). Numbers are checked only
where a kernel computes something (SM100+): compiled equal to eager, both within the reference quantizer
(pcgkit.fp4.reference), and a call with a real global scale and a bool enable_pdl, so an inverted global scale
cannot pass. Elsewhere the evidence says "not run: needs SM100+" and the verdict's reason repeats it.
"""

from __future__ import annotations

from typing import Any, Callable

from pcgkit.harness.casekit import CaseContext
from pcgkit.values.runcheck import NUMBERS_NEED_SM100, RunCheck

# FlashInfer's quantize kernels (quantization.cuh) have bodies only for __CUDA_ARCH__ >= 1000:
# the official NVFP4 targets are SM100/SM103/SM110/SM120/SM121. Below that the op returns
# buffers it never wrote (measured on an H200 with 0.6.1).
KERNEL_MIN_MAJOR = 10


def check_call_path(ctx: CaseContext, entry: Any, name: str) -> tuple[str | None, str]:
    """The argument audit and the fake execution of `entry` (evidence recorded): (what failed or None, how it ran)."""
    from pcgkit.fp4.argaudit import SHORT, audit_flashinfer_entry, fake_execution
    from pcgkit.fp4.fake_shapes import flashinfer_python_fp4_quantize

    audit = audit_flashinfer_entry(entry, name)
    ctx.evidence["argument_audit"] = audit.to_dict()
    wrapper = flashinfer_python_fp4_quantize()
    fake = fake_execution(entry, name) + fake_execution(wrapper, f"FlashInfer's Python {wrapper.__module__}.fp4_quantize")
    ctx.evidence["fake_execution"] = {"entry": name, "also": "FlashInfer's Python fp4_quantize", "findings": list(fake)}
    failures = ([] if audit.passed else [audit.summary()]) + list(fake[:1])
    return ("; ".join(failures) or None), SHORT + (f"; {audit.how_called}" if audit.how_called else "")


def numbers_not_run(ctx: CaseContext, found: str) -> str:
    """Record that the numbers were not checked here, and why (the verdict's reason repeats it)."""
    ctx.evidence["numbers"] = {"checked": False, "status": "not run: needs SM100+", "found": found}
    return f"{NUMBERS_NEED_SM100}; found {found}"


def check_simulated(ctx: CaseContext, fake: Callable | None, entry: Any, name: str) -> RunCheck:
    """Simulated target: the call path through `entry` (audit + fake execution) and, for a custom op, its
    fake vs the installed wrapper's shapes. A mismatch of shapes is `drifted`; a run failure `traces-but-fails`."""
    from pcgkit.fp4.fake_shapes import check_fake_against_wrapper

    problem, note = None, ""
    if fake is not None:
        shapes = check_fake_against_wrapper(fake)
        ctx.evidence["fake_vs_wrapper_shapes"] = shapes.to_dict()
        if not shapes.kernels_called:
            problem = "the wrapper never reached a kernel call: shape check meaningless"
        elif shapes.mismatches:
            problem = f"fake disagrees with FlashInfer's wrapper on {len(shapes.mismatches)} shape(s)"
        else:
            note = f"fake matches FlashInfer's wrapper on {shapes.checked} shape/layout pairs ({shapes.label})"
    run_failure, ran = check_call_path(ctx, entry, name)
    numbers = numbers_not_run(ctx, "no GPU (simulated SM120)")
    return RunCheck(compared=False, problem=problem, note=note, run_failure=run_failure, ran=ran, numbers=numbers)


def check_on_gpu(ctx: CaseContext, original: Callable, op, fake: Callable | None, x, compiled_output,
                 entry: Any, name: str) -> RunCheck:
    """Real GPU: the call path (audit + fake execution), real op vs fake shapes and torch.library.opcheck (custom
    ops: `op` and `fake` given), and where the kernel computes something the numbers: compiled == eager, both
    within the reference, and `entry` with a real global scale and a bool enable_pdl within the reference."""
    import torch

    from pcgkit.fp4.custom_op import shape_mismatches
    from pcgkit.fp4.reference import global_scale_for, reference_problems

    problems, failures = [], []
    unit = torch.ones(1, dtype=torch.float32, device=ctx.torch_device)
    run_failure, _ = check_call_path(ctx, entry, name)
    if run_failure:
        failures.append(run_failure)
    kernel_writes = ctx.device.capability[0] >= KERNEL_MIN_MAJOR
    if op is not None and fake is not None:
        mismatches = shape_mismatches(original, fake, ctx.torch_device, "real")
        ctx.evidence["fake_vs_real_shape_mismatches"] = mismatches
        if mismatches:
            problems.append(f"fake disagrees with the real op on {len(mismatches)} shape(s)")
        checks: tuple[str, ...] = ("test_schema", "test_autograd_registration", "test_faketensor")
        if kernel_writes:  # aot_dispatch compares output values: uninitialized memory on older archs
            checks += ("test_aot_dispatch_dynamic",)
        opcheck = {k: str(v) for k, v in torch.library.opcheck(op, (x, unit), test_utils=checks).items()}
        ctx.evidence["opcheck"] = opcheck
        if any(status != "SUCCESS" for status in opcheck.values()):
            problems.append(f"opcheck: {opcheck}")
    ran = f"the real call path on {ctx.device.label}"
    if not kernel_writes:
        ctx.evidence["bit_identical"] = None
        numbers = numbers_not_run(ctx, f"{ctx.device.label}, compute capability "
                                       f"{ctx.device.capability[0]}.{ctx.device.capability[1]}")
        return RunCheck(compared=False, problem="; ".join(problems) or None, run_failure="; ".join(failures) or None,
                        ran=ran, numbers=numbers)
    x2d = x.view(-1, x.shape[-1])
    eager = original(x2d, unit)
    identical = all(torch.equal(a, b) for a, b in zip(compiled_output, eager))
    ctx.evidence["bit_identical"] = identical
    if not identical:
        failures.append("compiled output is not bit-identical to eager")
    scale = global_scale_for(x2d).to(ctx.torch_device)
    directed = entry(x2d, scale, enable_pdl=True)  # a bool enable_pdl: where it lands in the inversion slot, caught
    found = {
        "compiled (global scale 1)": reference_problems(x2d, unit, *compiled_output),
        "eager (global scale 1)": reference_problems(x2d, unit, *eager),
        f"{name} (global scale {scale.item():.4g}, enable_pdl=True)": reference_problems(x2d, scale, *directed),
    }
    ctx.evidence["numbers"] = {"checked": True, "against": "pcgkit/fp4/reference.py", "problems": found}
    failures += [f"{what}: {p[0]}" for what, p in found.items() if p]
    return RunCheck(compared=True, problem="; ".join(problems) or None, run_failure="; ".join(failures) or None,
                    ran=ran, numbers="numbers checked: compiled == eager, both and a real global scale within the reference")
