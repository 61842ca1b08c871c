# End-to-end: the benchmark tools and the cluster tests (tests/e2e/), which run the
# real coordinator, agents and dynprof-train-sim ranks on loopback.
include(${PROJECT_SOURCE_DIR}/bench/loadgen.cmake)
