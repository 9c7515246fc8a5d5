// Where a rank learns who it is when a cluster's launcher started it (`mpirun`, `srun`) instead of
// `clustersim execute` forking its own ranks: rank, world size and local rank from the launcher's
// environment, and a rendezvous directory every rank of the job agrees on (Gloo's FileStore and the
// NCCL unique id are exchanged through files there; on several nodes it must be on a shared file
// system, or named with --rendezvous).
//
// Variables read, in this order of precedence:
//   Open MPI    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//               OMPI_COMM_WORLD_LOCAL_SIZE; job key from PMIX_NAMESPACE or OMPI_MCA_orte_hnp_uri
//   PMI (MPICH, Intel MPI, srun --mpi=pmi2)  PMI_RANK, PMI_SIZE, MPI_LOCALRANKID / PMI_LOCAL_RANK
//   Slurm       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NUM_NODES; job key from
//               SLURM_JOB_ID and SLURM_STEP_ID
// Validation: every value must be a whole number with 0 <= rank < size and 0 <= local rank;
// otherwise a UserError names the variable. Tested in tests/executor_test.cpp (synthetic
// environments) and tests/cmake/mpi.cmake (real `mpirun -np 4`).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace cs::exec {

enum class LauncherKind { none, mpi, pmi, slurm };

struct LaunchEnv {
  LauncherKind kind = LauncherKind::none;
  int rank = 0, world = 1, local_rank = 0;
  int nodes = 0;        // 0: unknown
  std::string job_key;  // the same on every rank of one job ("" when the launcher has none)
  bool single_node() const;
};

std::string_view to_string(LauncherKind k);

// The environment as a function, so tests can hand in their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// `wanted`: "auto" (whichever launcher's variables are present; none is not an error), "mpi",
// "pmi", "slurm" (that launcher's variables must be present), or "none".
// Throws UserError for an unknown name, a missing variable of a named launcher, or a bad value.
LaunchEnv detect_launch_env(const std::string& wanted, const EnvLookup& env);

// The rendezvous directory: `explicit_dir` when given, else $CLUSTERSIM_RENDEZVOUS, else
// /tmp/clustersim-<launcher>-<job key> (one node only). Throws UserError when none can be
// derived (no job key) or when the job spans several nodes and the directory is under /tmp.
std::string rendezvous_dir(const LaunchEnv& e, const std::string& explicit_dir,
                           const EnvLookup& env);

}  // namespace cs::exec
