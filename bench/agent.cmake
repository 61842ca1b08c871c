# dynprof-agent-bench: push -> visible latency, and the agent's RSS, CPU time and
# wakeups while idle with 8 attached ranks (see bench/README.md, "agent").
add_executable(dynprof-agent-bench ${CMAKE_CURRENT_LIST_DIR}/agent_bench.c)
target_link_libraries(dynprof-agent-bench PRIVATE dpagenttest dpprocstat)
set_target_properties(dynprof-agent-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
add_dependencies(dynprof-agent-bench dynprof-agent rankproc)

# trace-steps-bench: the agent's trace reader's throughput and peak RSS on a
# generated trace (bench/README.md, "trace parse").
add_executable(trace-steps-bench ${CMAKE_CURRENT_LIST_DIR}/trace_steps_bench.c)
target_link_libraries(trace-steps-bench PRIVATE dpagent)
set_target_properties(trace-steps-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
