#!/bin/sh
# The image's entrypoint: lay the JIT cache compiled at build time (/opt/pcgkit/jit-cache) into
# the writable FLASHINFER_WORKSPACE_BASE (the root filesystem is read-only at run time; FlashInfer
# takes a file lock and ninja writes its log there), set the arch list the cache was built for
# (/opt/pcgkit/cuda.env), then run the command (`pcgkit run ...`).
set -eu
# A base without a toolkit (the registry-free CPU base): the image's own CUDA_HOME points nowhere, so
# unset it, as on a machine without CUDA (FlashInfer then looks for nvcc on PATH). A CUDA_HOME the
# caller passed (docker run -e) is the caller's: kept.
if [ "${CUDA_HOME:-}" = /opt/pcgkit/cuda ] && [ ! -x /opt/pcgkit/cuda/bin/nvcc ]; then unset CUDA_HOME; fi
if [ -d /opt/pcgkit/jit-cache ] && [ -n "${FLASHINFER_WORKSPACE_BASE:-}" ] && [ ! -e "$FLASHINFER_WORKSPACE_BASE" ]; then
  mkdir -p "$FLASHINFER_WORKSPACE_BASE"
  cp -a /opt/pcgkit/jit-cache/. "$FLASHINFER_WORKSPACE_BASE/"
fi
if [ -s /opt/pcgkit/cuda.env ] && [ -z "${FLASHINFER_CUDA_ARCH_LIST:-}" ]; then
  FLASHINFER_CUDA_ARCH_LIST="$(sed -n 's/^FLASHINFER_CUDA_ARCH_LIST=//p' /opt/pcgkit/cuda.env)"
  export FLASHINFER_CUDA_ARCH_LIST
fi
exec "$@"
