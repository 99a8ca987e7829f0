"""A matrix cell: one environment's pins, its identity (id + definition hash) and its pin label."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from pcgkit.matrix.deps import sglang_import_dependencies
from pcgkit.util import untrusted
from pcgkit.util.untrusted import UntrustedValueError
from pcgkit.values.axes import AXIS_IDS

# Which cases a cell runs, re-exported for the planner's readers (declared in pcgkit.values.scopes).
from pcgkit.values.scopes import SCOPE_ALL, SCOPE_SGLANG_LEVEL, SCOPES  # noqa: F401

VENV = "venv"  # a fresh uv environment installed from PyPI with exact pins
EXISTING = "existing"  # an interpreter used as it is (the reference .venv, or a test's fake one)
KINDS = (VENV, EXISTING)

ON_PIN = "on-pin"  # exactly the flashinfer-python and torch that the cell's SGLang release declares
OFF_PIN = "off-pin"
UNPINNED = "unpinned"  # an existing interpreter: the matrix declares no pins for it

# Which build of the locked torch a venv cell installs (`--torch-build`): cuda, the committed lock as it is;
# cpu, PyTorch's CPU-only build of the same version, every other pin as locked (pcgkit.matrix.torchbuild).
TORCH_BUILD_CUDA = "cuda"
TORCH_BUILD_CPU = "cpu"
TORCH_BUILDS = (TORCH_BUILD_CUDA, TORCH_BUILD_CPU)


@dataclasses.dataclass(frozen=True)
class Cell:
    id: str
    python: str = "3.12"
    sglang: str | None = None
    flashinfer: str | None = None  # flashinfer-python version
    torch: str | None = None
    # Further exact pins the cell installs, e.g. the flashinfer-cubin its SGLang release declares.
    companions: tuple[str, ...] = ()
    flashinfer_extras: tuple[str, ...] = ()
    # Constraints for the resolver (uv --constraint): they bound what gets picked, install nothing.
    constraints: tuple[str, ...] = ()
    kind: str = VENV
    interpreter: str | None = None  # kind "existing": the python to run
    base_image: str | None = None  # for a container backend; unused by the venv backend
    timeout_s: float | None = None  # overrides the run's --timeout for this cell
    origin: str = "explicit"  # "explicit" | "sglang-release"
    scope: str = SCOPE_ALL  # SCOPES: which cases run in it
    # sha256 of the committed lock, "" when none: refreshing a lock reruns the cell.
    lock_digest: str = ""
    torch_build: str = TORCH_BUILD_CUDA  # TORCH_BUILDS: a cpu cell is another environment and another result
    # Labels the planner derives; not part of the definition.
    pin_status: str = OFF_PIN
    pin_note: str = ""
    covers_sglang: tuple[str, ...] = ()  # SGLang releases whose declared pins this cell installs

    def definition(self) -> dict:
        """What decides the cell's result: changing any of these reruns it."""
        definition = {
            "kind": self.kind,
            "python": self.python,
            "interpreter": self.interpreter,
            "base_image": self.base_image,
            "requirements": list(self.requirements()),
            "sglang": self.sglang,
            # the light packages installed beside sglang (fixtures/sglang_import_deps.toml): editing
            # that list reruns the sglang cells
            **({"sglang_import_deps": sglang_import_dependencies(self.sglang)} if self.sglang else {}),
        }
        # Each only when set (narrowed, the CPU build), so every cell without it keeps its hash.
        optional = {"constraints": list(self.constraints), "lock": self.lock_digest,
                    "scope": self.scope if self.scope != SCOPE_ALL else "",
                    "torch_build": self.torch_build if self.torch_build != TORCH_BUILD_CUDA else ""}
        return {**definition, **{key: value for key, value in optional.items() if value}}

    @property
    def definition_hash(self) -> str:
        blob = json.dumps(self.definition(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def requirements(self) -> tuple[str, ...]:
        """Exact pins installed with their dependencies (sglang goes in separately, without them)."""
        reqs = []
        if self.torch:
            reqs.append(f"torch=={self.torch}")
        if self.flashinfer:
            extras = f"[{','.join(self.flashinfer_extras)}]" if self.flashinfer_extras else ""
            reqs.append(f"flashinfer-python{extras}=={self.flashinfer}")
        return tuple(reqs) + tuple(self.companions)

    def axes(self) -> dict[str, str | None]:
        """The cell's version on each axis of pcgkit.values.axes, by axis id (None where it installs none)."""
        values = {"sglang": self.sglang, "flashinfer-python": self.flashinfer, "torch": self.torch, "python": self.python}
        return {axis: values[axis] for axis in AXIS_IDS}

    def label(self) -> str:
        """'sglang 0.5.8 / flashinfer 0.6.1 / torch 2.9.1 / py3.12' (what tables show)."""
        sglang = [f"sglang {self.sglang}"] if self.sglang else []
        torch = f"torch {self.torch or '?'}" + ("" if self.torch_build == TORCH_BUILD_CUDA else f"+{self.torch_build}")
        return " / ".join([*sglang, f"flashinfer {self.flashinfer or '?'}", torch, f"py{self.python}"])

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "definition_hash": self.definition_hash}

    @classmethod
    def from_dict(cls, data: dict) -> Cell:
        """A cell as a cell.json holds it; ValueError naming the field for an unsafe id or a wrong type
        (a cell.json may come from any CI job's artifact: its id becomes a folder name)."""
        if not isinstance(data, dict):
            raise UntrustedValueError(f"cell: expected an object, got {type(data).__name__}")
        kwargs = untrusted.typed_fields(cls, data, [f.name for f in dataclasses.fields(cls)], "cell")
        kwargs["id"] = untrusted.safe_id(data.get("id"), "cell id")
        for name in ("companions", "flashinfer_extras", "covers_sglang", "constraints"):
            kwargs[name] = untrusted.str_list(data, name, "cell")
        if kwargs.get("torch_build", TORCH_BUILD_CUDA) not in TORCH_BUILDS:
            raise UntrustedValueError(f"cell: torch_build must be one of {', '.join(TORCH_BUILDS)}")
        return cls(**kwargs)
