// cuda_backend.h in the clustersim program: loads the cuda plugin (cuda_plugin.h) the first time
// a function needs it and forwards to it. Without a loadable plugin the backend reports that it is
// missing, where it was looked for and how to get it, as the build without nvcc always did.
#include "executor/cuda_plugin.h"
#include "executor/plugin_loader.h"

namespace cs::exec {
namespace {

struct LoadedPlugin {
  const CudaPlugin* table = nullptr;  // null: not loaded, `why` says why
  std::string why;
};

LoadedPlugin load_cuda_plugin() {
  const PluginSpec spec{
      .backend = "cuda",
      .file = kCudaPluginFile,
      .path_variable = "CLUSTERSIM_CUDA_PLUGIN",
      .entry = kCudaPluginEntry,
      .abi = kCudaPluginAbi,
      .how_to_get =
          "It is built beside the clustersim program where the CUDA toolkit is (cmake "
          "finds /usr/local/cuda/bin/nvcc; target clustersim_cuda) and installed by "
          "cmake --install; CLUSTERSIM_CUDA_PLUGIN=PATH names it explicitly."};
  LoadedPlugin loaded;
  loaded.table = static_cast<const CudaPlugin*>(load_plugin(spec, loaded.why));
  return loaded;
}

// Loaded once per process, on first use (thread-safe: a function-local static).
const LoadedPlugin& plugin() {
  static const LoadedPlugin loaded = load_cuda_plugin();
  return loaded;
}

const CudaPlugin& plugin_or_throw() {
  if (!plugin().table) throw ExecutionError(plugin().why);
  return *plugin().table;
}

}  // namespace

bool cuda_backend_built() { return plugin().table != nullptr; }

int cuda_device_count(std::string* why) {
  if (plugin().table) return plugin().table->device_count(why);
  if (why) *why = plugin().why;
  return 0;
}

std::string cuda_environment(std::string* why) {
  if (plugin().table) return plugin().table->environment(why);
  if (why) *why = plugin().why;
  return "";
}

bool cuda_has_fp8() { return plugin().table && plugin().table->has_fp8(); }

Measured run_cuda(const ir::TaskGraph& graph, const CudaOptions& options) {
  return plugin_or_throw().run(graph, options);
}

std::optional<Measured> run_cuda_launched(const ir::TaskGraph& graph, const CudaOptions& options,
                                          const CudaLaunch& launch) {
  return plugin_or_throw().run_launched(graph, options, launch);
}

}  // namespace cs::exec
