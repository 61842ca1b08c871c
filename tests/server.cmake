# tests of server

# dynprofctl
dynprof_test(test_ctl SOURCES test_ctl.c LIBS dpctl TIMEOUT 30)
