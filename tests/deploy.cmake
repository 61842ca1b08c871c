# tests of deploy: Kubernetes manifests, systemd units, SLURM scripts, Debian packages.
# Shell scripts (tests/deploy/test_deploy_*.sh); exit code 77 is a skip, with its reason.

function(dynprof_deploy_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS" ${ARGN})
  add_test(NAME ${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/deploy/${name}.sh)
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77
    LABELS "deploy;${T_LABELS}"
    ENVIRONMENT "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR};DYNPROF_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# npm ci (once per build tree) may fetch the pinned packages: a generous timeout.
dynprof_deploy_test(test_deploy_k8s TIMEOUT 420 LABELS k8s)
dynprof_deploy_test(test_deploy_systemd TIMEOUT 120 LABELS systemd)
dynprof_deploy_test(test_deploy_slurm TIMEOUT 120 LABELS slurm)
# Installs the packages into the machine itself (as root): alone, never beside
# another test, and never beside another build tree's run of it (a lock file).
dynprof_deploy_test(test_deploy_deb TIMEOUT 600 LABELS deb)
set_tests_properties(test_deploy_deb PROPERTIES RUN_SERIAL TRUE)
