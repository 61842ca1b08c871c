# End-to-end: the benchmark tools and the cluster tests (tests/e2e/), which run the
# real coordinator, agents and dynprof-train-sim ranks on loopback (and in network
# namespaces), each test under its own temporary directory with its own ports.
include(${PROJECT_SOURCE_DIR}/bench/loadgen.cmake)

set(E2E_PYTHON /usr/bin/python3)
if(TARGET dynprof-coordinator AND TARGET dynprof-agent AND TARGET dynprof-train-sim)
  foreach(t alignment targeting late_join faults noblock netns)
    add_test(NAME e2e_${t}
      COMMAND ${E2E_PYTHON} ${PROJECT_SOURCE_DIR}/tests/e2e/test_${t}.py)
    set_tests_properties(e2e_${t} PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77
      ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
  # It measures steps per second, which sanitizers distort.
  set_tests_properties(e2e_noblock PROPERTIES LABELS nosan)
endif()
