# End-to-end benchmarks (included from tests/e2e.cmake; binaries in build/bench/).
#   dynprof-loadgen      N agents in one process against one coordinator:
#                        fan-out latency, events/s, coordinator RSS and CPU
#   dynprof-propagation  admin request -> new generation in every node's segment
# Included from tests/e2e.cmake; safe to include from bench/CMakeLists.txt too.
include_guard(GLOBAL)
add_executable(dynprof-loadgen ${PROJECT_SOURCE_DIR}/bench/loadgen.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_conn.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_fanout.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_failover.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_tls.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_progress.c
  ${PROJECT_SOURCE_DIR}/bench/loadgen_http.c)
target_link_libraries(dynprof-loadgen PRIVATE dptls dpprocstat PkgConfig::JANSSON)
set_target_properties(dynprof-loadgen PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
if(EXISTS ${PROJECT_SOURCE_DIR}/bench/propagation.c)
  add_executable(dynprof-propagation ${PROJECT_SOURCE_DIR}/bench/propagation.c
    ${PROJECT_SOURCE_DIR}/bench/loadgen_http.c)
  target_link_libraries(dynprof-propagation PRIVATE dpdaemon dpprocstat
    PkgConfig::JANSSON)
  set_target_properties(dynprof-propagation PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
