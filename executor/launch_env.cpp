#include "executor/launch_env.h"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "common/error.h"
#include "common/units.h"

namespace cs::exec {
namespace {

struct Names {
  LauncherKind kind;
  const char* rank;
  const char* size;
  std::vector<const char*> local;  // the first present wins
};

const std::vector<Names>& launchers() {
  static const std::vector<Names> all{
      {LauncherKind::mpi,
       "OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {LauncherKind::pmi, "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}},
      {LauncherKind::slurm, "SLURM_PROCID", "SLURM_NTASKS", {"SLURM_LOCALID"}},
  };
  return all;
}

int whole(const EnvLookup& env, const std::string& name, int min) {
  const auto v = env(name);
  if (!v) throw UserError("launcher: " + name + " is not set");
  const auto n = parse_integer(*v);
  if (!n || *n < min || *n >= (int64_t{1} << 31))
    throw UserError("launcher: " + name + "='" + *v + "' is not a whole number of at least " +
                    std::to_string(min));
  return static_cast<int>(*n);
}

}  // namespace

bool LaunchEnv::single_node() const { return nodes == 1 || world == 1; }

std::string_view to_string(LauncherKind k) {
  switch (k) {
    case LauncherKind::none:
      return "none";
    case LauncherKind::mpi:
      return "mpi";
    case LauncherKind::pmi:
      return "pmi";
    case LauncherKind::slurm:
      return "slurm";
  }
  return "?";
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

LaunchEnv detect_launch_env(const std::string& wanted, const EnvLookup& env) {
  LaunchEnv e;
  if (wanted == "none") return e;
  const Names* chosen = nullptr;
  for (const Names& n : launchers()) {
    const bool named = wanted == to_string(n.kind);
    if (wanted != "auto" && !named) continue;
    if (named || env(n.rank)) {
      chosen = &n;
      break;
    }
  }
  if (!chosen) {
    if (wanted == "auto") return e;
    throw UserError("--launcher '" + wanted + "': valid values are auto, mpi, pmi, slurm, none");
  }
  e.kind = chosen->kind;
  e.rank = whole(env, chosen->rank, 0);
  e.world = whole(env, chosen->size, 1);
  if (e.rank >= e.world)
    throw UserError("launcher: " + std::string(chosen->rank) + "=" + std::to_string(e.rank) +
                    " is not below " + chosen->size + "=" + std::to_string(e.world));
  for (const char* l : chosen->local) {
    if (env(l)) {
      e.local_rank = whole(env, l, 0);
      break;
    }
  }
  switch (e.kind) {
    case LauncherKind::mpi:
      if (env("OMPI_COMM_WORLD_LOCAL_SIZE"))
        e.nodes = whole(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1) == e.world ? 1 : 0;
      if (auto ns = env("PMIX_NAMESPACE"))
        e.job_key = *ns;
      else if (auto uri = env("OMPI_MCA_orte_hnp_uri"))
        e.job_key = uri->substr(0, uri->find(';'));
      break;
    case LauncherKind::slurm:
      if (env("SLURM_JOB_NUM_NODES")) e.nodes = whole(env, "SLURM_JOB_NUM_NODES", 1);
      if (auto id = env("SLURM_JOB_ID")) e.job_key = *id + "." + env("SLURM_STEP_ID").value_or("0");
      break;
    default:
      if (auto id = env("SLURM_JOB_ID")) e.job_key = *id + "." + env("SLURM_STEP_ID").value_or("0");
      break;
  }
  return e;
}

std::string rendezvous_dir(const LaunchEnv& e, const std::string& explicit_dir,
                           const EnvLookup& env) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (auto d = env("CLUSTERSIM_RENDEZVOUS"); d && !d->empty()) return *d;
  if (!e.single_node()) {
    throw UserError(
        "launcher: " + std::to_string(e.world) +
        " ranks that may span several nodes need a rendezvous directory on a shared file system: " +
        "pass --rendezvous DIR or set CLUSTERSIM_RENDEZVOUS");
  }
  if (e.job_key.empty()) {
    throw UserError("launcher: " + std::string(to_string(e.kind)) +
                    " gives no job id to name a rendezvous directory: pass --rendezvous DIR or set "
                    "CLUSTERSIM_RENDEZVOUS");
  }
  std::string key;
  for (char c : e.job_key)
    key += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return "/tmp/clustersim-" + std::string(to_string(e.kind)) + "-" + key;
}

}  // namespace cs::exec
