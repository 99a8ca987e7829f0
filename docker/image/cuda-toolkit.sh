#!/bin/sh
# The CUDA toolkit of a cell image, laid out at CUDA_HOME (run by docker/Dockerfile as root).
#   cuda-toolkit.sh base|pypi-wheels CUDA_HOME
# base: link CUDA_HOME to the base image's /usr/local/cuda when it has nvcc (nvidia/cuda), else record
# that the image has none (the registry-free CPU base). pypi-wheels: install the wheels pinned and
# hashed in cuda-requirements.txt (written from docker/cuda-toolkits.toml) with pip --require-hashes,
# then fill the three gaps FlashInfer's JIT trips on: lib64 (its -L$cuda_home/lib64), libcudart.so
# (the wheels ship only libcudart.so.<major>) and lib64/stubs/libcuda.so (its -lcuda; the driver
# library is the host's at run time). Headers-only parts (cuBLAS, cuRAND) keep include/ only.
set -eu  # no -f: the headers-only parts below are removed by glob
source="$1"; home="$2"; here="$(dirname "$0")"; record=/opt/pcgkit/cuda-source.txt
case "$source" in
  base)
    if [ -x /usr/local/cuda/bin/nvcc ]; then
      ln -s /usr/local/cuda "$home"
      echo "cuda-source=base ($(/usr/local/cuda/bin/nvcc --version | tail -n 1))" > "$record"
    else
      echo "cuda-source=none (the base image has no /usr/local/cuda/bin/nvcc)" > "$record"
    fi ;;
  pypi-wheels)
    if ! command -v g++ >/dev/null 2>&1; then
      apt-get update
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++
      rm -rf /var/lib/apt/lists/*
    fi
    cert=""; if [ -s /tmp/pcgkit-build-aids/ca.pem ]; then cert="--cert /tmp/pcgkit-build-aids/ca.pem"; fi
    /opt/pcgkit/uv/bin/pip install --no-cache-dir --quiet --no-deps --require-hashes $cert \
      --target /tmp/pcgkit-cuda-wheels -r "$here/cuda-requirements.txt"
    root="$(sed -n 's/^# root: //p' "$here/cuda-requirements.txt")"
    mv "/tmp/pcgkit-cuda-wheels/$root" "$home"
    rm -rf /tmp/pcgkit-cuda-wheels
    major="$(sed -n 's/^# cuda: \([0-9]*\)\..*/\1/p' "$here/cuda-requirements.txt")"
    # headers-only parts: their shared libraries (cuBLAS alone is ~700 MB) are not linked by the JIT
    rm -f "$home"/lib/libcublas*.so* "$home"/lib/libcurand*.so* "$home"/lib/libnvblas*.so*
    ln -s lib "$home/lib64"
    ln -s "libcudart.so.$major" "$home/lib/libcudart.so"
    mkdir -p "$home/lib/stubs"
    # a real (empty) shared object with the driver's soname, as the toolkit's own stub has
    gcc -shared -Wl,-soname,libcuda.so.1 -o "$home/lib/stubs/libcuda.so" -x c /dev/null
    # the loader finds the toolkit's runtime as in NVIDIA's images (their cuda-cudart package adds
    # the toolkit's lib folder to ld.so.conf.d): a JIT module's NEEDED libcudart.so.<major> resolves
    echo "$home/lib" > /etc/ld.so.conf.d/pcgkit-cuda.conf
    ldconfig
    { echo "cuda-source=pypi-wheels ($("$home/bin/nvcc" --version | tail -n 1))"
      grep -v '^#' "$here/cuda-requirements.txt"; } > "$record"
    ;;
  *) echo "pcgkit: CUDA_SOURCE must be base or pypi-wheels, not '$source'" >&2; exit 3 ;;
esac
cat "$record"
