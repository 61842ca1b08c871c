# tests of the profiler options' table (common/options.c) and the
# coordinator's options (server/options.c, compiled in from its source)
dynprof_test(test_options
  SOURCES unit/test_options.c ${PROJECT_SOURCE_DIR}/server/options.c
  LIBS dptls PkgConfig::JANSSON TIMEOUT 30)
target_include_directories(test_options PRIVATE ${PROJECT_SOURCE_DIR}/server)

# The Python binding's mirror of the table against the C table, as
# options_table prints it (with the library's offsets).
add_executable(options_table unit/options_table.c)
target_link_libraries(options_table PRIVATE dpcommon)
# Registered whatever this machine had at configure time, as tests/python.cmake's
# suites: no pytest when it runs is a failure.
add_test(NAME python_options
  COMMAND ${DYNPROF_PYTHON} -m pytest -q -p no:cacheprovider -p ctest_pytest
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_options_python.py)
set_tests_properties(python_options PROPERTIES TIMEOUT 60 LABELS python
  ENVIRONMENT "DYNPROF_OPTIONS_TABLE=$<TARGET_FILE:options_table>;DYNPROF_SOURCE_DIR=${PROJECT_SOURCE_DIR};DYNPROF_LIBRARY=$<TARGET_FILE:dynprof>;PYTHONPATH=${PROJECT_SOURCE_DIR}/tests/support;PYTHONDONTWRITEBYTECODE=1")
