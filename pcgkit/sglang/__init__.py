"""SGLang in the loop: per-release facts, FP4 dispatch, and the SGLang-level compile case."""
