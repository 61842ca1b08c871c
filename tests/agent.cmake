# Tests of dynprof-agent: the real binary, a fake coordinator (support/fakecoord.c)
# and real rank processes (support/rankproc.c, linked with libdynprof).
add_library(dpagenttest STATIC support/fakecoord.c)
target_include_directories(dpagenttest PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/support)
target_link_libraries(dpagenttest PUBLIC dpcommon dpproto_c)

dynprof_test(test_agent_link SOURCES component/test_agent_link.c
  support/linktest.c LIBS dpagenttest TIMEOUT 120)
add_dependencies(test_agent_link dynprof-agent)
# Several coordinators, one the leader: following ERROR_NOT_LEADER.
dynprof_test(test_agent_leader SOURCES component/test_agent_leader.c
  support/linktest.c LIBS dpagenttest TIMEOUT 120)
add_dependencies(test_agent_leader dynprof-agent)
# Rank events through the agent: slot logs, replays, reclaimed slots.
dynprof_test(test_agent_events SOURCES component/test_agent_events.c
  support/linktest.c LIBS dpagenttest TIMEOUT 120)
add_dependencies(test_agent_events dynprof-agent)

# A tiny training process linked with libdynprof, stepping on a timer.
add_executable(rankproc support/rankproc.c)
target_link_libraries(rankproc PRIVATE dynprof)

dynprof_test(test_agent_ranks SOURCES component/test_agent_ranks.c
  support/linktest.c LIBS dpagenttest TIMEOUT 120)
add_dependencies(test_agent_ranks dynprof-agent rankproc)

dynprof_test(test_agent SOURCES component/test_agent.c LIBS dpagenttest TIMEOUT 120)
add_dependencies(test_agent dynprof-agent)

dynprof_test(test_agent_apply SOURCES unit/test_agent_apply.c LIBS dpagent
  TIMEOUT 30)
# A rank's arrivals read from its slot, hostile marks left out.
dynprof_test(test_agent_arrive SOURCES unit/test_agent_arrive.c
  support/unit_util.c LIBS dpagent TIMEOUT 30)
# Senders and slots across pid namespaces (docs/containers.md).
dynprof_test(test_agent_sender SOURCES unit/test_agent_sender.c
  support/unit_util.c LIBS dpagent TIMEOUT 30)

# A segment never kills or misleads a rank or the agent (docs/segments.md).
dynprof_test(test_segsafe SOURCES component/test_segsafe.c support/linktest.c
  support/linklib.c LIBS dpagenttest dynprof TIMEOUT 120)
add_dependencies(test_segsafe dynprof-agent rankproc)

# The same for what needs root: a nearly full tmpfs, another user's segment.
# Skipped (77) when not root.
dynprof_test(test_segsafe_root SOURCES component/test_segsafe_root.c
  support/linktest.c support/linklib.c LIBS dpagenttest dynprof TIMEOUT 120)
add_dependencies(test_segsafe_root dynprof-agent)
set_tests_properties(test_segsafe_root PROPERTIES SKIP_RETURN_CODE 77)

# A trace directory packed into the shared-directory store (agent/trace_pack.c):
# links and names never followed out of it, bounds, the rank user's rights.
dynprof_test(test_trace_pack SOURCES component/test_trace_pack.c LIBS dpagent
  TIMEOUT 120)

# The agent's trace reader (agent/trace_steps.c): torch.profiler's forms, gzip,
# hostile traces with their reasons, memory bounded on 512 MiB of events.
dynprof_test(test_trace_steps SOURCES unit/test_trace_steps.c LIBS dpagent
  TIMEOUT 300)
