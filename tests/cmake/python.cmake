# The Python module clustersim (issue 38; python/, docs/user-guide/python.md): pytest files under
# tests/python/, run by Debian's python3 (where python3-pytest, numpy, pandas and matplotlib are)
# with the module from the build tree, from the repository root. Label python; the fast ones also
# quick. Absent where the module is not built (python/CMakeLists.txt says why at configure time).
# No bytecode is written: the tests leave the source tree as they found it.
if(TARGET _clustersim)
  function(cs_python_test name file labels)
    add_test(NAME python.${name}
             COMMAND ${CS_PYTHON_EXECUTABLE} -m pytest -q -p no:cacheprovider tests/python/${file}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(python.${name} PROPERTIES LABELS "${labels}" ENVIRONMENT
      "PYTHONPATH=${PROJECT_BINARY_DIR}/python;CLUSTERSIM_CLI=$<TARGET_FILE:clustersim>;MPLBACKEND=Agg;PYTHONDONTWRITEBYTECODE=1")
  endfunction()
  cs_python_test(scenario test_scenario.py "python;quick")
  cs_python_test(simulate test_simulate.py "python;quick")
  cs_python_test(plan_import test_plan_import.py "python;quick")
  cs_python_test(file_limits test_file_limits.py "python;quick")
  cs_python_test(docs_example test_docs_example.py "python;quick")
  # Every shipped scenario through the command and the module, twice (about 3 minutes: most of it
  # llama2-70b on 64 GPUs, every rank simulated).
  cs_python_test(report_every_scenario test_report.py "python")
  set_tests_properties(python.report_every_scenario PROPERTIES TIMEOUT 1200)
endif()
