"""`bin/pcgkit lab payload build`: the SGLang payload (trimmed wheels in chunks, MANIFEST.json) for a lent GPU
machine without network (lab.e2e.payload builds it; lab.e2e.devicerun installs and runs it there)."""

from __future__ import annotations

from pathlib import Path

from lab.e2e.payload import SPEC_PATH, build, load_spec


def _cmd_build(args) -> int:
    import tempfile

    specs = [load_spec(Path(path)) for path in (args.spec or [str(SPEC_PATH)])]
    with tempfile.TemporaryDirectory(prefix="pcgkit-payload-", dir=args.work) as work:
        manifest = build(specs, Path(args.out), Path(work))
    total = sum(p["bytes"] for p in manifest["parts"])
    print(f"bin/pcgkit lab payload: payload for sglang {', '.join(s.sglang for s in specs)}: {len(manifest['files'])} files, "
          f"{len(manifest['parts'])} parts, {total / 2**20:.1f} MiB in {args.out}")
    return 0


def register(subparsers) -> None:
    cmd = subparsers.add_parser("payload", help="the SGLang payload for a GPU machine without network",
                                    description="Build the SGLang payload (trimmed wheels in chunks) for a GPU machine without network.",
                                    epilog="example:\n  %(prog)s build --out /tmp/payload")
    sub = cmd.add_subparsers(dest="payload_command", required=True)
    build_cmd = sub.add_parser("build", help="download, trim and chunk the payload (fixtures/e2e_payload.toml)",
                               description="Download, trim and chunk the payload that fixtures/e2e_payload.toml describes, with a MANIFEST.json.",
                               epilog="example:\n  %(prog)s --out /tmp/payload")
    build_cmd.add_argument("--out", required=True, help="directory for the parts and MANIFEST.json")
    build_cmd.add_argument("--spec", action="append", default=None,
                           help="a release's payload spec; repeat for several releases in one payload "
                                "(default: fixtures/e2e_payload.toml, SGLang 0.5.12; 0.5.11's: fixtures/e2e_payload_sglang-0.5.11.toml)")
    build_cmd.add_argument("--work", default=None, help="where the temporary staging folder goes (default: TMPDIR)")
    build_cmd.set_defaults(func=_cmd_build)
