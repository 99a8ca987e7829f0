"""Which cases a matrix cell runs: the scope vocabulary, declared once. Plain values.

A release whose (flashinfer, torch) pins another cell already installs shares that cell's
FlashInfer-only verdicts, but its SGLang-level cases (they import its own sglang) run in a cell of
its own with scope SGLANG_LEVEL. The catalog (pcgkit.catalog.SCOPE_FAMILIES) maps a scope
to the case families it runs; `pcgkit run --scope` and the plugin's `--pcgkit-scope` take these.
"""

SCOPE_ALL = "all"
SCOPE_SGLANG_LEVEL = "sglang-level"
SCOPES = (SCOPE_ALL, SCOPE_SGLANG_LEVEL)
