// Backends as plugins: shared objects the clustersim program loads the first time a command needs
// them, so that the commands that never run a graph (simulate, plan, list, --version ...) load
// neither CUDA, NCCL, OpenBLAS nor Gloo. A plugin exports one C function (`entry`) returning a
// table of function pointers whose first member is the `abi` fingerprint of the build that made
// it (cpu_plugin.h, cuda_plugin.h); cpu_loader.cpp and cuda_loader.cpp forward to those tables.
#pragma once

#include <cstddef>
#include <string>

namespace cs::exec {

struct PluginSpec {
  const char* backend;        // "cpu", "cuda": for messages
  const char* file;           // e.g. "libclustersim_cpu.so"
  const char* path_variable;  // environment variable naming the file explicitly
  const char* entry;          // the plugin's one exported C function
  size_t abi;                 // what the table's first member must hold
  std::string how_to_get;     // the error message's last lines: how to build or install it
  // The program it is looked for beside: "" for this process's own (a parent checking the
  // plugin that the programs it starts will load names theirs).
  std::string program;
};

// The plugin's table, or null with `why` filled: every path tried (only $path_variable when it is
// set; otherwise beside the program, then the install's library folder), why each failed
// (absent, a library it needs missing as the dynamic loader names it, another build), and
// spec.how_to_get. A loaded plugin is never unloaded: exceptions and strings it made outlive any
// call.
const void* load_plugin(const PluginSpec& spec, std::string& why);

}  // namespace cs::exec
