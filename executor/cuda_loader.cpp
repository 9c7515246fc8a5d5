// cuda_backend.h in the clustersim program: loads the cuda plugin (cuda_plugin.h) the first time
// a function needs it and forwards to it. Without a loadable plugin the backend reports that it is
// missing, where it was looked for and how to get it, as the build without nvcc always did.
#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include "executor/cuda_plugin.h"
#include "executor/launch_env.h"

namespace cs::exec {
namespace {

namespace fs = std::filesystem;

struct LoadedPlugin {
  const CudaPlugin* table = nullptr;  // null: not loaded, `why` says why
  std::string why;
};

// Where the plugin may be: only $CLUSTERSIM_CUDA_PLUGIN when it is set; otherwise beside the
// running program (the build folder, a bundle), then the install's library folder.
std::vector<fs::path> plugin_candidates() {
  if (const auto given = process_env()("CLUSTERSIM_CUDA_PLUGIN"); given && !given->empty())
    return {*given};
  std::vector<fs::path> paths;
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back(program.parent_path() / kCudaPluginFile);
  paths.push_back(fs::path(CLUSTERSIM_INSTALL_LIBDIR) / kCudaPluginFile);
  return paths;
}

// The plugin's table, or why `path` does not hold a usable one. Never unloaded: exceptions and
// strings the plugin made outlive any call.
const CudaPlugin* open_plugin(const fs::path& path, std::string& why) {
  if (!fs::exists(path)) {
    why = "absent";
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    why = dlerror();  // e.g. libcudart, libcublasLt or libnccl not found on this machine
    return nullptr;
  }
  const auto entry = reinterpret_cast<CudaPluginEntry>(dlsym(handle, kCudaPluginEntry));
  const CudaPlugin* table = entry ? entry() : nullptr;
  if (!table) {
    why = std::string("no entry point ") + kCudaPluginEntry + " (not a clustersim cuda plugin)";
    return nullptr;
  }
  if (table->abi != kCudaPluginAbi) {
    why = "built by another version of clustersim: rebuild or reinstall it with this one";
    return nullptr;
  }
  return table;
}

LoadedPlugin load_plugin() {
  LoadedPlugin loaded;
  std::string tried;
  for (const fs::path& path : plugin_candidates()) {
    std::string why;
    loaded.table = open_plugin(path, why);
    if (loaded.table) return loaded;
    tried += "\n  " + path.string() + ": " + why;
  }
  loaded.why = std::string("the cuda backend plugin ") + kCudaPluginFile +
               " could not be loaded; tried:" + tried +
               "\nIt is built beside the clustersim program where the CUDA toolkit is (cmake "
               "finds /usr/local/cuda/bin/nvcc; target clustersim_cuda) and installed by cmake "
               "--install; CLUSTERSIM_CUDA_PLUGIN=PATH names it explicitly.";
  return loaded;
}

// Loaded once per process, on first use (thread-safe: a function-local static).
const LoadedPlugin& plugin() {
  static const LoadedPlugin loaded = load_plugin();
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
