# dynprof-agent-bench: push -> visible latency, and the agent's RSS, CPU time and
# wakeups while idle with 8 attached ranks (see bench/README.md, "agent").
add_executable(dynprof-agent-bench ${CMAKE_CURRENT_LIST_DIR}/agent_bench.c)
target_link_libraries(dynprof-agent-bench PRIVATE dpagenttest dpprocstat)
set_target_properties(dynprof-agent-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(dynprof-agent-bench dynprof-agent rankproc)
