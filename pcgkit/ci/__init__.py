"""The matrix on CI runners: jobs planned from the matrix plan (plan), rendered per CI (github), run locally (local), their uv cache sized against GitHub's limit (cache)."""
