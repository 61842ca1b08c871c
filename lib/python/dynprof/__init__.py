"""dynprof: start and stop a profiler at the steps a cluster-wide schedule says.

A Python binding over libdynprof (ctypes, standard library only)::

    import dynprof

    def on_start(window, options, framework_options, output_dir):
        ...  # start the profiler, write into output_dir

    def on_stop(window, reason, output_dir):
        ...  # stop it

    with dynprof.Monitor(on_start=on_start, on_stop=on_stop) as mon:
        for batch in data:
            mon.step()          # once at the top of every iteration
            train(batch)

The schedule comes from the node's dynprof-agent through shared memory.  When
nothing changed and no window is due, a step reads two words of that memory and
stores one, in Python, without calling into C.

Frameworks: dynprof.mindspore.DynamicProfilerMonitor (a drop-in for MindSpore
2.4's) and dynprof.torch.profile_steps (drives torch.profiler).
"""

import atexit
import collections
import ctypes
import json
import logging
import os
import threading
import time
import warnings
import weakref

from . import _native
from ._native import RankState, StopReason

__all__ = ["Monitor", "Window", "Options", "StopReason", "RankState",
           "DynprofError", "library_version", "__version__"]

__version__ = "0.1.0"

# The library's messages go to this logger (and dynprof.mindspore,
# dynprof.torch); as any library, nothing is printed unless the application
# configures logging.
log = logging.getLogger("dynprof")
log.addHandler(logging.NullHandler())


class DynprofError(Exception):
    """A libdynprof call failed.  code is the DYNPROF_E* number, or None when the
    library itself could not be loaded."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Window(collections.namedtuple("Window", "id start_step stop_step")):
    """A window: the profiler starts in step_begin(start_step) and stops in
    step_end(stop_step), both inclusive.  A time window (timed true) has both
    steps 0; its start_unix_ns (time.time_ns() on this node's clock),
    start_ns (time.monotonic_ns(), the clock the library acts on) and
    duration_ns say when it runs (0 for a window of steps).  It is still the
    tuple (id, start_step, stop_step)."""

    def __new__(cls, id, start_step, stop_step, start_unix_ns=0, start_ns=0,
                duration_ns=0):
        self = super().__new__(cls, id, start_step, stop_step)
        self.start_unix_ns = start_unix_ns
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        return self

    @property
    def timed(self):
        """True for a time window."""
        return self.duration_ns > 0

    def __repr__(self):
        if not self.timed:
            return super().__repr__()
        return ("Window(id=%d, start_step=%d, stop_step=%d, start_unix_ns=%d,"
                " start_ns=%d, duration_ns=%d)" % (
                    self.id, self.start_step, self.stop_step,
                    self.start_unix_ns, self.start_ns, self.duration_ns))


Options = collections.namedtuple("Options",
                                 [row[0] for row in _native.OPTIONS])
Options.__doc__ = """A window's profiler options, MindSpore's profiler_config.json
fields: the first four are ints (-1 when not set), the others bools."""

_LOG_LEVELS = {
    _native.LOG_ERROR: logging.ERROR,
    _native.LOG_WARNING: logging.WARNING,
    _native.LOG_INFO: logging.INFO,
    _native.LOG_DEBUG: logging.DEBUG,
}


def library_version():
    """libdynprof's version, "MAJOR.MINOR.PATCH"."""
    return _native.decode(_load().dynprof_version())


def _load():
    try:
        return _native.load()
    except OSError as e:
        raise DynprofError(None, str(e)) from None


# Monitors still open.  They are closed when the interpreter exits, before it
# tears modules down, so that on_stop runs while the callbacks' globals are
# still there (the library would otherwise stop them at C exit, with no
# Python left to call).
_open_monitors = weakref.WeakSet()


@atexit.register
def _close_at_exit():
    for m in list(_open_monitors):
        try:
            m.close()
        except BaseException:
            log.debug("closing a monitor at exit", exc_info=True)


# The reasons a Monitor ran without dynprof, each logged once per process.
_warned = set()


def _warn_once(key, msg):
    """Logs msg once per process (per key) on the dynprof logger; where the
    application configured no logging at all, as a RuntimeWarning too, so
    that it is seen."""
    if key in _warned:
        return
    _warned.add(key)
    log.warning("%s", msg)
    if not logging.getLogger().handlers:
        warnings.warn("dynprof: " + msg, RuntimeWarning, stacklevel=4)


def _put_error(err, errlen, msg):
    """Copies msg, NUL-terminated and cut to errlen, into the C buffer err."""
    if not err or errlen <= 0:
        return
    b = msg.encode("utf-8", "replace")[:errlen - 1]
    # Do not leave half a UTF-8 sequence at the cut.
    b = b.decode("utf-8", "ignore").encode("utf-8")
    ctypes.memmove(err, b + b"\0", len(b) + 1)


def _describe(e):
    s = str(e)
    return "%s: %s" % (type(e).__name__, s) if s else type(e).__name__


def _view(addr, size, fmt):
    """A one-element memoryview of the word at addr (fmt "I": uint32_t, "q":
    int64_t).  Indexing a memoryview is the cheapest load and store Python
    has; it stays valid while the memory at addr does."""
    return memoryview((ctypes.c_ubyte * size).from_address(addr)).cast("B") \
        .cast(fmt)


class Monitor:
    """One rank of a job, attached to the job's segment on this node.

    job, rank, output_root: as libdynprof takes them; None means the environment
    (DYNPROF_JOB, SLURM_JOB_ID; RANK, RANK_ID, OMPI_COMM_WORLD_RANK,
    SLURM_PROCID; DYNPROF_OUTPUT_ROOT), else "default", 0, "./dyn_profile_data".
    shm_dir, agent_socket, shm_mode: likewise (DYNPROF_SHM_DIR,
    DYNPROF_AGENT_SOCKET, DYNPROF_SHM_MODE).
    labels: the rank's place in the job, "pp=3,tp=1" or a dict {"pp": 3}
    (None: DYNPROF_LABELS, else none); bad labels fail the open as a bad
    argument does (docs/labels.md).

    on_start(window, options, framework_options, output_dir) starts the profiler:
    window is a Window, options an Options, framework_options the window's
    framework options as a dict, output_dir the directory (already created) to
    write into.  on_stop(window, reason, output_dir) stops it; reason is a
    StopReason.  An exception raised by either never reaches the training loop:
    the library reports the window as failed with the exception's text (and does
    not call on_stop for a window whose start failed).  KeyboardInterrupt and
    SystemExit are reported the same way, then raised again from the step call.

    Steps: either call step() once at the top of every iteration (steps are
    numbered from 1; close() ends the last), or step_begin(n) and step_end(n)
    around step n.  Do not mix the two on one Monitor.  A Monitor belongs to one
    thread at a time.

    fast_path=False calls the library at every step (for comparison and tests);
    the default checks the shared memory in Python and calls the library only
    when the schedule changed or a window is due.

    When the library cannot be loaded or the segment cannot be opened, the
    Monitor fails open, as the C API lets a rank run on: a warning on the
    dynprof logger (once per process and reason), then it is closed from the
    start (its steps do nothing, error says why).  strict=True raises
    DynprofError instead.  Usable as a context manager (close() at exit).
    """

    def __init__(self, job=None, rank=None, on_start=None, on_stop=None,
                 output_root=None, *, shm_dir=None, agent_socket=None,
                 shm_mode=None, fast_path=True, strict=False, labels=None):
        self._h = None
        self._job = job
        self._rank = None if rank is None else int(rank)
        self._pending = None
        self.error = None
        self._shut = self._counted = lambda: 0
        try:
            self._open(job, rank, on_start, on_stop, output_root, shm_dir,
                       agent_socket, shm_mode, fast_path, labels)
        except DynprofError as e:
            if strict:
                raise
            self.error = str(e)
            _warn_once((e.code, str(e) if e.code is None else None),
                       "running without dynprof: %s" % e)

    def _open(self, job, rank, on_start, on_stop, output_root, shm_dir,
              agent_socket, shm_mode, fast_path, labels):
        lib = _load()
        self._lib = lib
        self._on_start = on_start
        self._on_stop = on_stop
        self._fast = bool(fast_path)

        # The C callbacks hold only a weak reference to the Monitor, so that a
        # Monitor dropped without close() is still collected (and closed).
        ref = weakref.ref(self)

        def c_start(arg, wp, op, fwopts, outdir, err, errlen):
            m = ref()
            if m is None:
                return 0
            return m._call_start(wp, op, fwopts, outdir, err, errlen)

        def c_stop(arg, wp, reason, outdir, err, errlen):
            m = ref()
            if m is None:
                return 0
            return m._call_stop(wp, reason, outdir, err, errlen)

        def c_log(arg, level, message):
            try:
                log.log(_LOG_LEVELS.get(level, logging.DEBUG), "%s",
                        _native.decode(message))
            except Exception:           # never raise into C
                pass

        # Kept on the instance: the library calls them until dynprof_close().
        self._c_start = _native.START_FN(c_start)
        self._c_stop = _native.STOP_FN(c_stop)
        self._c_log = _native.LOG_FN(c_log)

        p = _native.Params()
        lib.dynprof_params_init(ctypes.byref(p))
        # Keep the encoded strings alive while dynprof_open() reads them.
        if isinstance(labels, dict):
            labels = ",".join("%s=%s" % kv for kv in labels.items())
        self._strings = [_native.encode(job), _native.encode(output_root),
                         _native.encode(shm_dir), _native.encode(agent_socket),
                         _native.encode(labels)]
        (p.job, p.output_root, p.shm_dir, p.agent_socket,
         p.labels) = self._strings
        if rank is not None:
            p.rank = int(rank)
        if shm_mode is not None:
            p.shm_mode = int(shm_mode)
        p.on_start = self._c_start
        p.on_stop = self._c_stop
        p.on_log = self._c_log
        h = ctypes.c_void_p()
        rc = lib.dynprof_open(ctypes.byref(p), ctypes.byref(h))
        if rc != 0:
            env = "from the environment"
            raise DynprofError(rc, "dynprof_open: %s (job %s, rank %s)" % (
                _native.strerror(rc), env if job is None else repr(job),
                env if rank is None else rank))
        self._h = h
        self._pid = os.getpid()
        self._fs = _native.FastState()
        self._install_steps()
        _open_monitors.add(self)

    # -- the step functions ----------------------------------------------
    #
    # They are closures installed on the instance: the hot path then reads only
    # local cells (no attribute lookups), which is what keeps a step near 0.1 us.

    def _install_steps(self):
        lib = self._lib
        h = self._h
        fs = self._fs
        c_begin = lib.dynprof_step_begin
        c_end = lib.dynprof_step_end
        get_fast = lib.dynprof_get_fast_state
        c_mark = lib.dynprof_mark_comm
        c_poll = lib.dynprof_poll
        get_busy = lib.dynprof_get_busy_begin_addr
        clock = time.monotonic_ns        # CLOCK_MONOTONIC, as the library's
        fs_ref = ctypes.byref(fs)
        this = weakref.ref(self)
        # State of the fast path: the words it reads and writes, and the
        # library's word on when it must be called next.  due = -1 sends every
        # step to the library (fast_path=False, or closed).
        private = (ctypes.c_ubyte * 16)()       # words owned by the closures
        seq = memoryview(private).cast("B")[0:4].cast("I")
        slot_step = memoryview(private).cast("B")[8:16].cast("q")
        dummy = (seq, slot_step)
        count = 0                               # steps counted by step()
        calls = 0                               # slow paths taken
        seen = 0
        due = -1
        fast = self._fast
        open_ = True
        addrs = (0, 0)
        # Once the rank marks its communication: where the fast path stores
        # the clock at each step's beginning (None: nothing to store).
        busy_begin = None

        def refresh():
            nonlocal seq, slot_step, seen, due, addrs, calls, busy_begin
            calls += 1
            if not fast or not open_:
                return
            get_fast(h, fs_ref)
            if (fs.seq_addr, fs.step_addr) != addrs:
                addrs = (fs.seq_addr, fs.step_addr)
                seq = _view(fs.seq_addr, 4, "I")
                slot_step = _view(fs.step_addr, 8, "q")
                if busy_begin is not None:
                    busy_begin = _view(get_busy(h), 8, "q")
            seen = fs.seq_seen
            due = fs.next_due

        def call(fn, n):
            """A step the library must see: the call, then a fresh fast
            state, then any KeyboardInterrupt a callback caught."""
            rc = fn(h, n)
            if rc != 0:
                log.debug("%s(%d): %s", fn.__name__, n, _native.strerror(rc))

        def slow(fn, n):
            if not open_:
                return
            call(fn, n)
            refresh()
            m = this()
            if m is not None and m._pending is not None:
                e, m._pending = m._pending, None
                raise e

        def step_begin(n):
            if seq[0] == seen and n < due:
                slot_step[0] = n
                if busy_begin is not None:
                    busy_begin[0] = clock()
                return
            slow(c_begin, n)

        def step_end(n):
            if seq[0] == seen and n < due:
                return
            slow(c_end, n)

        def step():
            nonlocal count
            count += 1
            n = count
            if seq[0] == seen and n < due:
                slot_step[0] = n
                if busy_begin is not None:
                    busy_begin[0] = clock()
                return
            if n > 1 and open_:
                call(c_end, n - 1)
            slow(c_begin, n)

        def poll():
            if not open_:
                return
            rc = c_poll(h)
            if rc != 0:
                log.debug("dynprof_poll: %s", _native.strerror(rc))
            if calls > 1:               # the rank steps too: its due moved
                refresh()
            m = this()
            if m is not None and m._pending is not None:
                e, m._pending = m._pending, None
                raise e

        def mark_comm():
            nonlocal busy_begin
            if not open_:
                return
            c_mark(h)
            if busy_begin is None and fast:
                addr = get_busy(h)
                if addr:
                    busy_begin = _view(addr, 8, "q")

        def shut():
            # After dynprof_close() the mapping is gone: point the fast path
            # at private words and send every step to the closed check.
            nonlocal seq, slot_step, due, open_, busy_begin
            open_ = False
            seq, slot_step = dummy
            busy_begin = None
            due = -1

        def counted():
            return count

        def slow_calls():
            return calls

        refresh()
        self.step_begin = step_begin
        self.step_end = step_end
        self.step = step
        self.mark_comm = mark_comm
        self.poll = poll
        self._shut = shut
        self._counted = counted
        self._slow_calls = slow_calls   # for tests: steps that called C

    def step_begin(self, n):
        """Marks the beginning of step n: starts a window due at it."""

    def step_end(self, n):
        """Marks the end of step n: stops a window whose stop step it is, or
        that was cancelled."""

    def step(self):
        """For plain loops, once at the top of every iteration: ends the previous
        step (if any) and begins the next; steps are numbered from 1."""

    def poll(self):
        """For loops without steps (an inference server, an evaluation
        loop): call it often.  Starts a time window at the first poll at or
        after its start, stops it at the first at or after its end; one clock
        read while nothing is due.  start_poller() calls it from a thread."""

    def start_poller(self, interval=0.01):
        """Polls from a daemon thread every interval seconds (at least
        0.001), for a process without steps that has no loop of its own to
        poll from: a window starts and stops within about interval of its
        times, and the callbacks run in that thread.  Not for a process that
        steps (the steps and the polls would race on the handle).  Stopped by
        stop_poller() and close()."""
        if self._h is None or getattr(self, "_poller", None) is not None:
            return
        interval = max(0.001, float(interval))
        stop = threading.Event()
        poll = self.poll

        def run():
            while not stop.wait(interval):
                try:
                    poll()
                except BaseException as e:  # never kill the thread quietly
                    log.warning("dynprof poller: %s", _describe(e))
        t = threading.Thread(target=run, name="dynprof-poller", daemon=True)
        self._poller = (t, stop)
        t.start()

    def stop_poller(self):
        """Stops the thread of start_poller() and waits for it.  Idempotent."""
        p = getattr(self, "_poller", None)
        if p is None:
            return
        self._poller = None
        t, stop = p
        stop.set()
        if t is not threading.current_thread():
            t.join()

    def mark_comm(self):
        """Marks that the rank now enters the step's communication (its first
        collective): the time since the step began is the rank's busy time,
        the rest of the step waiting for the others.  One clock read; only
        the first mark of a step counts.  The coordinator finds by it the
        straggler that synchronous training hides (docs/design.md)."""

    # -- callbacks from the library ----------------------------------------

    def _failed(self, what, e, err, errlen):
        msg = "%s: %s" % (what, _describe(e))
        log.debug("%s", msg)        # the library logs the window's failure
        _put_error(err, errlen, msg)
        if not isinstance(e, Exception):
            self._pending = e
        return -1

    def _call_start(self, wp, op, fwopts, outdir, err, errlen):
        if self._on_start is None:
            return 0
        try:
            window = self._window(wp.contents)
            o = op.contents
            options = Options(*(kind(getattr(o, name))
                                for name, kind, *_ in _native.OPTIONS))
            text = fwopts.decode("utf-8") if fwopts else ""
            try:
                fw = json.loads(text) if text.strip() else {}
            except ValueError as e:
                raise ValueError("framework options are not JSON: %s" % e) \
                    from None
            if not isinstance(fw, dict):
                raise ValueError("framework options are not a JSON object")
            self._on_start(window, options, fw, _native.decode(outdir))
            return 0
        except BaseException as e:
            return self._failed("on_start", e, err, errlen)

    def _call_stop(self, wp, reason, outdir, err, errlen):
        try:
            window = self._window(wp.contents)
            try:
                why = StopReason(reason)
            except ValueError:
                why = reason
            if self._on_stop is not None:
                self._on_stop(window, why, _native.decode(outdir))
            return 0
        except BaseException as e:
            return self._failed("on_stop", e, err, errlen)

    # -- the rest of the API -----------------------------------------------

    def close(self):
        """Ends the last step counted by step(), stops a window still open
        (StopReason.CLOSED), reports the rank detached and frees its slot.
        Idempotent."""
        h = self._h
        if h is None:
            return
        self.stop_poller()
        _open_monitors.discard(self)
        if os.getpid() != self._pid:
            # A forked child: the handle and its slot are the parent's.
            self._shut()
            self._h = None
            return
        try:
            last = self._counted()
            if last > 0:
                self._lib.dynprof_step_end(h, last)
        finally:
            self._shut()
            self._h = None
            self._lib.dynprof_close(h)
        if self._pending is not None:
            e, self._pending = self._pending, None
            raise e

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            if getattr(self, "_h", None) is not None:
                self.close()
        except BaseException:
            pass

    # Read on a closed Monitor (or one that never opened), the properties
    # say so (None, -1, zeros) rather than raise into the training loop.

    @property
    def job(self):
        """The job id (as given, or None, once closed)."""
        if self._h is None:
            return self._job
        return _native.decode(self._lib.dynprof_job(self._h))

    @property
    def rank(self):
        """The rank (as given, or None, once closed)."""
        if self._h is None:
            return self._rank
        return self._lib.dynprof_rank(self._h)

    @property
    def state(self):
        """The rank's state, a RankState; None once closed."""
        if self._h is None:
            return None
        s = self._lib.dynprof_state(self._h)
        try:
            return RankState(s)
        except ValueError:
            return s

    @property
    def current_step(self):
        """The last step begun, -1 before the first (and once closed)."""
        if self._h is None:
            return -1
        return self._lib.dynprof_current_step(self._h)

    @property
    def active_window(self):
        """The Window in progress, or None."""
        if self._h is None:
            return None
        w = _native.Window()
        if self._lib.dynprof_active_window(self._h, ctypes.byref(w)):
            return self._window(w)
        return None

    def _window(self, w):
        """The Window of a struct dynprof_window, with what the library
        says of its times."""
        info = _native.WindowInfo(version=_native.WINDOW_INFO_VERSION)
        if (self._h is not None and self._lib.dynprof_window_info(
                self._h, w.id, ctypes.byref(info)) == 1 and
                info.kind == _native.WINDOW_TIME):
            return Window(int(w.id), int(w.start_step), int(w.stop_step),
                          int(info.start_unix_ns), int(info.start_ns),
                          int(info.duration_ns))
        return Window(int(w.id), int(w.start_step), int(w.stop_step))

    @property
    def stats(self):
        """The handle's counters, a dict (zeros once closed)."""
        s = _native.Stats()
        if self._h is not None:
            self._lib.dynprof_get_stats(self._h, ctypes.byref(s))
        return {name: int(getattr(s, name)) for name, _ in s._fields_}

    def report_failure(self, message):
        """Reports a failure of the profiler found outside a callback: a failed
        event for the window in progress (or for none), with message.  Does
        nothing on a closed Monitor."""
        if self._h is None:
            return
        rc = self._lib.dynprof_report_failure(self._h,
                                              _native.encode(str(message)))
        if rc != 0:
            log.warning("dynprof_report_failure: %s", _native.strerror(rc))
