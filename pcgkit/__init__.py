"""pcgkit: regression harness and bug-report kit for torch.compile(fullgraph=True) failures
in SGLang's piecewise CUDA graph runner on NVFP4 models (FlashInfer's lazy JIT loader)."""

__version__ = "0.1.0"
