"""The device payload: the shipped wheel list as data, the trim rule, chunking, and the device-side join/install env."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from lab.e2e import devicerun, payload
from lab.e2e.payload import Trim, download_argv, is_trimmed, load_spec, split_sizes
from pcgkit.errors import EnvironmentSetupError, UsageError


def test_shipped_spec_loads_with_one_version_per_wheel_and_the_known_exclusions():
    """fixtures/e2e_payload.toml: sglang 0.5.12 pinned once, `kernels` left out, transformers/tokenizers overridden."""
    spec = load_spec()
    names = [p.split("==")[0] for p in spec.all_wheel_pins]
    assert len(names) == len(set(names))
    assert "sglang==0.5.12" in spec.wheels and spec.sglang == "0.5.12"
    assert "kernels" in spec.excluded and "kernels" not in names  # breaks transformers 5.6.0's hub_kernels
    assert {"transformers==5.6.0", "tokenizers==0.22.2"} <= set(spec.overrides)
    assert [t.pin for t in spec.trimmed] == ["sglang-kernel==0.4.2.post2"]
    assert "--enforce-piecewise-cuda-graph" not in spec.server_args  # the piecewise switch comes from sglang_facts


def test_spec_rejects_a_wheel_listed_twice(tmp_path):
    """Two versions of one wheel would stop the whole --no-deps install: the loader refuses the file."""
    text = payload.SPEC_PATH.read_text().replace('    "dill==0.4.1",', '    "dill==0.4.1",\n    "dill==0.4.0",')
    (tmp_path / "spec.toml").write_text(text)
    with pytest.raises(UsageError, match="listed twice"):
        load_spec(tmp_path / "spec.toml")


def test_download_argv_targets_the_device_interpreter_and_every_platform():
    """pip download is binary-only, no deps, for python 3.12 and each platform tag in the spec."""
    spec = load_spec()
    argv = download_argv(spec, ("sglang==0.5.12",), Path("/d"), pip=["py", "-m", "pip"])
    assert argv[:4] == ["py", "-m", "pip", "download"] and "--no-deps" in argv and "--only-binary=:all:" in argv
    assert argv[argv.index("--python-version") + 1] == "3.12"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"] == list(spec.platforms)
    assert argv[-1] == "sglang==0.5.12"


@pytest.mark.parametrize(("member", "dropped"), [
    ("sgl_kernel/flash_ops.abi3.so", True),
    ("sgl_kernel/sm100/common_ops.abi3.so", True),
    ("lib/libmscclpp_static.a", True),
    ("sgl_kernel/sm90/common_ops.abi3.so", False),
    ("sgl_kernel/flash_ops_extra.py", False),  # a prefix of a removed name is not removed
    ("sgl_kernel/__init__.py", False),
])
def test_trim_rule(member, dropped):
    """Only the named files, whole named folders and the static archives leave the trimmed sglang-kernel."""
    trim = Trim("sglang-kernel", "x", ("sgl_kernel/flash_ops.abi3.so", "sgl_kernel/sm100"), (".a",))
    assert is_trimmed(member, trim) is dropped


def test_trim_wheel_streams_kept_members_with_their_modes(tmp_path):
    """A wheel's kept members land in the tarball (executables stay executable); dropped bytes are counted."""
    import tarfile

    wheel = tmp_path / "k.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        info = zipfile.ZipInfo("sgl_kernel/common_ops.so")
        info.external_attr = 0o755 << 16
        archive.writestr(info, b"elf")
        archive.writestr("sgl_kernel/flash_ops.abi3.so", b"x" * 100)
    trim = Trim("k", "k==1", ("sgl_kernel/flash_ops.abi3.so",), ())
    record = payload._trim_wheel(wheel, trim, tmp_path / "k.tar.gz")
    assert record["dropped_bytes"] == 100 and record["kept_bytes"] == 3
    with tarfile.open(tmp_path / "k.tar.gz") as tar:
        (member,) = tar.getmembers()
        assert member.name == "sgl_kernel/common_ops.so" and member.mode == 0o755


@pytest.mark.parametrize(("total", "chunk", "sizes"), [(10, 4, [4, 4, 2]), (8, 4, [4, 4]), (3, 4, [3]), (0, 4, [0])])
def test_split_sizes(total, chunk, sizes):
    """Parts cover the file exactly, none larger than the chunk."""
    assert split_sizes(total, chunk) == sizes


def _parts(tmp_path: Path, data: bytes, chunk: int) -> Path:
    parts, offset = [], 0
    for index, size in enumerate(split_sizes(len(data), chunk)):
        name = f"{payload.PART_PREFIX}{index:02d}"
        (tmp_path / name).write_bytes(data[offset:offset + size])
        parts.append({"name": name, "bytes": size, "sha256": hashlib.sha256(data[offset:offset + size]).hexdigest()})
        offset += size
    manifest = {"parts": parts, "bundle_sha256": hashlib.sha256(data).hexdigest(), "debs": [], "releases": {}}
    (tmp_path / payload.MANIFEST).write_text(json.dumps(manifest))
    return tmp_path


def test_join_parts_restores_the_bundle_and_refuses_a_broken_part(tmp_path):
    """The parts join into the original bytes; a part changed in transit is named and refused."""
    data = bytes(range(256)) * 10
    parts = _parts(tmp_path, data, 1000)
    devicerun.join_parts(parts, tmp_path / "joined")
    assert (tmp_path / "joined").read_bytes() == data
    (parts / f"{payload.PART_PREFIX}01").write_bytes(b"\0" * 1000)
    with pytest.raises(EnvironmentSetupError, match="part01: sha256 differs"):
        devicerun.join_parts(parts, tmp_path / "joined")


def test_device_env_puts_the_payload_first_and_passes_the_launch_flags():
    """PYTHONPATH starts with the site (its transformers must shadow the image's), the deb libdir leads
    LD_LIBRARY_PATH, and the manifest's server args travel as one shell-quoted variable."""
    manifest = {"debs": [{"name": "libnuma1", "libdir": "usr/lib/x86_64-linux-gnu"}],
                "releases": {"0.5.11": {"server_args": ["--attention-backend", "triton", "--x", "a b"]}}}
    env = devicerun.device_env(Path("/tmp/site"), manifest, {"PYTHONPATH": "/old", "LD_LIBRARY_PATH": "/cuda"})
    assert env["PYTHONPATH"].split(":") == ["/tmp/site", str(devicerun.KIT_ROOT), "/old"]
    assert env["LD_LIBRARY_PATH"] == "/tmp/site/_deb/usr/lib/x86_64-linux-gnu:/cuda"
    from pcgkit.e2e.launch import server_args_from_env

    assert server_args_from_env(env) == ("--attention-backend", "triton", "--x", "a b")


def test_sglang_0511_spec_is_0512s_with_its_own_four_pins():
    """fixtures/e2e_payload_sglang-0.5.11.toml: 0.5.12's list with sglang, flashinfer-python and the trimmed
    sglang-kernel replaced by 0.5.11's own pins; everything else (overrides, exclusions, launch flags) shared."""
    base, spec = load_spec(), load_spec(payload.SPEC_PATH.parent / "e2e_payload_sglang-0.5.11.toml")
    assert spec.sglang == "0.5.11" and "sglang==0.5.11" in spec.wheels and "flashinfer-python==0.6.8.post1" in spec.wheels
    assert [t.pin for t in spec.trimmed] == ["sglang-kernel==0.4.2"] and spec.trimmed[0].remove == base.trimmed[0].remove
    changed = set(spec.wheels) ^ set(base.wheels)
    assert changed == {"sglang==0.5.11", "sglang==0.5.12", "flashinfer-python==0.6.8.post1", "flashinfer-python==0.6.11.post1"}
    assert spec.overrides == base.overrides and spec.server_args == base.server_args and spec.excluded == base.excluded


def test_merge_spec_refuses_a_replacement_the_base_does_not_list():
    """A [replace] naming a wheel the base lacks is a typo that would add nothing: refused with its name."""
    base = {"wheels": ["a==1"], "trimmed": {}}
    assert payload.merge_spec(base, {"sglang": "x", "replace": {"a": "a==2"}})["wheels"] == ["a==2"]
    with pytest.raises(UsageError, match=r"\['b'\]"):
        payload.merge_spec(base, {"sglang": "x", "replace": {"b": "b==2"}})


def test_pip_command_says_what_to_install_when_no_interpreter_has_pip(tmp_path):
    """The uv-made .venv has no pip: with no candidate that has one, a one-line error names the fix."""
    no_pip = tmp_path / "python"
    no_pip.write_text("#!/bin/sh\nexit 1\n")
    no_pip.chmod(0o755)
    with pytest.raises(EnvironmentSetupError, match="no pip found .*python3 -m ensurepip"):
        payload.pip_command((str(no_pip),))


def test_device_env_names_the_release_when_the_payload_holds_several():
    """A payload with two releases needs --release; an unknown one is named with what the payload holds."""
    manifest = {"debs": [], "releases": {"0.5.11": {"server_args": []}, "0.5.12": {"server_args": ["--y"]}}}
    with pytest.raises(EnvironmentSetupError, match="name one with --release"):
        devicerun.device_env(Path("/s"), manifest, {})
    assert devicerun.device_env(Path("/s"), manifest, {}, "0.5.12")["PCGKIT_E2E_SERVER_ARGS"] == "--y"
    with pytest.raises(EnvironmentSetupError, match="no sglang 0.5.9"):
        devicerun.release_of(manifest, "0.5.9")
