# dynprof-coord-bench: the coordinator alone through real agent links (fake
# agents from tests/support/fakeagent.c): admin request -> push to N agents, events/s,
# RSS with 1,000 idle agents.  Run: build/bench/dynprof-coord-bench
add_executable(dynprof-coord-bench ${PROJECT_SOURCE_DIR}/bench/coord_bench.c
  ${PROJECT_SOURCE_DIR}/tests/support/fakeagent.c
  ${PROJECT_SOURCE_DIR}/tests/support/test_coord_util.c)
target_include_directories(dynprof-coord-bench PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/support)
target_link_libraries(dynprof-coord-bench PRIVATE dpdaemon PkgConfig::JANSSON
  PkgConfig::CMOCKA)
set_target_properties(dynprof-coord-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(dynprof-coord-bench dynprof-coordinator)
# dynprof-view-bench: a big job's view (stragglers at a tick, the summary,
# /stragglers, /nodes) through fake agents.  Run: build/bench/dynprof-view-bench
add_executable(dynprof-view-bench ${PROJECT_SOURCE_DIR}/bench/view_bench.c
  ${PROJECT_SOURCE_DIR}/tests/support/fakeagent.c
  ${PROJECT_SOURCE_DIR}/tests/support/test_coord_util.c)
target_include_directories(dynprof-view-bench PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/support)
target_link_libraries(dynprof-view-bench PRIVATE dpdaemon dpprocstat PkgConfig::JANSSON
  PkgConfig::CMOCKA)
set_target_properties(dynprof-view-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(dynprof-view-bench dynprof-coordinator)
# dynprof-busy-judge-bench: the CPU of a tick's judgement of busy times
# (server/busy.c) at 100,000 ranks, in process.  Run:
# build/bench/dynprof-busy-judge-bench
add_executable(dynprof-busy-judge-bench ${PROJECT_SOURCE_DIR}/bench/busy_judge.c)
target_link_libraries(dynprof-busy-judge-bench PRIVATE dpcoord)
set_target_properties(dynprof-busy-judge-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
# dynprof-batch-bench: the CPU a follower's copy spends on the etcd store's
# event batches, decoded alone and taken into a model, in process (no
# etcd).  Run: build/bench/dynprof-batch-bench [--ranks N] [--runs K]
add_executable(dynprof-batch-bench ${PROJECT_SOURCE_DIR}/bench/batch_bench.c)
target_link_libraries(dynprof-batch-bench PRIVATE dpcoord)
set_target_properties(dynprof-batch-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
