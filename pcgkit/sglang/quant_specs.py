"""What the SGLang side of the sweep needs installed beside a release's own dependencies, to import on a machine without
a GPU (fixtures/sglang_sweep_deps.toml): read by preflight's release environments. Pure."""

from __future__ import annotations

from pathlib import Path

from pcgkit import resources

SWEEP_DEPS_FILE = "sglang_sweep_deps.toml"


def sweep_import_dependencies(sglang: str, path: Path | None = None) -> list[str]:
    """import-deps of the case (fixtures/sglang_import_deps.toml) + the sweep's own extras for this sglang."""
    from pcgkit.matrix.deps import sglang_import_dependencies

    base = sglang_import_dependencies(sglang)
    extra = sglang_import_dependencies(sglang, path or resources.fixture(SWEEP_DEPS_FILE))
    return base + [p for p in extra if p not in base]
