# Unit tests of the modules in common/, of the library's pure parts and of the
# agent's event frame: each module's functions called directly, no daemon, no
# segment.
dynprof_test(test_jobid SOURCES unit/test_jobid.c LIBS dpcommon TIMEOUT 30)
dynprof_test(test_addr SOURCES unit/test_addr.c LIBS dpcommon TIMEOUT 30)
dynprof_test(test_failover SOURCES unit/test_failover.c LIBS dpcommon TIMEOUT 30)
dynprof_test(test_log SOURCES unit/test_log.c LIBS dpdaemon TIMEOUT 30)
dynprof_test(test_ranklist SOURCES unit/test_ranklist.c LIBS dpcommon
  TIMEOUT 30)
dynprof_test(test_labels SOURCES unit/test_labels.c LIBS dpcommon TIMEOUT 30)
dynprof_test(test_output SOURCES unit/test_output.c LIBS dynprof_internal
  TIMEOUT 30)
dynprof_test(test_agent_frame SOURCES unit/test_agent_frame.c LIBS dpagent
  TIMEOUT 30)
dynprof_test(test_standalone_read SOURCES unit/test_standalone_read.c
  LIBS dpagent TIMEOUT 30)
