"""dynprof for MindSpore: a drop-in for mindspore.profiler.DynamicProfilerMonitor.

Replace::

    from mindspore.profiler import DynamicProfilerMonitor

with::

    from dynprof.mindspore import DynamicProfilerMonitor

and keep the rest: same constructor, same Callback for Model.train(), the same
Profiler arguments built from the same profiler_config.json fields, output in
OUTPUT_PATH/rank{N}_start{a}_stop{b}.  What changes is where the schedule comes
from: the node's dynprof-agent pushes it into shared memory and every rank reads
it at each step, in memory.  No polling process is started inside the job.

To keep editing a profiler_config.json by hand, run the agent in standalone mode
on it (one agent per node; it watches the file with inotify; the directory must
exist, the file may come later)::

    dynprof-agent --config-file CFG_PATH/profiler_config.json

MindSpore is imported only when a monitor is built or a window starts.
"""

import json
import logging
import os
import warnings

from . import DynprofError, Monitor, StopReason, _native

__all__ = ["DynamicProfilerMonitor", "profiler_args"]

log = logging.getLogger("dynprof.mindspore")

# MindSpore 2.4's profiler_config.json as it creates it when absent: the steps,
# then every option of the table that has a MindSpore 2.4 key.
DEFAULT_CONFIG = dict(
    [("start_step", -1), ("stop_step", -1)] +
    [(ms24, kind(default))
     for _, kind, _, _, default, ms24, _ in _native.OPTIONS
     if ms24 is not None])

# Keyword arguments handed on to dynprof.Monitor; MindSpore ignores the others.
_MONITOR_KWARGS = ("job", "rank", "shm_dir", "agent_socket", "shm_mode",
                   "fast_path")


def profiler_args(options):
    """The keyword arguments MindSpore 2.4 passes to Profiler() besides
    output_path and start_profile, built from a window's Options the way it
    builds them from profiler_config.json."""
    from mindspore.profiler import ProfilerLevel
    args = {}
    for name, kind, _, _, _, ms24, values in _native.OPTIONS:
        if ms24 is None or name == "analyse_mode":  # analyse() takes that
            continue
        value = kind(getattr(options, name))
        if values is not None:
            value = _value_name(values, value)
            if name == "profiler_level" and value is not None:
                value = getattr(ProfilerLevel, value)
        args[ms24] = value
    return args


def _value_name(values, value):
    """The name of an option's value (None for -1, unset)."""
    return values[value] if 0 <= value < len(values) else None


def analyse_mode(options):
    """"sync", "async", or None (finalize only), as MindSpore 2.4 maps it."""
    values = [row[6] for row in _native.OPTIONS if row[0] == "analyse_mode"]
    return _value_name(values[0], options.analyse_mode)


def _real_rank():
    """The rank as MindSpore knows it, or None to let the library read the
    environment (RANK, RANK_ID, ...)."""
    try:
        from mindspore.communication import get_rank
        return int(get_rank())
    except Exception:
        return None


class _DynamicProfilerMonitor:
    """Starts and stops mindspore.profiler.Profiler at the steps the node's
    dynprof-agent says, as MindSpore 2.4's DynamicProfilerMonitor does from a
    polled profiler_config.json.

    Args:
        cfg_path (str): MindSpore's config directory.  Kept for compatibility:
            rank 0 creates a default profiler_config.json in it when there is
            none, as MindSpore does, so that an agent run in standalone mode
            (``dynprof-agent --config-file CFG_PATH/profiler_config.json``)
            has a file to watch.  Nothing in the job reads it.
        output_path (str): the output root.  Default ``"./dyn_profile_data"``.
            Each window writes in ``output_path/rank{N}_start{a}_stop{b}``.
        poll_interval (int): accepted and ignored.  MindSpore starts a process
            that re-reads the file every poll_interval seconds; here the agent
            pushes changes (inotify in standalone mode), nothing polls.
        **kwargs: ``job``, ``rank``, ``shm_dir``, ``agent_socket``,
            ``shm_mode`` and ``fast_path`` go to dynprof.Monitor; MindSpore's
            other keyword arguments are accepted and ignored, as it does.

    Use it as a Callback of Model.train(), or call step() once at the top of
    every iteration of a custom loop (steps numbered from 1).  A Profiler that
    fails to build, start or stop fails that window (the agent is told why);
    it never stops training.  If the library cannot attach, the monitor warns
    (RuntimeWarning) and does nothing.
    """

    def __init__(self, cfg_path, output_path="./dyn_profile_data",
                 poll_interval=2, **kwargs):
        if not isinstance(cfg_path, str):
            raise TypeError("The cfg_path must be a string.")
        if not isinstance(output_path, str):
            log.warning("output_path must be a string, got %s: using "
                        "./dyn_profile_data", type(output_path).__name__)
            output_path = "./dyn_profile_data"
        self._cfg_path = cfg_path
        self._output_path = output_path
        self._poll_interval = poll_interval
        self._profiler = None
        self._analyse = None
        margs = {k: kwargs.pop(k) for k in _MONITOR_KWARGS if k in kwargs}
        if kwargs:
            log.debug("ignored arguments: %s", ", ".join(sorted(kwargs)))
        if margs.get("rank") is None:
            margs["rank"] = _real_rank()
        self._monitor = None
        self._begin = self._end = self._step = _nothing
        try:
            self._monitor = Monitor(output_root=output_path,
                                    on_start=self._on_start,
                                    on_stop=self._on_stop, strict=True,
                                    **margs)
        except DynprofError as e:
            # Seen even where logging is not configured.
            warnings.warn("dynprof: dynamic profiling disabled: %s" % e,
                          RuntimeWarning, stacklevel=2)
            return
        self._begin = self._monitor.step_begin
        self._end = self._monitor.step_end
        self._step = self._monitor.step
        self._rank_id = self._monitor.rank
        if self._rank_id == 0:
            self._init_cfg_json()

    def _init_cfg_json(self):
        path = os.path.join(self._cfg_path, "profiler_config.json")
        try:
            if not os.path.exists(path):
                os.makedirs(self._cfg_path, exist_ok=True)
                with open(path, "x") as f:
                    json.dump(DEFAULT_CONFIG, f, indent=4)
        except OSError as e:
            log.warning("cannot create %s: %s", path, e)

    # -- MindSpore's Callback ----------------------------------------------

    def step_begin(self, run_context):
        """Starts the profiler if a window starts at this step."""
        self._begin(run_context.original_args().cur_step_num)

    def step_end(self, run_context):
        """Stops the profiler if a window stops at this step (or was
        cancelled)."""
        self._end(run_context.original_args().cur_step_num)

    def on_train_end(self, run_context):
        """Stops a window still open (stop + finalize, as MindSpore does at the
        end of training) and detaches the rank."""
        self.close()

    # -- custom loops ------------------------------------------------------

    def step(self):
        """Once at the top of every iteration of a custom loop: ends the
        previous step and begins the next (steps numbered from 1)."""
        self._step()

    def mark_comm(self):
        """Marks that this rank now enters the step's communication (its first
        collective, e.g. before the gradients' all-reduce of a custom loop):
        the time since the step began is its busy time, which finds the rank
        every other one waits for (docs/design.md).  Only the first mark of a
        step counts; a no-op when disabled or closed."""
        m = self._monitor
        if m is not None:
            m.mark_comm()

    def close(self):
        """Like on_train_end, for custom loops.  Idempotent."""
        m, self._monitor = self._monitor, None
        self._begin = self._end = self._step = _nothing
        if m is not None:
            m.close()

    @property
    def monitor(self):
        """The dynprof.Monitor underneath (None when disabled or closed)."""
        return self._monitor

    # -- the library's callbacks ---------------------------------------------

    def _on_start(self, window, options, framework_options, output_dir):
        from mindspore.profiler import Profiler
        args = profiler_args(options)
        prof = Profiler(output_path=output_dir, start_profile=False, **args)
        prof.start()
        self._profiler = prof
        self._analyse = analyse_mode(options)
        log.debug("rank %s: profiler started at step %d, stops at step %d, "
                  "output %s", self._rank_id, window.start_step,
                  window.stop_step, output_dir)

    def _on_stop(self, window, reason, output_dir):
        prof, self._profiler = self._profiler, None
        if prof is None:
            return
        prof.stop()
        if self._analyse is not None and reason != StopReason.CLOSED:
            prof.analyse(mode=self._analyse)
        else:
            prof._ascend_profiler.finalize()
        log.debug("rank %s: profiler stopped (%s), output %s", self._rank_id,
                  reason.name.lower() if isinstance(reason, StopReason)
                  else reason, output_dir)


def _nothing(*args):
    pass


_classes = {}


def _monitor_class():
    """Builds DynamicProfilerMonitor on first use, deriving from MindSpore's
    Callback when MindSpore is there (Model.train() checks for it)."""
    cls = _classes.get("DynamicProfilerMonitor")
    if cls is None:
        try:
            from mindspore.train import Callback
            bases = (_DynamicProfilerMonitor, Callback)
        except ImportError:
            bases = (_DynamicProfilerMonitor,)
        cls = type("DynamicProfilerMonitor", bases, {
            "__doc__": _DynamicProfilerMonitor.__doc__,
            "__module__": __name__,
        })
        _classes["DynamicProfilerMonitor"] = cls
    return cls


def __getattr__(name):
    if name == "DynamicProfilerMonitor":
        return _monitor_class()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
