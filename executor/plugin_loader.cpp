#include "executor/plugin_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include "executor/launch_env.h"

namespace cs::exec {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> candidates(const PluginSpec& spec) {
  if (const auto given = process_env()(spec.path_variable); given && !given->empty())
    return {*given};
  std::vector<fs::path> paths;
  std::error_code ec;
  const fs::path program =
      spec.program.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(spec.program);
  if (!ec) paths.push_back(program.parent_path() / spec.file);
  paths.push_back(fs::path(CLUSTERSIM_INSTALL_LIBDIR) / spec.file);
  return paths;
}

const void* open_plugin(const fs::path& path, const PluginSpec& spec, std::string& why) {
  if (!fs::exists(path)) {
    why = "absent";
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    why = dlerror();  // names the library the plugin needs and this machine lacks
    return nullptr;
  }
  using Entry = const void* (*)();
  const auto entry = reinterpret_cast<Entry>(dlsym(handle, spec.entry));
  const void* table = entry ? entry() : nullptr;
  if (!table) {
    why = std::string("no entry point ") + spec.entry + " (not this clustersim plugin)";
    return nullptr;
  }
  // Every plugin table starts with its build's fingerprint (a size_t).
  if (*static_cast<const size_t*>(table) != spec.abi) {
    why = "built by another version of clustersim: rebuild or reinstall it with this one";
    return nullptr;
  }
  return table;
}

}  // namespace

const void* load_plugin(const PluginSpec& spec, std::string& why) {
  std::string tried;
  for (const fs::path& path : candidates(spec)) {
    std::string failure;
    if (const void* table = open_plugin(path, spec, failure)) return table;
    tried += "\n  " + path.string() + ": " + failure;
  }
  why = std::string("the ") + spec.backend + " backend plugin " + spec.file +
        " could not be loaded; tried:" + tried + "\n" + spec.how_to_get;
  return nullptr;
}

}  // namespace cs::exec
