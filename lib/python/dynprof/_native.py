"""ctypes declarations of libdynprof's public API (lib/include/dynprof.h).

Standard library only: nothing is compiled for Python.  The library is looked up,
in this order, at the path in $DYNPROF_LIBRARY, next to this package (libdynprof.so.0
copied beside it), in the library directory of the cmake --install that put the
package here (_install.py), under the package's install prefix, then as the
system's (ctypes.util.find_library, "libdynprof.so.0").
"""

import ctypes
import ctypes.util
import enum
import os

# Error codes (enum dynprof_error).
OK = 0
EINVAL = -1
EJOB = -2
ESYS = -3
EMAGIC = -4
EVERSION = -5
ESIZE = -6
ENOSLOT = -7
ENOENT = -8
ETORN = -9
EPATH = -10
ENOMEM = -11
EOWNER = -12


class StopReason(enum.IntEnum):
    """Why a window stopped (enum dynprof_stop_reason)."""
    COMPLETED = 1
    CANCELLED = 2
    CLOSED = 3


class RankState(enum.IntEnum):
    """A rank's state (enum dynprof_rank_state)."""
    ATTACHED = 1
    ARMED = 2
    PROFILING = 3
    DONE = 4
    SKIPPED = 5
    FAILED = 6


# enum dynprof_log_level
LOG_ERROR = 0
LOG_WARNING = 1
LOG_INFO = 2
LOG_DEBUG = 3

PARAMS_VERSION = 2
INT64_MAX = (1 << 63) - 1


# The typed profiler options, a mirror of common/options.h's table (which
# tests/unit/test_options_python.py compares it with), in its order: name (the
# field of struct dynprof_options), type (int or bool), min, max, default,
# MindSpore 2.4's key, the names of the values 0.. (or None).  Other keys of a
# window's options are framework options.
OPTIONS = (
    ("aicore_metrics", int, -1, 5, -1, "aicore_metrics", None),
    ("profiler_level", int, -1, 2, -1, "profiler_level",
     ("Level0", "Level1", "Level2")),
    ("profile_framework", int, -1, 1, -1, "profile_framework",
     ("time", "all")),
    ("analyse_mode", int, -1, 1, -1, "analyse_mode", ("sync", "async")),
    ("profile_communication", bool, 0, 1, 0, "profile_communication", None),
    ("parallel_strategy", bool, 0, 1, 0, "parallel_strategy", None),
    ("with_stack", bool, 0, 1, 0, "with_stack", None),
    ("data_simplification", bool, 0, 1, 1, "data_simplification", None),
)


class Options(ctypes.Structure):
    """struct dynprof_options: an int per row of OPTIONS"""
    _fields_ = [(row[0], ctypes.c_int) for row in OPTIONS]


class Window(ctypes.Structure):
    """struct dynprof_window"""
    _fields_ = [
        ("id", ctypes.c_uint32),
        ("start_step", ctypes.c_int64),
        ("stop_step", ctypes.c_int64),
    ]


# enum dynprof_window_kind
WINDOW_STEPS = 1
WINDOW_TIME = 2

WINDOW_INFO_VERSION = 1


class WindowInfo(ctypes.Structure):
    """struct dynprof_window_info (version 1)"""
    _fields_ = [
        ("version", ctypes.c_uint),
        ("id", ctypes.c_uint32),
        ("kind", ctypes.c_int),
        ("start_step", ctypes.c_int64),
        ("stop_step", ctypes.c_int64),
        ("start_unix_ns", ctypes.c_int64),
        ("start_ns", ctypes.c_int64),
        ("duration_ns", ctypes.c_int64),
    ]


class Stats(ctypes.Structure):
    """struct dynprof_stats"""
    _fields_ = [
        ("events_sent", ctypes.c_uint64),
        ("events_dropped", ctypes.c_uint64),
        ("config_reads", ctypes.c_uint64),
        ("torn_reads", ctypes.c_uint64),
    ]


class FastState(ctypes.Structure):
    """struct dynprof_fast_state"""
    _fields_ = [
        ("seq_addr", ctypes.c_size_t),
        ("seq_seen", ctypes.c_uint32),
        ("step_addr", ctypes.c_size_t),
        ("next_due", ctypes.c_int64),
    ]


START_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
    ctypes.POINTER(Window), ctypes.POINTER(Options), ctypes.c_char_p,
    ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
STOP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
    ctypes.POINTER(Window), ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
    ctypes.c_size_t)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class Params(ctypes.Structure):
    """struct dynprof_params"""
    _fields_ = [
        ("version", ctypes.c_uint),
        ("job", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("output_root", ctypes.c_char_p),
        ("shm_dir", ctypes.c_char_p),
        ("agent_socket", ctypes.c_char_p),
        ("shm_mode", ctypes.c_int),
        ("on_start", START_FN),
        ("on_stop", STOP_FN),
        ("on_log", LOG_FN),
        ("arg", ctypes.c_void_p),
        ("labels", ctypes.c_char_p),
    ]


def _candidates():
    env = os.environ.get("DYNPROF_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libdynprof.so.0", "libdynprof.so"):
        yield os.path.join(here, name)
    try:                        # installed by cmake --install
        from . import _install
        yield os.path.normpath(os.path.join(here, _install.LIBDIR,
                                            "libdynprof.so.0"))
    except ImportError:
        pass
    # An install prefix: PREFIX/lib/python3/dist-packages/dynprof -> PREFIX/lib*.
    prefix = os.path.abspath(os.path.join(here, "..", "..", "..", ".."))
    for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu",
                   "lib/aarch64-linux-gnu"):
        yield os.path.join(prefix, libdir, "libdynprof.so.0")
    found = ctypes.util.find_library("dynprof")
    if found:
        yield found
    yield "libdynprof.so.0"


def _declare(lib):
    """Sets the prototypes of every function the binding calls."""
    p = ctypes.POINTER
    h = ctypes.c_void_p
    decl = (
        ("dynprof_params_init", None, [p(Params)]),
        ("dynprof_open", ctypes.c_int, [p(Params), p(h)]),
        ("dynprof_close", None, [h]),
        ("dynprof_step_begin", ctypes.c_int, [h, ctypes.c_int64]),
        ("dynprof_step_end", ctypes.c_int, [h, ctypes.c_int64]),
        ("dynprof_step", ctypes.c_int, [h]),
        ("dynprof_poll", ctypes.c_int, [h]),
        ("dynprof_state", ctypes.c_int, [h]),
        ("dynprof_job", ctypes.c_char_p, [h]),
        ("dynprof_rank", ctypes.c_int, [h]),
        ("dynprof_current_step", ctypes.c_int64, [h]),
        ("dynprof_active_window", ctypes.c_int, [h, p(Window)]),
        ("dynprof_window_info", ctypes.c_int,
         [h, ctypes.c_uint32, p(WindowInfo)]),
        ("dynprof_get_stats", None, [h, p(Stats)]),
        ("dynprof_report_failure", ctypes.c_int, [h, ctypes.c_char_p]),
        ("dynprof_strerror", ctypes.c_char_p, [ctypes.c_int]),
        ("dynprof_version", ctypes.c_char_p, []),
        ("dynprof_get_fast_state", None, [h, p(FastState)]),
        ("dynprof_mark_comm", ctypes.c_int, [h]),
        ("dynprof_get_busy_begin_addr", ctypes.c_size_t, [h]),
    )
    for name, restype, argtypes in decl:
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


_lib = None
_lib_error = None


def load():
    """Returns the loaded library; raises OSError naming every place tried."""
    global _lib, _lib_error
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (absent)" % path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        try:
            _lib = _declare(lib)
        except AttributeError as e:
            tried.append("%s (not libdynprof: %s)" % (path, e))
            continue
        return _lib
    _lib_error = "libdynprof not found; tried: " + "; ".join(tried)
    raise OSError(_lib_error)


def strerror(code):
    """Names an error code."""
    try:
        s = load().dynprof_strerror(code)
    except OSError:
        s = None
    return s.decode("utf-8", "replace") if s else "error %d" % code


def encode(s):
    """A str, bytes or path-like (or None) -> bytes (or None) for C."""
    if s is None:
        return None
    return os.fsencode(s)


def decode(b):
    """bytes (or None) from C -> str (or None)."""
    if b is None:
        return None
    return os.fsdecode(b)
