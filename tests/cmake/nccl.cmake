# bench-collective in nccl-tests' own terms (issue 16, point 4) and NCCL 2.28's tuning table.
# 8 B all-reduce on 8 H100: ring LL, launch 5.6 + 14 x 0.6 us = 14.00 us (collective_algorithms.h).
add_test(NAME cli.bench_collective_nccl_tests_layout
         COMMAND clustersim bench-collective --cluster dgx_h100 -g 8 -b 8 -e 8 -f 2 --format nccl-tests)
set_tests_properties(cli.bench_collective_nccl_tests_layout PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n.*\n           8             2     float     sum      -1    14.00    0.00    0.00    N/A    14.00    0.00    0.00    N/A\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : ")
# all_gather counts are per rank, as nccl-tests prints them: 32 MiB over 8 ranks of float = 1048576.
add_test(NAME cli.bench_collective_all_gather_counts_per_rank
         COMMAND clustersim bench-collective --cluster dgx_h100 -g 8 --op all_gather -b 32M -e 32M --format nccl-tests)
set_tests_properties(cli.bench_collective_all_gather_counts_per_rank PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "    33554432       1048576     float    none      -1 ")
add_test(NAME cli.bench_collective_bad_size
         COMMAND sh -c "$<TARGET_FILE:clustersim> bench-collective -b 32Q 2>&1; echo exit=$?")
set_tests_properties(cli.bench_collective_bad_size PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "error: -b '32Q': expected a size such as 8, 32M, 1G or 1MiB.*exit=[1-9]")
# NCCL 2.28's own ring all-reduce LL entry on 8 Hopper GPUs: 6.6 + 14 x 0.6 = 15.0 us, 141 x 8/14 GB/s.
add_test(NAME cli.bench_collective_tuning_table
         COMMAND clustersim bench-collective --cluster dgx_h100 --gpus 8 --tuning-table)
set_tests_properties(cli.bench_collective_tuning_table PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "NCCL 2.28.9 tuning model.*all_reduce \\|[^\n]*     15.0/  80.6 \\|")
