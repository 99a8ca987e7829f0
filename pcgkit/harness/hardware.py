"""Hardware detection and gating, in one place. `missing_hardware_reason` is pure, so the skip/fail wording is
tested without a GPU. Families are matched exactly (major == 12), never with >=: an SM100 part is not SM120."""

from __future__ import annotations

import dataclasses
import functools

SM120_FAMILY = 12
SIMULATED_SM120_CAPABILITY = (12, 0)


@dataclasses.dataclass(frozen=True)
class Device:
    name: str
    capability: tuple[int, int]
    simulated: bool = False
    note: str = ""  # a simulated device's own account of itself when the answers do not say it (see label)
    # The hybrid target (gpu-as-sm120, pcgkit.e2e.hybrid): a real GPU whose SGLang/FlashInfer/dynamo
    # architecture queries were answered as this capability. `capability` and `family` stay the real
    # ones, so a hybrid device never counts as SM120 hardware.
    answered_as: tuple[int, int] | None = None

    @property
    def family(self) -> int:
        return self.capability[0]

    @property
    def label(self) -> str:
        major, minor = self.capability
        if self.answered_as is not None:
            return (f"real {self.name} (CC {major}.{minor}) with SGLang/FlashInfer/dynamo architecture queries "
                    f"answered as {self.answered_as[0]}.{self.answered_as[1]}")
        if self.simulated and self.note:
            return f"{self.name} ({self.note})"
        if self.simulated:
            return f"{self.name} (no GPU; hardware queries answered as {major}.{minor})"
        return f"{self.name} (compute capability {major}.{minor})"

    def to_dict(self) -> dict:
        data = {
            "name": self.name,
            "compute_capability": f"{self.capability[0]}.{self.capability[1]}",
            "simulated": self.simulated,
            "label": self.label,
        }
        if self.answered_as is not None:
            data["answered_as"] = f"{self.answered_as[0]}.{self.answered_as[1]}"
        return data


def simulated_beside(device: Device, real: tuple[Device, ...]) -> Device:
    """A simulated device's account of itself on a machine that has real GPUs: it must name them, not say
    "no GPU" (a simulated answer on the lent H200 is still simulated, and labelled so). Pure."""
    if not device.simulated or device.note or not real:
        return device
    major, minor = device.capability
    present = ", ".join(f"{d.name} (CC {d.capability[0]}.{d.capability[1]})" for d in real)
    return dataclasses.replace(device, note=f"hardware queries answered as {major}.{minor}; this machine's real "
                               f"{present} is not the GPU answered for")


SIMULATED_SM120 = Device("simulated SM120", SIMULATED_SM120_CAPABILITY, simulated=True)
# The non-SM120 family the SGLang-level case also runs for (Hopper, like the lent H200).
SIMULATED_SM90 = Device("simulated SM90", (9, 0), simulated=True)
SIMULATED_SM100 = Device("simulated SM100", (10, 0), simulated=True)
# Arch id -> the simulated device the sweep traces for (one entry per family; exact, never >=).
SIMULATED_ARCHES: dict[str, Device] = {"sm120": SIMULATED_SM120, "sm100": SIMULATED_SM100, "sm90": SIMULATED_SM90}
# What the simulated torch.cuda.get_device_properties reports per family, read only by code that sizes grids and
# tiles: SM count and memory of a representative part (RTX PRO 6000 Blackwell, B200, H200), then the family's maximum
# shared memory per block (opt-in) and resident threads per multiprocessor (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability": 99 KB and 1536 on 12.x, 227 KB and 2048 on 9.0 and 10.0).
SIMULATED_PART_SHAPE: dict[int, tuple[int, int, int, int]] = {
    12: (188, 96 * 1024**3, 99 * 1024, 1536),
    10: (148, 180 * 1024**3, 227 * 1024, 2048),
    9: (132, 141 * 1024**3, 227 * 1024, 2048),
}


@functools.lru_cache(maxsize=1)
def detect_cuda_devices() -> tuple[Device, ...]:
    """Real CUDA devices seen by torch; empty when torch is absent or sees none."""
    try:
        import torch

        if not torch.cuda.is_available():
            return ()
        return tuple(
            Device(torch.cuda.get_device_name(i), tuple(torch.cuda.get_device_capability(i)))  # type: ignore[arg-type]  # (major, minor)
            for i in range(torch.cuda.device_count())
        )
    except Exception:  # the kit must still describe a machine whose torch is broken
        return ()


def _found(devices: tuple[Device, ...]) -> str:
    if not devices:
        return "found no CUDA device"
    return "found " + "; ".join(f"{d.name}, {d.capability[0]}.{d.capability[1]}" for d in devices)


def missing_hardware_reason(marker: str, devices: tuple[Device, ...]) -> str | None:
    """Why a test with this hardware marker cannot run on these devices; None when it can."""
    if marker == "sm120" and not any(d.family == SM120_FAMILY for d in devices):
        return f"requires SM120 (compute capability 12.x); {_found(devices)}"
    if marker == "gpu" and not devices:
        return f"requires a real CUDA GPU; {_found(devices)}"
    return None


def first_device(marker: str, devices: tuple[Device, ...]) -> Device:
    """The device a real-hardware variant runs on (the first that satisfies the marker)."""
    for device in devices:
        if marker == "gpu" or device.family == SM120_FAMILY:
            return device
    raise LookupError(missing_hardware_reason(marker, devices))
