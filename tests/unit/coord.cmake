# Unit tests of the coordinator's model and store: they link dpcoord, start
# no daemon, and keep their state in a temporary directory.
dynprof_test(test_schedule SOURCES unit/test_schedule.c support/unit_util.c
  LIBS dpcoord TIMEOUT 60)
dynprof_test(test_store SOURCES unit/test_store.c support/unit_util.c
  LIBS dpcoord TIMEOUT 60)
