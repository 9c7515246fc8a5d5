// run_cpu_rank (executor.h) in the clustersim program: loads the cpu plugin (cpu_plugin.h) the
// first time a rank runs and forwards to it.
#include <fstream>

#include "executor/cpu_plugin.h"
#include "executor/plugin_loader.h"

namespace cs::exec {
namespace {

PluginSpec cpu_plugin_spec(const std::string& program) {
  return {.backend = "cpu",
          .file = kCpuPluginFile,
          .path_variable = "CLUSTERSIM_CPU_PLUGIN",
          .entry = kCpuPluginEntry,
          .abi = kCpuPluginAbi,
          .how_to_get =
              "It is built beside the clustersim program (target clustersim_cpu) and installed by "
              "cmake --install; it needs OpenBLAS and Gloo (Debian, Ubuntu: apt-get install "
              "libopenblas0-pthread libgloo0; to build it, libopenblas-dev libgloo-dev); "
              "CLUSTERSIM_CPU_PLUGIN=PATH names it explicitly.",
          .program = program};
}

struct LoadedPlugin {
  const CpuPlugin* table = nullptr;  // null: not loaded, `why` says why
  std::string why;
};

// This process's plugin, loaded once, on first use (thread-safe: a function-local static).
const LoadedPlugin& plugin() {
  static const LoadedPlugin loaded = [] {
    LoadedPlugin p;
    p.table = static_cast<const CpuPlugin*>(load_plugin(cpu_plugin_spec(""), p.why));
    return p;
  }();
  return loaded;
}

}  // namespace

void require_cpu_backend(const std::string& program) {
  std::string why;
  if (!load_plugin(cpu_plugin_spec(program), why)) throw ExecutionError(why);
}

int run_cpu_rank(const ir::TaskGraph& graph, const RankOptions& options) {
  if (plugin().table) return plugin().table->run_rank(graph, options);
  // As the rank itself reports a failure: its error file, which the parent reads.
  std::ofstream(options.dir + "/rank" + std::to_string(options.rank) + ".error")
      << plugin().why << "\n";
  return kExitExecutionFailed;
}

}  // namespace cs::exec
