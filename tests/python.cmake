# tests of python: the binding's pytest suites (lib/python/tests), run with
# Debian's interpreter (/usr/bin/python3, where python3-pytest and
# python3-torch install) against the library of this build.
#
#   python_binding    Monitor over real segments and a real event socket
#   python_steps      how the PyTorch hook counts optimizer steps (no torch)
#   python_mindspore  the MindSpore drop-in against recording stand-ins
#   python_torch      the PyTorch hook with real torch (only when installed:
#                     scripts/deps.sh with DEPS_EXTRA=torch); label "torch"
#   python_agent      the MindSpore workflow with the real dynprof-agent in
#                     standalone mode (and the torch hook, when torch is there)
#   python_ms24       parity with MindSpore 2.4's own monitor (the reference
#                     source beside the tree, ../shared/reference): same edits
#                     of profiler_config.json, same Profiler calls at the same
#                     steps; skipped when the reference is not there
#   python_install    pip install of lib/python into a private directory, and
#                     cmake --install of this build into a private prefix

find_program(DYNPROF_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(DYNPROF_PYTHON NAMES python3)
if(NOT DYNPROF_PYTHON)
  message(STATUS "python tests: no python3, skipped")
  return()
endif()
execute_process(COMMAND ${DYNPROF_PYTHON} -c "import pytest"
  RESULT_VARIABLE _dp_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT _dp_rc EQUAL 0)
  message(STATUS "python tests: ${DYNPROF_PYTHON} has no pytest, skipped")
  return()
endif()
execute_process(COMMAND ${DYNPROF_PYTHON} -c
  "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
  RESULT_VARIABLE _dp_torch OUTPUT_QUIET ERROR_QUIET)

set(_dp_pyenv
  "DYNPROF_LIBRARY=$<TARGET_FILE:dynprof>"
  "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}"
  "DYNPROF_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "PYTHONDONTWRITEBYTECODE=1")
if(DYNPROF_SANITIZE)
  # An ASan-built library in an interpreter that is not: its runtime must be
  # loaded first.  Python's own allocations are not ours to leak-check.
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
    OUTPUT_VARIABLE _dp_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
    OUTPUT_VARIABLE _dp_ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND _dp_pyenv "LD_PRELOAD=${_dp_asan}:${_dp_ubsan}"
    "ASAN_OPTIONS=detect_leaks=0")
endif()

set(_dp_pytests ${PROJECT_SOURCE_DIR}/lib/python/tests)
function(dynprof_pytest name file)
  add_test(NAME ${name}
    COMMAND ${DYNPROF_PYTHON} -m pytest -q -p no:cacheprovider
      ${_dp_pytests}/${file}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES TIMEOUT 180
    ENVIRONMENT "${_dp_pyenv}" LABELS "python;${ARGN}")
endfunction()

dynprof_pytest(python_binding test_monitor.py)
dynprof_pytest(python_steps test_torch_optim.py)
dynprof_pytest(python_mindspore test_mindspore.py)
if(_dp_torch EQUAL 0)
  dynprof_pytest(python_torch test_torch.py torch)
else()
  message(STATUS "python tests: no torch for ${DYNPROF_PYTHON}, python_torch "
    "skipped (scripts/deps.sh with DEPS_EXTRA=torch installs it)")
endif()
dynprof_pytest(python_agent test_agent.py)
dynprof_pytest(python_ms24 test_ms24_parity.py)
dynprof_pytest(python_install test_install.py)
