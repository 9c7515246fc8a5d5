# Issue 15, point 4: both backends start under a cluster launcher. The cpu backend under Debian's
# Open MPI (`mpirun -np 4`, one process per rank, each reading OMPI_COMM_WORLD_RANK / SIZE /
# LOCAL_RANK; Gloo meets in /tmp/clustersim-mpi-<PMIX_NAMESPACE>): the 4-rank DDP scenario's ranks
# end with bit-identical parameters (each adds its own gradient values before every all-reduce,
# so identical parameters mean the all-reduces averaged them) and rank 0's merged timeline is
# complete (validate --measured refuses a timeline with a missing task); the 2-stage pipeline's
# send/recv cross between the two processes. As root, mpirun needs --allow-run-as-root, and on a
# 2-core machine --oversubscribe for 4 processes. Skipped (77), saying so, without mpirun.
find_program(CLUSTERSIM_MPIRUN mpirun)
if(CLUSTERSIM_MPIRUN)
  set(CS_MPIRUN "${CLUSTERSIM_MPIRUN} --allow-run-as-root --oversubscribe")
  add_test(NAME cli.mpirun_cpu_4rank_ddp
           COMMAND sh -c "${CS_MPIRUN} -np 4 $<TARGET_FILE:clustersim> execute scenarios/cpu-gpt-tiny-4rank-ddp.yaml --warmup 1 --steps 2 --timeout 20 --timeline ${CMAKE_CURRENT_BINARY_DIR}/mpirun_ddp.json && $<TARGET_FILE:clustersim> validate --measured ${CMAKE_CURRENT_BINARY_DIR}/mpirun_ddp.json scenarios/cpu-gpt-tiny-4rank-ddp.yaml"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.mpirun_cpu_4rank_ddp PROPERTIES LABELS "quick;mpi" TIMEOUT 120 RUN_SERIAL TRUE
    PASS_REGULAR_EXPRESSION "started by mpi, 4 ranks\\); 1 warm-up \\+ 2 measured steps\n.*parameters  bit-identical on every rank after the last step.*graph       580 tasks on 4 ranks.*validate    cpu-gpt-tiny-4rank-ddp against .*step time   predicted")
  add_test(NAME cli.mpirun_cpu_2stage_pipeline
           COMMAND sh -c "${CS_MPIRUN} -np 2 $<TARGET_FILE:clustersim> execute scenarios/cpu-gpt-tiny-2stage-pp.yaml --warmup 1 --steps 2 --timeout 20 --timeline ${CMAKE_CURRENT_BINARY_DIR}/mpirun_pp.json && $<TARGET_FILE:clustersim> validate --measured ${CMAKE_CURRENT_BINARY_DIR}/mpirun_pp.json scenarios/cpu-gpt-tiny-2stage-pp.yaml"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.mpirun_cpu_2stage_pipeline PROPERTIES LABELS "quick;mpi" TIMEOUT 120 RUN_SERIAL TRUE
    PASS_REGULAR_EXPRESSION "started by mpi, 2 ranks.*layout      TP 1 x PP 2 x DP 1.*validate    cpu-gpt-tiny-2stage-pp against .*send/recv +predicted")
  # A launcher that started a different number of processes than the scenario has ranks is named.
  add_test(NAME cli.mpirun_wrong_process_count
           COMMAND sh -c "${CS_MPIRUN} -np 3 $<TARGET_FILE:clustersim> execute scenarios/cpu-gpt-tiny-2stage-pp.yaml 2>&1; true"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.mpirun_wrong_process_count PROPERTIES LABELS "quick;mpi" TIMEOUT 60
    PASS_REGULAR_EXPRESSION "error: the scenario has 2 ranks but mpi started 3 processes; start one process per rank \\(e.g. mpirun -np 2\\)")
else()
  add_test(NAME cli.mpirun_cpu_4rank_ddp COMMAND sh -c "echo 'mpirun not found (Debian: openmpi-bin, installed by scripts/setup.sh): skipped'; exit 77")
  set_tests_properties(cli.mpirun_cpu_4rank_ddp PROPERTIES LABELS "quick;mpi" SKIP_RETURN_CODE 77)
endif()
