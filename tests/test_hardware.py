"""Hardware gating: exact SM120 family, and skip reasons that say what was found."""

from __future__ import annotations

import dataclasses

import pytest

from pcgkit.harness.hardware import SIMULATED_SM120, Device, first_device, missing_hardware_reason, simulated_beside

H200 = Device("NVIDIA H200", (9, 0))
B200 = Device("NVIDIA B200", (10, 0))
RTX_PRO_6000 = Device("NVIDIA RTX PRO 6000 Blackwell", (12, 0))
DGX_SPARK = Device("NVIDIA GB10", (12, 1))


def test_sm120_reason_names_the_device_found():
    """On an H200 the sm120 skip says what is required and what was found."""
    reason = missing_hardware_reason("sm120", (H200,))
    assert reason == "requires SM120 (compute capability 12.x); found NVIDIA H200, 9.0"


@pytest.mark.parametrize(
    ("device", "satisfies"),
    [(H200, False), (B200, False), (Device("future", (13, 0)), False), (RTX_PRO_6000, True), (DGX_SPARK, True)],
    ids=["sm90", "sm100", "sm130", "sm120", "sm121"],
)
def test_sm120_is_an_exact_family(device, satisfies):
    """sm120 means major == 12: SM100 and newer families do not count, 12.1 does."""
    assert (missing_hardware_reason("sm120", (device,)) is None) is satisfies


def test_no_device_reason():
    """With no CUDA device both markers say 'found no CUDA device'."""
    assert missing_hardware_reason("sm120", ()) == "requires SM120 (compute capability 12.x); found no CUDA device"
    assert missing_hardware_reason("gpu", ()) == "requires a real CUDA GPU; found no CUDA device"


def test_gpu_marker_accepts_any_family():
    """The gpu marker is satisfied by any real device."""
    assert missing_hardware_reason("gpu", (H200,)) is None


def test_several_devices_are_all_listed():
    """A multi-GPU machine without SM120 lists every device in the reason."""
    reason = missing_hardware_reason("sm120", (H200, B200))
    assert reason.endswith("found NVIDIA H200, 9.0; NVIDIA B200, 10.0")


def test_first_device_picks_the_sm120_part():
    """On a mixed machine the sm120 variant runs on the SM120 device, not device 0."""
    assert first_device("sm120", (H200, DGX_SPARK)) is DGX_SPARK
    assert first_device("gpu", (H200, DGX_SPARK)) is H200
    with pytest.raises(LookupError, match="found NVIDIA H200"):
        first_device("sm120", (H200,))


def test_simulated_label_says_simulated():
    """The simulated device can never be mistaken for a real one: its label says 'simulated'."""
    assert "simulated" in SIMULATED_SM120.label
    assert SIMULATED_SM120.to_dict()["simulated"] is True
    assert "simulated" not in RTX_PRO_6000.label
    assert RTX_PRO_6000.to_dict() == {
        "name": "NVIDIA RTX PRO 6000 Blackwell",
        "compute_capability": "12.0",
        "simulated": False,
        "label": "NVIDIA RTX PRO 6000 Blackwell (compute capability 12.0)",
    }


def test_simulated_arches_are_simulated_and_named_by_their_capability():
    """Every simulated device is flagged simulated and its capability is the one its arch id names."""
    from pcgkit.harness.archpaths import capability_of
    from pcgkit.harness.hardware import SIMULATED_ARCHES, SIMULATED_SM120_CAPABILITY

    assert SIMULATED_SM120_CAPABILITY == (12, 0)
    for arch, device in SIMULATED_ARCHES.items():
        assert device.simulated and device.capability == capability_of(arch), arch
        assert device.name == f"simulated {arch.upper()}"


def test_a_simulated_device_note_replaces_the_answer_claim():
    """A note (no query reached / did not take) is the label's account, not "answered as 12.0"."""
    from pcgkit.harness.hardware import SIMULATED_SM120

    noted = dataclasses.replace(SIMULATED_SM120, note="no GPU; no hardware query was reached on the traced path")
    assert noted.label == "simulated SM120 (no GPU; no hardware query was reached on the traced path)"
    assert noted.to_dict()["label"] == noted.label and noted.to_dict()["compute_capability"] == "12.0"


@pytest.mark.parametrize(("available", "expected"), [(False, ()), (True, (Device("NVIDIA RTX PRO 6000", (12, 0)),))])
def test_detect_cuda_devices_asks_is_available_first(monkeypatch, available, expected):
    """With torch.cuda.is_available() False no device is listed, even where device_count() says otherwise."""
    import torch

    from pcgkit.harness import hardware

    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA RTX PRO 6000")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (12, 0))
    hardware.detect_cuda_devices.cache_clear()
    try:
        assert hardware.detect_cuda_devices() == expected
    finally:
        hardware.detect_cuda_devices.cache_clear()


@pytest.mark.parametrize("marker", ["cpu_sim", "e2e", "docker"])
def test_non_hardware_markers_need_no_gpu(marker):
    """cpu_sim, e2e and docker are not hardware requirements: no CUDA device is no reason to skip."""
    assert missing_hardware_reason(marker, ()) is None


def test_device_is_frozen():
    """A Device is what the run claims to have run on: it cannot be edited afterwards."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        SIMULATED_SM120.capability = (9, 0)  # type: ignore[misc]


def test_first_device_skips_a_newer_family_for_sm120():
    """sm120 is an exact family: a 13.x part listed first is passed over for the 12.x one."""
    newer = Device("future SM130 part", (13, 0))
    assert first_device("sm120", (newer, DGX_SPARK)) is DGX_SPARK


def test_a_real_device_label_ignores_a_note():
    """A real device's label always states its compute capability; a note only speaks for simulated ones."""
    noted = dataclasses.replace(RTX_PRO_6000, note="should not show")
    assert noted.label == "NVIDIA RTX PRO 6000 Blackwell (compute capability 12.0)"


def test_a_simulation_beside_a_real_gpu_names_it_and_stays_simulated():
    """Simulated SM120 on the H200: the label names the real GPU instead of "no GPU"; capability and flag unchanged."""
    beside = simulated_beside(SIMULATED_SM120, (H200,))
    assert beside.simulated and beside.capability == (12, 0) and beside.family == 12
    assert beside.label == ("simulated SM120 (hardware queries answered as 12.0; this machine's real NVIDIA H200 "
                            "(CC 9.0) is not the GPU answered for)")
    assert simulated_beside(SIMULATED_SM120, ()) == SIMULATED_SM120  # a CPU machine: "no GPU" is the truth
    assert simulated_beside(H200, (H200,)) == H200  # a real device is never relabelled
