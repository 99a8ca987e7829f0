"""`pcgkit docker lock|context|command`. lock: each base's digest from its registry into docker/pins.toml's digest
lines (an unreachable registry keeps its line and is named); context: a cell's build context and its `docker build`
line; command: the `docker run` line that reproduces a cell from its image."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from pcgkit.errors import UsageError
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.util import atomic
from pcgkit.util.argtypes import add_force


def set_digest(text: str, base: str, digest: str) -> str:
    """pins.toml with [bases.<base>]'s digest line replaced; every other line kept. Pure."""
    header = re.compile(r'^\[bases\.(?:"(?P<quoted>[^"]+)"|(?P<bare>[^\]"]+))\]\s*$')
    out, inside, done = [], False, False
    for line in text.splitlines(keepends=True):
        match = header.match(line)
        if match:
            inside = (match["quoted"] or match["bare"]) == base
        elif line.startswith("["):
            inside = False
        if inside and not done and re.match(r"^digest\s*=", line):
            line = f'digest = "{digest}"\n'
            done = True
        out.append(line)
    if not done:
        raise ValueError(f"no digest line under [bases.{base}]")
    return "".join(out)


def registry_digest(ref: str) -> str:
    """The digest the registry serves for ref, asked through the engine (needs the registry)."""
    from pcgkit.matrix.backends import docker_engine as engine

    client = engine.connect()
    try:
        return client.images.get_registry_data(ref.split("@")[0]).id
    except Exception as exc:  # noqa: BLE001 - the SDK raises several types: all say "could not read it"
        raise engine.DockerFailure(engine.classify(str(exc), engine.PULL_FAILED), engine.one_line_cut(str(exc))) from exc


def lock(path: Path, resolve: Callable[[str], str] = registry_digest) -> list[tuple[str, bool, str]]:
    """Refresh every base's digest; (name, ok, message) each. The file changes only where one was read."""
    text = path.read_text()
    pins = plan.parse_image_pins(text)
    report = []
    for name, base in pins.bases.items():
        if base.local:
            report.append((name, True, f"{base.ref}: made on this machine (docker/local-base.sh), no registry digest"))
            continue
        try:
            digest = resolve(base.ref)
        except Exception as exc:  # noqa: BLE001 - one unreachable registry must not stop the others
            reason = getattr(exc, "reason", None) or str(exc)
            report.append((name, False, f"{base.ref}: digest not refreshed ({reason}); kept {base.digest!r}"))
            continue
        text = set_digest(text, name, digest)
        report.append((name, True, f"{base.ref}: {digest}"))
    plan.parse_image_pins(text)  # never write a file the backend cannot read
    atomic.write_text(path, text)
    return report


def _cmd_lock(args) -> int:
    try:
        report = lock(Path(args.docker_pins))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{args.docker_pins}: {exc}") from exc
    for name, ok, message in report:
        print(f"  {'locked' if ok else 'FAILED'} {name}: {message}")
    failed = [name for name, ok, _ in report if not ok]
    print(f"pcgkit docker lock: {len(report) - len(failed)} of {len(report)} digests refreshed in {args.docker_pins}")
    return 1 if failed else 0


def _cell(args):
    from pcgkit.matrix.plan import planned_cells

    cells = planned_cells(args)
    match = [c for c in cells if c.id == args.cell[0]] if args.cell else []
    if not match:
        raise UsageError(f"--cell {args.cell and args.cell[0]!r}: not a cell of {args.matrix}")
    return match[0]


def build_command_line(context: Path, tag: str, args: dict[str, str]) -> str:
    """The `docker build` line for a written context. Pure."""
    parts = ["docker build", f"-t {tag}"] + [f"--build-arg {k}={shlex.quote(v)}" for k, v in args.items()]
    return " \\\n  ".join(parts + [str(context)])


def _cmd_context(args) -> int:
    from pcgkit.matrix.backends.base import StageFailed
    from pcgkit.matrix.backends.docker import base_and_cuda
    from pcgkit.matrix.deps import kit_light_dependencies

    cell = _cell(args)
    pins = plan.load_image_pins(Path(args.docker_pins))
    try:
        base, cuda_pins = base_and_cuda(cell, pins, ())
    except StageFailed as failed:
        raise UsageError(f"--cell {cell.id}: {failed.reason}") from None
    build = plan.build_args(cell, base, pins, kit_light_dependencies(cell.python))
    context = plan.write_context(Path(args.dest), force=args.force, cuda_requirements=cuda_pins)
    print(build_command_line(context, plan.image_tag(cell), build))
    return 0


def _cmd_command(args) -> int:
    print(plan.docker_run_command(plan.image_tag(_cell(args)), gpus=not args.no_gpus))
    return 0


def register(subparsers) -> None:
    from pcgkit.matrix import pins as pins_mod
    from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE

    docker = subparsers.add_parser("docker", help="image pins and commands for the container backend",
                                description="Image pins and commands for the container backend (pcgkit matrix --backend docker).",
                                epilog="example:\n  %(prog)s command --cell seed   # the docker run line for one cell")
    sub = docker.add_subparsers(dest="docker_command", required=True)

    def common(p, cell: bool) -> None:
        p.add_argument("--docker-pins", default=str(plan.DEFAULT_IMAGE_PINS), help="image pins (docker/pins.toml)")
        if cell:
            p.add_argument("--cell", action="append", required=True, help="the matrix cell id")
            p.add_argument("--matrix", default=str(DEFAULT_MATRIX_FILE))
            p.add_argument("--pins", default=str(pins_mod.DEFAULT_PINS_FILE))

    lk = sub.add_parser("lock", help="refresh the base images' digests from their registries",
                        description="Refresh the base images' digests in docker/pins.toml from their registries.",
                        epilog="example:\n  %(prog)s")
    common(lk, cell=False)
    lk.set_defaults(func=_cmd_lock)
    ctx = sub.add_parser("context", help="write a cell's build context to DEST and print the docker build line",
                         description="Write a cell's image build context to DEST and print the docker build line.",
                         epilog="example:\n  %(prog)s --cell seed /tmp/ctx-seed")
    common(ctx, cell=True)
    ctx.add_argument("dest")
    add_force(ctx)
    ctx.set_defaults(func=_cmd_context)
    cmd = sub.add_parser("command", help="print the docker run line that reproduces a cell from its image",
                         description="Print the docker run line that reproduces one cell from its image.",
                         epilog="example:\n  %(prog)s --cell seed --no-gpus")
    common(cmd, cell=True)
    cmd.add_argument("--no-gpus", action="store_true", help="leave out --gpus all")
    cmd.set_defaults(func=_cmd_command)
