# tests of server

# dynprofctl
dynprof_test(test_ctl SOURCES unit/test_ctl.c LIBS dpctl TIMEOUT 30)
dynprof_test(test_ctl_http SOURCES unit/test_ctl_http.c LIBS dpctl TIMEOUT 30)
dynprof_test(test_ctl_local SOURCES component/test_ctl_local.c
  LIBS dpcommon PkgConfig::JANSSON TIMEOUT 60)
add_dependencies(test_ctl_local dynprofctl)
# dynprofctl against the real coordinator, agent and simulated ranks.
add_test(NAME test_ctl_coord
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_ctl_coord.sh)
set_tests_properties(test_ctl_coord PROPERTIES TIMEOUT 120
  ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}")
# dynprofctl over HTTPS: local TLS servers (Python, openssl certificates),
# client certificates, a wrong CA, redirects to named and unnamed hosts; then
# the real coordinator's HTTPS, with and without client certificates.
add_test(NAME test_ctl_https
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/component/test_ctl_https.sh)
set_tests_properties(test_ctl_https PROPERTIES TIMEOUT 120
  ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}")

# dynprofctl fetch against a hostile traces index (a FIFO, /dev/zero, endless
# and silent downloads, a directory as locations): bounded, nothing left.
add_test(NAME test_ctl_fetch_hostile
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/component/test_ctl_fetch_hostile.py)
set_tests_properties(test_ctl_fetch_hostile PROPERTIES TIMEOUT 240
  SKIP_RETURN_CODE 77 ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}")

# dynprofctl fetch --jobs N: at most N downloads at once (more than one with
# 4, exactly one with 1), each checked; a corrupted object fails its rank
# alone; the progress bar on a pseudo-terminal only.
add_test(NAME test_ctl_fetch_parallel
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/component/test_ctl_fetch_parallel.py)
set_tests_properties(test_ctl_fetch_parallel PROPERTIES TIMEOUT 240
  SKIP_RETURN_CODE 77 ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}")

# dynprof_coord_test(NAME [TIMEOUT S] [LIBS ...] [DEPENDS ...]):
# component/NAME.c against the real coordinator with fake agents
# (support/test_coord_util.c, support/fakeagent.c); 120 s unless told.
function(dynprof_coord_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;DEPENDS" ${ARGN})
  dynprof_test(${name} SOURCES component/${name}.c support/test_coord_util.c
    support/fakeagent.c LIBS dpdaemon ${T_LIBS} PkgConfig::JANSSON
    TIMEOUT ${T_TIMEOUT})
  add_dependencies(${name} dynprof-coordinator ${T_DEPENDS})
endfunction()

# dynprof-coordinator: the real binary on 127.0.0.1, port 0, private state dir.
dynprof_coord_test(test_coord)
dynprof_coord_test(test_coord_agents)
dynprof_coord_test(test_coord_protocol)
# A job's summary and its ranks page by page, through the real binary and
# fake agents.
dynprof_coord_test(test_coord_view)
# A window's counts stay what they were while ranks come and go, and
# dynprofctl trace --wait judges it as the summary does.
dynprof_coord_test(test_coord_history DEPENDS dynprofctl)
# The event stream: resumed, followed, its bounds, across a restart.
dynprof_coord_test(test_coord_events TIMEOUT 300 LIBS dpagenttest
  DEPENDS dynprof-agent rankproc)
# The coordinator's schedule with the real agent and real ranks (rankproc).
dynprof_test(test_coord_ranks SOURCES e2e/test_coord_ranks.c
  support/test_coord_util.c support/fakeagent.c
  LIBS dpdaemon dpagenttest PkgConfig::JANSSON TIMEOUT 120)
add_dependencies(test_coord_ranks dynprof-coordinator dynprof-agent rankproc)
# Bad values at the coordinator's edges (steps, strings, integers, methods,
# token files), through the real binary and fake agents.
dynprof_coord_test(test_coord_badvalues)
# Bounds on peers: frames and time before hello, output an agent does not
# read, jobs and ranks from agents, seq windows, slow and many admin clients,
# descriptors running out.
dynprof_coord_test(test_coord_bounds TIMEOUT 400)
# Budgets of rank state: event strings, ranks per job and per agent, the
# memory of all ranks, each refusal counted and a healthy job unaffected.
dynprof_coord_test(test_coord_budgets TIMEOUT 180)
# The generation counter against agents that applied more than the store
# holds: raised, so that the next change reaches them; an absurd one not.
dynprof_coord_test(test_coord_generation)
# Stragglers: fake agents report steps, the real coordinator flags the ranks
# and nodes that lag the job's median or whose rate fell.
dynprof_coord_test(test_coord_stragglers DEPENDS dynprofctl)
# A job's rules: fired on a straggler through fake agents, their caps, bad
# rules refused, rules kept across a restart.
dynprof_coord_test(test_coord_rules)
# dynprofctl rule and stragglers against the real coordinator.
add_test(NAME test_ctl_rule
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_ctl_rule.sh)
set_tests_properties(test_ctl_rule PROPERTIES TIMEOUT 60
  ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}")
# Legacy jobs (docs/legacy.md): a node's reports in the job's status, and
# observed events taken only from a node serving the job as legacy.
dynprof_coord_test(test_coord_legacy DEPENDS dynprofctl)
# The status page in headless Chromium (scripts/deps.sh, "test"): the real
# coordinator with fake agents; the rendered DOM checked, a screenshot kept
# in tests/artefacts/.
dynprof_coord_test(test_ui_browser TIMEOUT 300)
