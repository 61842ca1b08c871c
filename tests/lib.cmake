# tests of the segment and of libdynprof
dynprof_test(test_segment SOURCES unit/test_segment.c LIBS dpcommon TIMEOUT 60)

# The seqlock stress test, and its twin built with the seqlock disabled in the
# writer: the twin must detect torn reads, so the first could fail.
dynprof_test(test_segment_stress SOURCES unit/test_segment_stress.c LIBS dpcommon
  TIMEOUT 60)
dynprof_test(test_segment_stress_noseqlock
  SOURCES unit/test_segment_stress.c ${PROJECT_SOURCE_DIR}/common/segment.c
          ${PROJECT_SOURCE_DIR}/common/segment_slot.c
          ${PROJECT_SOURCE_DIR}/common/segment_dir.c
          ${PROJECT_SOURCE_DIR}/common/procmaps.c
          ${PROJECT_SOURCE_DIR}/common/slotlog.c
          ${PROJECT_SOURCE_DIR}/common/jobid.c
          ${PROJECT_SOURCE_DIR}/common/clock.c
  TIMEOUT 60)
target_compile_definitions(test_segment_stress_noseqlock PRIVATE
  SEGMENT_TEST_NO_SEQLOCK)
# Four processes spinning for seconds: they would starve whatever ran beside
# them (a timing-sensitive test) on a 2-core machine.  Each holds 4 of
# CTest's -j slots (all of them under make test's -j2: alone).
set_tests_properties(test_segment_stress test_segment_stress_noseqlock
  PROPERTIES PROCESSORS 4)
target_include_directories(test_segment_stress_noseqlock PRIVATE
  ${PROJECT_SOURCE_DIR}/common ${PROJECT_SOURCE_DIR}/lib/include)

# The window rules through the real library and a real segment, and what the
# library's handle does around them.
dynprof_test(test_lib_window SOURCES unit/test_lib_window.c
  support/libfixture.c LIBS dynprof_internal TIMEOUT 60)
dynprof_test(test_lib_handle SOURCES unit/test_lib_handle.c
  support/libfixture.c LIBS dynprof_internal TIMEOUT 60)
# Time windows: polled, and turned into steps by a stepping rank.
dynprof_test(test_lib_timewin SOURCES unit/test_lib_timewin.c
  support/libfixture.c LIBS dynprof_internal TIMEOUT 60)

# "The library never aborts, exits or prints": the public API, linked as a
# training process links it, with bad input, no agent, directories it cannot
# write, garbage segments and environment, in children whose output is kept.
dynprof_test(test_lib_silent SOURCES component/test_lib_silent.c LIBS dynprof
  TIMEOUT 60)

# Events on a real unix datagram socket, decoded with protobuf-c.
dynprof_test(test_lib_events SOURCES component/test_lib_events.c
  LIBS dynprof_internal dpproto_c TIMEOUT 60)

# nanopb and protobuf-c agree on every RankEvent field, both ways.
dynprof_test(test_codec SOURCES unit/test_codec.c LIBS dpproto_nanopb dpproto_c)

# The daemons' TLS contexts (common/tls.c): load, reload, the node name check,
# with deploy/tls/mkcerts.sh's certificates and handshakes in memory.
dynprof_test(test_tls SOURCES unit/test_tls.c LIBS dptls TIMEOUT 60)

# The public header alone, strictly, linked against the shared library.
add_executable(test_header unit/test_header.c)
target_link_libraries(test_header PRIVATE dynprof)
target_compile_options(test_header PRIVATE -std=c99 -pedantic -Wall -Wextra
  -Werror)
add_test(NAME test_header COMMAND test_header)

# Only the public API leaves libdynprof.so.
add_test(NAME test_lib_exports COMMAND sh
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_lib_exports.sh $<TARGET_FILE:dynprof>
  ${PROJECT_SOURCE_DIR}/lib/include/dynprof.h)

# cmake --install into a temporary prefix, then a program built with pkg-config.
if(DYNPROF_SANITIZE)
  set(_install_cflags "-fsanitize=address,undefined")
else()
  set(_install_cflags "")
endif()
add_test(NAME test_install COMMAND sh
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/test_install.sh ${PROJECT_BINARY_DIR}
  ${CMAKE_C_COMPILER} "${_install_cflags}")
set_tests_properties(test_install PROPERTIES TIMEOUT 120)

# The benchmark binary runs, follows the steps (it checks), and its hot loop
# makes no system call (counted with strace).
add_test(NAME test_lib_step_cost COMMAND step_cost -n 200000 -r 3)
add_test(NAME test_lib_syscalls COMMAND sh
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_lib_syscalls.sh $<TARGET_FILE:step_cost>)
set_tests_properties(test_lib_syscalls PROPERTIES SKIP_RETURN_CODE 77
  TIMEOUT 60)

# The window rules checked in every callback under random schedules.
dynprof_test(test_lib_rules_random SOURCES unit/test_lib_rules_random.c
  LIBS dynprof_internal TIMEOUT 60)

# The event log of a rank slot, in a real segment.
dynprof_test(test_slotlog SOURCES unit/test_slotlog.c LIBS dynprof_internal
  TIMEOUT 60)
