"""Root conftest: wires the pcgkit plugin into every pytest run in this checkout, and keeps the README's test
command fast: `bin/pcgkit test` with no paths and no -m leaves out the minutes-long tests (markers `slow`, `act`, `docker`),
says so in its header, and `.ci/run` runs them in a second invocation (`bin/pcgkit test -m "slow or act or docker"`).
Naming a file, a node id or a -m expression runs exactly what was asked."""

from __future__ import annotations

import pytest

pytest_plugins = ["pcgkit.plugin"]

LEFT_TO_CI = ("slow", "act", "docker")  # the markers the default run leaves out (a Docker engine's tests build images)
ALL_OF_THEM = "bin/pcgkit test -m 'slow or act or docker'"


def default_run(config: pytest.Config) -> bool:
    """True for the README's command as typed: pytest collected its testpaths (no path given) and no -m."""
    return config.args_source is pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr


def pytest_report_header(config: pytest.Config) -> str | None:
    if default_run(config):
        return f"left out of this run: tests marked {' or '.join(LEFT_TO_CI)} (minutes each; CI runs them): {ALL_OF_THEM}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not default_run(config):
        return
    keep: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        (left if any(item.get_closest_marker(m) for m in LEFT_TO_CI) else keep).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = keep
