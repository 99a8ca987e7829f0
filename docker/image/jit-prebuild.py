"""Compile FlashInfer JIT modules at image build time (docker/Dockerfile; no GPU needed).

    jit-prebuild.py WORKSPACE RECORD GENERATOR...

Each GENERATOR is a function of flashinfer.jit or of one of its modules (e.g.
gen_fp4_quantization_sm120_module, in flashinfer/jit/fp4_quantization.py); one this FlashInfer lacks
is recorded as absent, one that fails to build fails the image. RECORD gets, per
module, the built library, its build time and `cuobjdump --list-elf` of it, so the image says what
machine code it carries. FLASHINFER_WORKSPACE_BASE and FLASHINFER_CUDA_ARCH_LIST come from the caller.
"""

import importlib
import pkgutil
import subprocess
import sys
import time
from pathlib import Path


def find_generator(name: str):
    """flashinfer.jit.<name>, else <name> in the first of flashinfer.jit's modules that has it."""
    import flashinfer.jit as jit

    if hasattr(jit, name):
        return getattr(jit, name)
    for info in pkgutil.iter_modules(jit.__path__):
        module = importlib.import_module(f"flashinfer.jit.{info.name}")
        if hasattr(module, name):
            return getattr(module, name)
    return None


def main(workspace: str, record: str, *generators: str) -> int:
    import flashinfer

    lines = [f"flashinfer {flashinfer.__version__}; workspace {workspace}"]
    for name in generators:
        make = find_generator(name)
        if make is None:
            lines.append(f"{name}: absent in flashinfer {flashinfer.__version__}")
            continue
        start = time.monotonic()
        spec = make()
        spec.build(verbose=False)
        library = Path(spec.get_library_path())
        took = time.monotonic() - start
        elf = subprocess.run(["cuobjdump", "--list-elf", str(library)], capture_output=True, text=True, check=True)
        lines.append(f"{name}: {library.name} {library.stat().st_size} bytes, built in {took:.0f} s")
        lines += [f"  {line}" for line in elf.stdout.splitlines()]
    Path(record).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
