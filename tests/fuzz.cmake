# Fuzz targets: every decoder of outside bytes (tests/fuzz/README.md).
#
# Each tests/fuzz/fuzz_<target>.c defines LLVMFuzzerTestOneInput().
#   default          linked with tests/fuzz/driver.c and registered as the CTest
#                    test fuzz_<target>: its corpus plus 2000 fixed mutations
#   -DDYNPROF_FUZZ=ON (clang) linked with libFuzzer, ASan and UBSan, and the code
#                    under test compiled into the target with coverage
#                    instrumentation; no tests are registered
#
# The targets link the daemons' libraries (dpagent, dpcoord: everything but
# main()); with DYNPROF_FUZZ the code under test is compiled into the targets,
# instrumented.
option(DYNPROF_FUZZ "Build the fuzz targets with libFuzzer (clang only)" OFF)

set(FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(FUZZ_COMMON_SRC frame.c log.c segment.c segment_slot.c slotlog.c jobid.c
  ranklist.c options.c nodename.c utf8.c labels.c tracesum.c)
list(TRANSFORM FUZZ_COMMON_SRC PREPEND ${PROJECT_SOURCE_DIR}/common/)
set(FUZZ_COORD_SRC "")
if(DYNPROF_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DYNPROF_FUZZ needs clang: CC=clang cmake ...")
  endif()
  if(DYNPROF_SANITIZE)
    message(FATAL_ERROR "DYNPROF_FUZZ brings its own sanitizers: "
      "leave DYNPROF_SANITIZE off")
  endif()
  # Coverage for the code under test: build it here, instrumented.
  set(FUZZ_AGENT_SRC agent.c apply.c queue.c upstream.c ranks.c segments.c
    events.c standalone.c trace_steps.c)
  list(TRANSFORM FUZZ_AGENT_SRC PREPEND ${PROJECT_SOURCE_DIR}/agent/)
  set(FUZZ_COORD_SRC coord.c link.c link_dispatch.c schedule.c
    schedule_ranks.c change.c load.c options.c store.c http.c http_jobs.c metrics.c
    store_row.c store_etcd_batch.c valid.c nodeview.c viewrows.c stragview.c legacyview.c
    straggler.c legacy.c)
  set(FUZZ_CFLAGS -fsanitize=fuzzer-no-link,address,undefined
    -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
else()
  set(FUZZ_COMMON_SRC "")
  set(FUZZ_CFLAGS "")
endif()
list(TRANSFORM FUZZ_COORD_SRC PREPEND ${PROJECT_SOURCE_DIR}/server/)

if(DYNPROF_FUZZ)
  add_library(fuzz_agent_objs OBJECT ${FUZZ_AGENT_SRC} ${FUZZ_COMMON_SRC})
  target_link_libraries(fuzz_agent_objs PUBLIC dpagent)
  target_compile_options(fuzz_agent_objs PRIVATE ${FUZZ_CFLAGS})
  add_library(fuzz_coord_objs OBJECT ${FUZZ_COORD_SRC} ${FUZZ_COMMON_SRC})
  target_link_libraries(fuzz_coord_objs PUBLIC dpcoord)
  target_compile_options(fuzz_coord_objs PRIVATE ${FUZZ_CFLAGS})
else()
  add_library(fuzz_agent_objs INTERFACE)
  target_link_libraries(fuzz_agent_objs INTERFACE dpagent)
  add_library(fuzz_coord_objs INTERFACE)
  target_link_libraries(fuzz_coord_objs INTERFACE dpcoord)
endif()
add_library(fuzz_lib_objs OBJECT ${PROJECT_SOURCE_DIR}/lib/window.c
  ${FUZZ_COMMON_SRC})
target_include_directories(fuzz_lib_objs PUBLIC ${PROJECT_SOURCE_DIR}/lib
  ${PROJECT_SOURCE_DIR}/lib/include)
target_link_libraries(fuzz_lib_objs PUBLIC dpdaemon)
# The whole library, for the step functions over a live segment.
if(DYNPROF_FUZZ)
  find_package(Threads REQUIRED)
  set(FUZZ_DYNPROF_SRC handle.c step.c window.c report.c output.c)
  list(TRANSFORM FUZZ_DYNPROF_SRC PREPEND ${PROJECT_SOURCE_DIR}/lib/)
  add_library(fuzz_dynprof_objs OBJECT ${FUZZ_DYNPROF_SRC})
  target_include_directories(fuzz_dynprof_objs PUBLIC
    ${PROJECT_SOURCE_DIR}/lib ${PROJECT_SOURCE_DIR}/lib/include)
  target_link_libraries(fuzz_dynprof_objs PUBLIC dpcommon dpproto_nanopb
    Threads::Threads)
  target_compile_options(fuzz_dynprof_objs PRIVATE ${FUZZ_CFLAGS})
else()
  add_library(fuzz_dynprof_objs INTERFACE)
  target_link_libraries(fuzz_dynprof_objs INTERFACE dynprof_internal)
endif()
foreach(objs fuzz_lib_objs)
  target_compile_options(${objs} PRIVATE ${FUZZ_CFLAGS})
endforeach()

# dynprof_fuzz(TARGET OBJS [SOURCES...]): builds fuzz_TARGET from
# fuzz/fuzz_TARGET.c and the extra sources.
function(dynprof_fuzz target objs)
  set(name fuzz_${target})
  if(DYNPROF_FUZZ)
    add_executable(${name} ${FUZZ_DIR}/${name}.c ${ARGN})
    target_compile_options(${name} PRIVATE
      -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    add_executable(${name} ${FUZZ_DIR}/${name}.c ${FUZZ_DIR}/driver.c ${ARGN})
    add_test(NAME ${name} COMMAND ${name} ${FUZZ_DIR}/corpus/${target} 2000)
    set_tests_properties(${name} PROPERTIES TIMEOUT 60 LABELS fuzz)
  endif()
  target_link_libraries(${name} PRIVATE ${objs})
endfunction()

dynprof_fuzz(frames fuzz_agent_objs)
dynprof_fuzz(ranks fuzz_agent_objs)
dynprof_fuzz(segment fuzz_lib_objs)
dynprof_fuzz(admin fuzz_coord_objs)
dynprof_fuzz(store_row fuzz_coord_objs)
dynprof_fuzz(evbatch fuzz_coord_objs)
dynprof_fuzz(nodeview fuzz_coord_objs)
dynprof_fuzz(viewrows fuzz_coord_objs)
dynprof_fuzz(labels fuzz_agent_objs)
dynprof_fuzz(trace_steps fuzz_agent_objs)
dynprof_fuzz(standalone fuzz_agent_objs ${FUZZ_DIR}/fuzzdir.c)
dynprof_fuzz(coord_dispatch fuzz_coord_objs ${FUZZ_DIR}/fuzz_coord.c
  ${FUZZ_DIR}/fuzzdir.c)
dynprof_fuzz(legacy_status fuzz_coord_objs ${FUZZ_DIR}/fuzz_coord.c
  ${FUZZ_DIR}/fuzzdir.c)
if(NOT DYNPROF_FUZZ)
  # A live coordinator answering two admin requests per input: some 25 s
  # under sanitizers.
  set_tests_properties(fuzz_coord_dispatch fuzz_legacy_status PROPERTIES
    TIMEOUT 180)
endif()
dynprof_fuzz(agent_dispatch fuzz_agent_objs ${FUZZ_DIR}/fuzzdir.c)
dynprof_fuzz(segment_live "fuzz_agent_objs;fuzz_dynprof_objs"
  ${FUZZ_DIR}/fuzzdir.c)
