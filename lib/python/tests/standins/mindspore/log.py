"""mindspore.log stand-in (MindSpore 2.4's dynamic_profiler.py logs through it)."""
import logging

_log = logging.getLogger("mindspore")
debug = _log.debug
info = _log.info
warning = _log.warning
error = _log.error
