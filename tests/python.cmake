# tests of python: the binding's pytest suites (lib/python/tests), run with
# Debian's interpreter (/usr/bin/python3, where python3-pytest and
# python3-torch install) against the library of this build.
#
#   python_binding    Monitor over real segments and a real event socket
#   python_steps      how the PyTorch hook counts optimizer steps (no torch)
#   python_mindspore  the MindSpore drop-in against recording stand-ins
#   python_torch_ddp  the hook's mark on a real DDP model, with and without a
#                     communication hook of its owner's (real torch)
#   python_torch      the PyTorch hook with real torch (scripts/deps.sh,
#                     DEPS_EXTRA=torch, which make test installs); label "torch"
#   python_agent      the MindSpore workflow with the real dynprof-agent in
#                     standalone mode, and the torch hook
#   python_ms24       parity with MindSpore 2.4's own monitor (the reference
#                     source beside the tree, ../shared/reference): same edits
#                     of profiler_config.json, same Profiler calls at the same
#                     steps; skipped (77) when the reference is not there
#   python_example_torch  README's "Profile your own job" with real torch:
#                     examples/torch_ddp.py, two DDP ranks over gloo, under
#                     a real coordinator and agent; four ranks, nobody
#                     slowed, flag no straggler; label "torch"; and
#                     examples/mindspore_train.py with the MindSpore stand-ins
#   python_install    pip install of lib/python into a private directory, and
#                     cmake --install of this build into a private prefix
#
# Every suite is registered whatever this machine had at configure time (a
# build configured by make demo, before make test installs pytest and torch,
# is not configured again): a tool missing when the test runs is a failure.
# The plugin tests/support/ctest_pytest.py makes a skip a failure too, but for
# the reasons a suite names in DYNPROF_PYTEST_MAY_SKIP, which exit 77 (shown
# as skipped).

find_program(DYNPROF_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT DYNPROF_PYTHON)
  set(DYNPROF_PYTHON /usr/bin/python3)
endif()

set(_dp_pyenv
  "DYNPROF_LIBRARY=$<TARGET_FILE:dynprof>"
  "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}"
  "DYNPROF_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "PYTHONPATH=${PROJECT_SOURCE_DIR}/tests/support"
  "PYTHONDONTWRITEBYTECODE=1")
if(DYNPROF_SANITIZE)
  # An ASan-built library in an interpreter that is not: its runtime must be
  # loaded first.  Python's own allocations are not ours to leak-check.
  list(APPEND _dp_pyenv "LD_PRELOAD=${DYNPROF_SAN_RUNTIMES}"
    "ASAN_OPTIONS=detect_leaks=0")
endif()

set(_dp_pytests ${PROJECT_SOURCE_DIR}/lib/python/tests)
# dynprof_pytest(NAME FILE [MAY_SKIP REGEX] [TIMEOUT S] [LABELS ...])
function(dynprof_pytest name file)
  cmake_parse_arguments(P "" "MAY_SKIP;TIMEOUT" "LABELS" ${ARGN})
  add_test(NAME ${name}
    COMMAND ${DYNPROF_PYTHON} -m pytest -q -p no:cacheprovider -p ctest_pytest
      ${_dp_pytests}/${file}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set(_env ${_dp_pyenv})
  if(P_MAY_SKIP)
    list(APPEND _env "DYNPROF_PYTEST_MAY_SKIP=${P_MAY_SKIP}")
  endif()
  dynprof_timeout(${name} "${P_TIMEOUT}" 180)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "${_env}" LABELS "python;${P_LABELS}")
endfunction()

dynprof_pytest(python_binding test_monitor.py)
dynprof_pytest(python_steps test_torch_optim.py)
dynprof_pytest(python_mindspore test_mindspore.py)
dynprof_pytest(python_torch test_torch.py LABELS torch)
dynprof_pytest(python_torch_ddp test_torch_ddp.py LABELS torch)
dynprof_pytest(python_agent test_agent.py)
dynprof_pytest(python_ms24 test_ms24_parity.py
  MAY_SKIP "no MindSpore 2.4 reference")
dynprof_pytest(python_install test_install.py)
# Not again under the sanitizers (nosan): it runs alone (below), 50 s, and what
# it drives (the daemons' straggler judgement, the library in torch) the
# sanitized pass covers in test_coord_stragglers, python_torch* and e2e_compare*.
dynprof_pytest(python_example_torch test_example_torch.py TIMEOUT 360
  LABELS torch nosan)
# Four torch ranks whose steps must stay balanced (nobody flagged a straggler):
# a test beside them on a 2-core machine slows one rank at random and makes it
# one.  Two of CTest's -j slots (all of them under make test's -j2: alone).
set_tests_properties(python_example_torch PROPERTIES PROCESSORS 2)
