# tests of the segment and of libdynprof
dynprof_test(test_segment SOURCES test_segment.c LIBS dpcommon TIMEOUT 60)

# The seqlock stress test, and its twin built with the seqlock disabled in the
# writer: the twin must detect torn reads, so the first could fail.
dynprof_test(test_segment_stress SOURCES test_segment_stress.c LIBS dpcommon
  TIMEOUT 60)
dynprof_test(test_segment_stress_noseqlock
  SOURCES test_segment_stress.c ${PROJECT_SOURCE_DIR}/common/segment.c
          ${PROJECT_SOURCE_DIR}/common/jobid.c
  TIMEOUT 60)
target_compile_definitions(test_segment_stress_noseqlock PRIVATE
  SEGMENT_TEST_NO_SEQLOCK)
target_include_directories(test_segment_stress_noseqlock PRIVATE
  ${PROJECT_SOURCE_DIR}/common ${PROJECT_SOURCE_DIR}/lib/include)

# The window rules through the real library and a real segment.
dynprof_test(test_lib_window SOURCES test_lib_window.c LIBS dynprof_internal
  TIMEOUT 60)
