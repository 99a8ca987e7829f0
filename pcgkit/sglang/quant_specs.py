"""The SGLang quantization-method spec table (pcgkit/sweep/sglang_methods.toml) as typed values. Pure."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib

SCHEMA = "pcgkit.sglang-quant-methods/1"
SPEC_FILE = "sglang_methods.toml"
DTYPES = ("bf16", "f16")


class MethodSpecError(ValueError):
    """The method table is malformed (a kit defect, reported with the method id)."""


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    id: str
    method: str  # QUANTIZATION_METHODS key; "" = unquantized (no config)
    linear_method: str  # dotted path of the LinearMethod class
    releases: str
    quant_config: tuple[tuple[str, Any], ...] = ()  # sorted items (frozen); see config_dict()
    in_features: int = 128
    out_features: int = 128
    batch: int = 4
    dtype: str = "bf16"

    def config_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.quant_config}

    def applies_to(self, sglang_version: str) -> bool:
        return Version(sglang_version) in SpecifierSet(self.releases)


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def parse_method(raw: dict[str, Any]) -> MethodSpec:
    ident = raw.get("id")
    if not isinstance(ident, str) or not ident:
        raise MethodSpecError(f"a [[method]] has no id: {raw!r}")
    unknown = set(raw) - {"id", "method", "linear_method", "releases", "quant_config", "in", "out", "batch", "dtype"}
    if unknown:
        raise MethodSpecError(f"method {ident!r}: unknown keys {sorted(unknown)}")
    for key in ("method", "linear_method", "releases"):
        if not isinstance(raw.get(key), str):
            raise MethodSpecError(f"method {ident!r}: {key!r} must be a string")
    try:
        SpecifierSet(raw["releases"])
    except InvalidSpecifier as exc:
        raise MethodSpecError(f"method {ident!r}: releases {raw['releases']!r} is not a PEP 440 specifier") from exc
    if raw.get("dtype", "bf16") not in DTYPES:
        raise MethodSpecError(f"method {ident!r}: dtype must be one of {DTYPES}")
    config = raw.get("quant_config", {})
    if not isinstance(config, dict) or (raw["method"] == "" and config):
        raise MethodSpecError(f"method {ident!r}: quant_config must be a table (and empty without a method)")
    return MethodSpec(
        id=ident, method=raw["method"], linear_method=raw["linear_method"], releases=raw["releases"],
        quant_config=tuple(sorted((k, _freeze(v)) for k, v in config.items())),
        in_features=int(raw.get("in", 128)), out_features=int(raw.get("out", 128)),
        batch=int(raw.get("batch", 4)), dtype=raw.get("dtype", "bf16"),
    )


def load_methods(path: Path | None = None) -> tuple[MethodSpec, ...]:
    """Every method spec, in table order (MethodSpecError on a malformed table)."""
    path = path or resources.sweep_data(SPEC_FILE)
    data = tomllib.loads(path.read_text())
    if data.get("schema") != SCHEMA:
        raise MethodSpecError(f"{path}: schema must be {SCHEMA!r}, got {data.get('schema')!r}")
    specs = tuple(parse_method(raw) for raw in data.get("method", []))
    ids = [s.id for s in specs]
    if dupes := sorted({i for i in ids if ids.count(i) > 1}):
        raise MethodSpecError(f"{path}: duplicate method ids {dupes}")
    return specs


SWEEP_DEPS_FILE = "sglang_sweep_deps.toml"


def sweep_import_dependencies(sglang: str, path: Path | None = None) -> list[str]:
    """import-deps of the case (fixtures/sglang_import_deps.toml) + the sweep's own extras for this sglang."""
    from pcgkit.matrix.deps import sglang_import_dependencies

    base = sglang_import_dependencies(sglang)
    extra = sglang_import_dependencies(sglang, path or resources.fixture(SWEEP_DEPS_FILE))
    return base + [p for p in extra if p not in base]
