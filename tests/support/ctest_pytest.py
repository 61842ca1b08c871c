"""A pytest plugin for the suites CTest runs (tests/python.cmake, -p
ctest_pytest): a skip is never a pass.

What make test installs (pytest, torch, pip, the build's binaries) is always
there in a make test run, so a test skipped for lacking it is a failure: the
run exits 1 and names the skip.  A skip whose reason matches the regular
expression in $DYNPROF_PYTEST_MAY_SKIP (set per suite, for what a machine may
genuinely lack, as the MindSpore 2.4 reference file beside the tree) makes an
otherwise passing run exit 77, CTest's SKIP_RETURN_CODE: shown as skipped,
not as passed.
"""

import os
import re

SKIP = 77


def _reason(report):
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2])
    return str(lr)


def pytest_sessionfinish(session, exitstatus):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = tr.stats.get("skipped", []) if tr is not None else []
    if not skipped or exitstatus not in (0, 5):
        return
    may = os.environ.get("DYNPROF_PYTEST_MAY_SKIP", "")
    bad = [r for r in skipped if not (may and re.search(may, _reason(r)))]
    for r in bad:
        tr.write_line("FAIL: %s skipped in a CTest run (make test installs "
                      "what it needs): %s" % (r.nodeid, _reason(r)))
    if bad:
        session.exitstatus = 1
        return
    for r in skipped:
        tr.write_line("SKIP: %s: %s" % (r.nodeid, _reason(r)))
    session.exitstatus = SKIP
