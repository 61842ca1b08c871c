# End-to-end: the benchmark tools and the cluster tests (tests/e2e/), which run the
# real coordinator, agents and dynprof-train-sim ranks on loopback (and in network
# namespaces), each test under its own temporary directory with its own ports.
include(${PROJECT_SOURCE_DIR}/bench/loadgen.cmake)

set(E2E_PYTHON /usr/bin/python3)
# Some ranks run in Python (tests/support/py_rank.py over lib/python).  In a
# sanitizer build the library needs its runtimes loaded first in an interpreter
# built without them, as tests/python.cmake does; support/cluster.py preloads
# them into the Python ranks only.
set(_e2e_env "DYNPROF_BUILD_DIR=${PROJECT_BINARY_DIR}" "PYTHONDONTWRITEBYTECODE=1")
if(DYNPROF_SANITIZE)
  list(APPEND _e2e_env "DYNPROF_E2E_PY_PRELOAD=${DYNPROF_SAN_RUNTIMES}")
endif()
# dynprof_e2e(NAME SCRIPT [ARGS A...] [TIMEOUT S] [LABELS L...] [ENV VAR=V...]):
# tests/e2e/SCRIPT under E2E_PYTHON with ARGS, the environment _e2e_env and ENV,
# TIMEOUT (default 240 s); an exit of 77 is a skip.
function(dynprof_e2e name script)
  cmake_parse_arguments(E "" "TIMEOUT" "ARGS;ENV;LABELS" ${ARGN})
  add_test(NAME ${name}
    COMMAND ${E2E_PYTHON} ${PROJECT_SOURCE_DIR}/tests/e2e/${script} ${E_ARGS})
  dynprof_timeout(${name} "${E_TIMEOUT}" 240)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "${_e2e_env};${E_ENV}")
  if(E_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${E_LABELS}")
  endif()
endfunction()

if(TARGET dynprof-coordinator AND TARGET dynprof-agent AND TARGET dynprof-train-sim)
  foreach(t alignment targeting late_join faults noblock netns pidns squat eventlog tls
      lost_node legacy_dialects legacy_ms24 legacy_missed stragglers collect collect_off collect_own collect_restart labels labels_late forget forget_away left unserved feed_restart new_run timewin legacy_timewin)
    dynprof_e2e(e2e_${t} test_${t}.py)
  endforeach()
  # A rank's slot forging windows nobody made, as another uid: skipped
  # unless root.
  dynprof_e2e(e2e_collect_forged test_collect_forged.py)
  # --trace-upload against a real S3-compatible server (s3rver from npm, its
  # packages installed once per build tree: a longer timeout the first time).
  dynprof_e2e(e2e_upload test_upload.py TIMEOUT 360)
  # Multipart upload against s3rver (5 MiB parts).
  dynprof_e2e(e2e_upload_multipart test_upload_multipart.py TIMEOUT 360)
  # A job's own s3:// store through --trace-upload's endpoint.
  dynprof_e2e(e2e_upload_own test_upload_own.py TIMEOUT 300)
  # A hung, a refusing and a full store (a tmpfs: root only).
  dynprof_e2e(e2e_upload_fail test_upload_fail.py TIMEOUT 420)
  # The status page clicked in Debian's chromium by playwright-core (npm,
  # installed once per build tree: a longer timeout the first time).
  dynprof_e2e(e2e_ui_click test_ui_click.py TIMEOUT 600
    ENV "DYNPROF_OPTIONS_TABLE=$<TARGET_FILE:options_table>")
  # A legacy job's refused time window over etcd, restarted on its rows.
  dynprof_e2e(e2e_legacy_timewin_etcd test_legacy_timewin.py ARGS etcd)
  # A hostile second uid and a root agent's --legacy-dir: skipped unless root.
  foreach(t swap budget flood)
    dynprof_e2e(e2e_legacy_hostile_${t} test_legacy_hostile.py ARGS ${t})
  endforeach()
  # The straggler synchronous training hides (tests/e2e/test_busy.py): real
  # torch DDP over gloo, four ranks on four agents, found by busy time.
  # It measures busy times, which sanitizers distort (the interpreter and
  # torch run with their runtimes preloaded).
  dynprof_e2e(e2e_busy test_busy.py TIMEOUT 420 LABELS torch nosan)
  # Three real torch ranks, one slowed, compared from their collected traces
  # (tests/e2e/test_compare.py): step times, the slowest and its offset.
  dynprof_e2e(e2e_compare test_compare.py TIMEOUT 300 LABELS torch)
  # Three real torch DDP ranks over gloo, one slowed: every step as long,
  # the straggler named by its compute (tests/e2e/test_compare_sync.py).
  dynprof_e2e(e2e_compare_sync test_compare_sync.py TIMEOUT 300 LABELS torch)
  # make demo's cluster, as a newcomer runs it: it must keep working.
  add_test(NAME e2e_demo
    COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/demo.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(e2e_demo PROPERTIES TIMEOUT 120)
  # MindSpore's shared memory is named after the hour, the node's: alone.
  set_tests_properties(e2e_legacy_ms24 PROPERTIES RUN_SERIAL TRUE)
  # It measures steps per second, which sanitizers distort.
  set_tests_properties(e2e_noblock PROPERTIES LABELS nosan)
  # Coordinators over etcd (tests/e2e/test_etcd.py): each scenario starts its
  # own etcd members on loopback (tests/support/etcd.py) and stops them.
  foreach(t redirect failover notleader burst stream replica reads readsum copy unscheduled takeover heldhello sigstop etcdstop quorum flags tls ctl compact forget compare)
    add_test(NAME e2e_etcd_${t}
      COMMAND ${E2E_PYTHON} ${PROJECT_SOURCE_DIR}/tests/e2e/test_etcd.py ${t})
    set_tests_properties(e2e_etcd_${t} PROPERTIES TIMEOUT 240
      ENVIRONMENT "${_e2e_env}")
  endforeach()
  # Real torch DDP ranks: labelled as the other torch tests.
  set_tests_properties(e2e_etcd_compare PROPERTIES LABELS torch)
  # Bad rows written straight into the store (SQLite with sqlite3, etcd
  # through its JSON gateway), then the coordinator started on it.
  foreach(t sqlite etcd)
    add_test(NAME e2e_rows_${t}
      COMMAND ${E2E_PYTHON} ${PROJECT_SOURCE_DIR}/tests/e2e/test_rows.py ${t})
    set_tests_properties(e2e_rows_${t} PROPERTIES TIMEOUT 120
      ENVIRONMENT "${_e2e_env}")
  endforeach()
  # Faults at random instants (tests/e2e/test_chaos.py): a new seed each run,
  # printed; DYNPROF_CHAOS_SEED=N in the environment replays one.  Under 90 s,
  # also under sanitizers (which loosen only its RSS bound).
  dynprof_e2e(e2e_chaos test_chaos.py LABELS chaos)
endif()
