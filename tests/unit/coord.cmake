# Unit tests of the coordinator's model and store: they link dpcoord, start
# no daemon, and keep their state in a temporary directory.
dynprof_test(test_schedule SOURCES unit/test_schedule.c support/unit_util.c
  support/fakeagent.c LIBS dpcoord TIMEOUT 60)
dynprof_test(test_store SOURCES unit/test_store.c support/unit_util.c
  LIBS dpcoord TIMEOUT 60)
# The same store tests on a real etcd that tests/support/etcd.py starts on
# loopback (and stops), plus etcd's own: large batches, fencing.
add_test(NAME test_store_etcd COMMAND /usr/bin/python3
  ${PROJECT_SOURCE_DIR}/tests/support/etcd.py -- $<TARGET_FILE:test_store> etcd)
set_tests_properties(test_store_etcd PROPERTIES TIMEOUT 120)
# A store of an older schema, migrated in place.
dynprof_test(test_store_migrate SOURCES unit/test_store_migrate.c
  support/unit_util.c LIBS dpcoord TIMEOUT 60)
# The judgement of busy times (server/busy.c) on busy times recorded from
# real DDP runs.
dynprof_test(test_busy SOURCES unit/test_busy.c LIBS dpcoord TIMEOUT 30)
dynprof_test(test_arrive SOURCES unit/test_arrive.c LIBS dpcoord TIMEOUT 30)
