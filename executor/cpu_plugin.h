// The boundary between the clustersim program and its cpu backend's rank (cpu_rank.cpp), a plugin
// loaded on first use (libclustersim_cpu.so). The rank is the only code that needs OpenBLAS and
// Gloo (and through Gloo hiredis, ibverbs, libnl): linked into the program, they were mapped by
// every command, though only the processes of `execute --backend cpu` and `calibrate --backend
// cpu` run a rank. The plugin exports one C function, kCpuPluginEntry, returning the table below;
// cpu_loader.cpp finds it (plugin_loader.h) and implements run_cpu_rank (executor.h) through it.
#pragma once

#include <cstddef>

#include "executor/executor.h"

namespace cs::exec {

struct CpuPlugin {
  size_t abi;  // kCpuPluginAbi of the build that made the plugin (see kCudaPluginAbi: the same)
  int (*run_rank)(const ir::TaskGraph& graph, const RankOptions& options);
};

inline constexpr const char* kCpuPluginEntry = "clustersim_cpu_plugin";
inline constexpr const char* kCpuPluginFile = "libclustersim_cpu.so";

// A fingerprint of the types that cross the boundary; it catches a plugin from another version
// whose types changed size, not one that keeps every size (the plugin comes from the same build).
inline constexpr size_t kCpuPluginAbi =
    sizeof(CpuPlugin) + (sizeof(ir::TaskGraph) << 8) + (sizeof(RankOptions) << 20);

}  // namespace cs::exec
