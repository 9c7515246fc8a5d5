// The boundary between the clustersim program and its cuda backend, a plugin loaded on first use
// (libclustersim_cuda.so, built from executor/cuda/ wherever nvcc is). The program links no CUDA
// library: before the plugin, every command loaded cudart, cuBLASLt and NCCL at start (0.45 s and
// 222 MB for `clustersim --version`), though only `execute` and `calibrate --backend cuda` use
// them. The plugin exports one C function, kCudaPluginEntry, that returns the table below;
// cuda_loader.cpp finds and loads it and implements cuda_backend.h by forwarding to the table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "executor/cuda_backend.h"

namespace cs::exec {

struct CudaPlugin {
  // kCudaPluginAbi of the build that made the plugin: the table passes C++ objects by reference,
  // so the program and the plugin must agree on their layouts (same clustersim build).
  size_t abi;
  int (*device_count)(std::string* why);
  std::string (*environment)(std::string* why);
  bool (*has_fp8)();
  Measured (*run)(const ir::TaskGraph& graph, const CudaOptions& options);
  std::optional<Measured> (*run_launched)(const ir::TaskGraph& graph, const CudaOptions& options,
                                          const CudaLaunch& launch);
};

inline constexpr const char* kCudaPluginEntry = "clustersim_cuda_plugin";
inline constexpr const char* kCudaPluginFile = "libclustersim_cuda.so";

// A fingerprint of the types that cross the boundary. It catches a plugin left from another
// version (an install, an old build folder) whose types changed size; it cannot see a change that
// keeps every size, so the plugin is meant to come from the same build as the program.
inline constexpr size_t kCudaPluginAbi = sizeof(CudaPlugin) + (sizeof(ir::TaskGraph) << 8) +
                                         (sizeof(Measured) << 20) + (sizeof(CudaOptions) << 32) +
                                         (sizeof(CudaLaunch) << 44);

}  // namespace cs::exec
