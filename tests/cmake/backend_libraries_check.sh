#!/bin/sh
# Usage: backend_libraries_check.sh CLUSTERSIM. Issue 36: commands that run no graph on hardware
# neither link nor load a backend's libraries (CUDA runtime, cuBLAS, NCCL, OpenBLAS, Gloo, or the
# plugins that carry them: executor/plugin_loader.h). One line per check; backend_plugins.cmake
# pins the whole output.
#
# What a command loaded is the dynamic loader's own record (LD_DEBUG=libs,files: every library it
# searched for or mapped, dlopen included), one file per process (LD_DEBUG_OUTPUT, so a forked
# rank's record is kept too). Guards against passing vacuously: the command must succeed, its
# record must show libc being initialised (the record exists and has the format grepped here),
# and the last check, `execute --backend cpu`, must find OpenBLAS, Gloo and the cpu plugin (the
# same grep sees a library that is loaded).
bin="$1"
backend='libcudart|libcublas|libcuda\.so|libnccl|libopenblas|libblas\.so|libgloo|libclustersim_(cpu|cuda)'
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
linked=$(ldd "$bin" | grep -oE "$backend" | sort -u | tr '\n' ' ')
echo "ldd: links ${linked:-no backend library}"
check() {
  name="$1"; shift
  rm -f "$dir"/ld.*
  LD_DEBUG=libs,files LD_DEBUG_OUTPUT="$dir/ld" "$bin" "$@" >/dev/null 2>"$dir/err"
  rc=$?
  if [ $rc != 0 ]; then echo "$name: exit $rc: $(head -c 300 "$dir/err")"; return; fi
  if ! grep -qE 'calling init: .*/libc\.so' "$dir"/ld.* 2>/dev/null; then
    echo "$name: no record from the dynamic loader"; return
  fi
  loaded=$(cat "$dir"/ld.* | grep -oE "($backend)[^ /]*" | sed 's/\.so.*//' | sort -u | tr '\n' ' ')
  echo "$name: loads ${loaded:-no backend library}"
}
check --version --version
check list list
check simulate simulate scenarios/gpt2-large-2xh100-ddp.yaml
check "execute --backend cpu" execute scenarios/cpu-mlp-2rank-ddp.yaml --backend cpu --steps 1 --warmup 0
