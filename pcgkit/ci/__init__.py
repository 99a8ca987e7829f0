"""The matrix on CI runners: jobs planned from the matrix plan (plan), rendered per CI (github), run locally (local)."""
