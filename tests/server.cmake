# tests of server

# dynprofctl
dynprof_test(test_ctl SOURCES test_ctl.c LIBS dpctl TIMEOUT 30)
dynprof_test(test_ctl_local SOURCES test_ctl_local.c
  LIBS dpcommon PkgConfig::JANSSON TIMEOUT 60)
add_dependencies(test_ctl_local dynprofctl)
