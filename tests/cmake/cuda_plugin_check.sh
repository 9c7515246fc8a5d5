#!/bin/sh
# Usage: cuda_plugin_check.sh CLUSTERSIM. Prints one line per check (cuda_plugin.cmake pins them):
# whether the program links, or loads while running --version and simulate, any of cudart,
# cuBLAS(Lt), NCCL or the cuda plugin. The loader's record (LD_DEBUG=libs) includes dlopen.
bin="$1"
cuda='libcudart|libcublas|libnccl|libclustersim_cuda'
if ldd "$bin" | grep -E "$cuda"; then echo "ldd: links a cuda library"; else echo "ldd: no cuda library"; fi
check() {
  name="$1"; shift
  log="$(LD_DEBUG=libs "$bin" "$@" 2>&1 >/dev/null | grep -E "$cuda")"
  if [ -n "$log" ]; then echo "$name: loaded $log"; else echo "$name: loaded no cuda library"; fi
}
check --version --version
check simulate simulate scenarios/gpt2-large-2xh100-ddp.yaml
