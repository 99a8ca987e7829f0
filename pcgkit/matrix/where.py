"""Where a matrix cell ran: host, CI runner, device and driver, backend, image.

A cell result from another machine is only evidence if it says which machine: two hosts may
disagree, and a real SM120 result must sit beside the simulated one, not replace it.
`where_from` is pure (environment, host facts and the backend's provenance passed in);
`capture` is the edge (platform, nvidia-smi through pcgkit.util.proc). Every captured string is
redacted with pcgkit.util.redact: a runner name or URL never carries a token into a report.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import re
import shutil
from collections.abc import Mapping
from typing import Any

from pcgkit.util import untrusted
from pcgkit.util.redact import redact_text, secret_values

# Set by the generated workflow (and `pcgkit ci local`) to the job's runner labels: GitHub exposes a
# runner's name to the job but not the labels it was selected by.
LABELS_VAR = "PCGKIT_RUNNER_LABELS"
IMAGE_VAR = "PCGKIT_IMAGE"  # when pcgkit itself runs inside a container: the image it was started from
IMAGE_DIGEST_VAR = "PCGKIT_IMAGE_DIGEST"
HOSTED = "github-hosted"  # RUNNER_ENVIRONMENT of GitHub's interchangeable machines
NO_GPU = "none (no NVIDIA GPU found)"


@dataclasses.dataclass(frozen=True)
class Where:
    host: str
    os: str = ""
    ci: str = ""  # "github-actions" | "gitlab-ci" | "buildkite" | "" (a local run)
    runner_name: str = ""
    runner_labels: tuple[str, ...] = ()
    runner_environment: str = ""  # GitHub: "github-hosted" | "self-hosted"
    run_url: str = ""  # the CI run that made the result
    job: str = ""
    device: str = NO_GPU  # host GPU as nvidia-smi names it: "NVIDIA H200 (compute capability 9.0)"
    driver: str = ""
    backend: str = "venv"
    container: bool = False  # pcgkit itself ran inside a container
    image: str = ""  # the cell's image (docker backend) or the container pcgkit ran in
    image_digest: str = ""

    @property
    def machine(self) -> str:
        """The machine's identity across runs: hosted runners are interchangeable (their host
        names are random per job), so they are named by their labels; anything else by host name."""
        labels = ",".join(self.runner_labels)
        if self.runner_environment == HOSTED:
            return labels or "github-hosted"
        return f"{self.host}[{labels}]" if labels else self.host

    @property
    def key(self) -> str:
        """What tells two results of one cell apart: the machine and the backend. Pure."""
        return f"{self.machine}/{self.backend}"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "runner_labels": list(self.runner_labels), "key": self.key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Where:
        """A crafted artifact is one ValueError naming the field, not a crash in a writer."""
        kwargs = untrusted.typed_fields(cls, data, [f.name for f in dataclasses.fields(cls)], "where")
        kwargs["runner_labels"] = untrusted.str_list(data, "runner_labels", "where")
        kwargs.setdefault("host", "unknown")
        return cls(**kwargs)


def _split_labels(text: str) -> tuple[str, ...]:
    return tuple(x for x in (p.strip() for p in re.split(r"[,\s]+", text.strip("[]"))) if x)


def where_from(
    environ: Mapping[str, str], host: str, os_name: str, device: str, driver: str, backend: str,
    provenance: Mapping[str, Any] | None = None, container: bool = False,
) -> Where:
    """Where a cell ran, from the CI's environment variables and the host facts given. Pure."""
    env = environ.get
    ci, name, labels, run_url, job, runner_env = "", "", _split_labels(env(LABELS_VAR, "")), "", "", ""
    if env("GITHUB_ACTIONS") == "true":
        ci, name, job, runner_env = "github-actions", env("RUNNER_NAME", ""), env("GITHUB_JOB", ""), env("RUNNER_ENVIRONMENT", "")
        if env("GITHUB_RUN_ID"):
            attempt = env("GITHUB_RUN_ATTEMPT", "1")
            run_url = f"{env('GITHUB_SERVER_URL', 'https://github.com')}/{env('GITHUB_REPOSITORY', '')}/actions/runs/{env('GITHUB_RUN_ID')}/attempts/{attempt}"
    elif env("GITLAB_CI") == "true":
        ci, name, job, run_url = "gitlab-ci", env("CI_RUNNER_DESCRIPTION", ""), env("CI_JOB_NAME", ""), env("CI_JOB_URL", "")
        labels = labels or _split_labels(env("CI_RUNNER_TAGS", ""))
    elif env("BUILDKITE") == "true":
        ci, name, job, run_url = "buildkite", env("BUILDKITE_AGENT_NAME", ""), env("BUILDKITE_LABEL", ""), env("BUILDKITE_BUILD_URL", "")
    prov = provenance or {}
    secrets = secret_values(environ)

    def clean(text: str) -> str:
        return redact_text(str(text), secrets)

    return Where(
        host=clean(host), os=clean(os_name), ci=ci, runner_name=clean(name),
        runner_labels=tuple(clean(x) for x in labels), runner_environment=clean(runner_env),
        run_url=clean(run_url), job=clean(job), device=clean(device), driver=clean(driver),
        backend=clean(prov.get("backend") or backend), container=container,
        image=clean(prov.get("image_id") or env(IMAGE_VAR, "")),
        image_digest=clean(prov.get("image_digest") or env(IMAGE_DIGEST_VAR, "")),
    )


@functools.cache
def host_gpu() -> tuple[str, str]:
    """(device, driver) of the host's first NVIDIA GPU; (NO_GPU, "") without one. Cached per process."""
    if shutil.which("nvidia-smi") is None:
        return NO_GPU, ""
    from pcgkit.util import proc

    done = proc.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                    timeout=60, echo=False)
    rows = [line for line in done.output_tail.splitlines() if line.count(",") >= 2]
    if not done.ok or not rows:
        return f"none (nvidia-smi {done.describe_failure()})", ""
    name, driver, capability = (part.strip() for part in rows[0].split(",")[:3])
    more = f" (+{len(rows) - 1} more)" if len(rows) > 1 else ""
    return f"{name} (compute capability {capability}){more}", driver


def capture(backend: str, provenance: Mapping[str, Any] | None = None) -> Where:
    """Where this process runs a cell now (the edge: platform, nvidia-smi, os.environ)."""
    device, driver = host_gpu()
    container = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    return where_from(os.environ, platform.node(), platform.platform(terse=True), device, driver, backend,
                      provenance, container)
