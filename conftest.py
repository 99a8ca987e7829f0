"""Root conftest: wires the pcgkit plugin into every pytest run in this checkout."""

pytest_plugins = ["pcgkit.plugin"]
