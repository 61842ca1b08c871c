"""dynprof for PyTorch: torch.profiler started and stopped at the scheduled steps.

::

    import dynprof.torch

    with dynprof.torch.profile_steps(optimizer) as ps:
        for x, y in data:
            loss = model(x).loss(y)
            loss.backward()
            optimizer.step()        # counts the step
            optimizer.zero_grad()

Without an optimizer, call ps.step() once at the end of every iteration, where
torch.profiler.profile.step() would go.  Step 1 begins when profile_steps()
returns; each counted step ends the current step and begins the next.

A window's framework options (a JSON object pushed with the window) choose the
profiler's arguments: "activities" (a list of "cpu", "cuda"; default torch's),
"record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"
(booleans).  with_stack is also taken from the window's typed options.  At the
window's stop the trace is exported in Chrome's format to
OUTPUT_DIR/rank{N}.pt.trace.json (TensorBoard's profiler plugin reads it too).

torch is imported only when a window starts.
"""

import logging
import os

from . import Monitor

__all__ = ["profile_steps", "ProfileSteps", "profiler_kwargs"]

log = logging.getLogger("dynprof.torch")

_BOOL_OPTIONS = ("record_shapes", "profile_memory", "with_stack", "with_flops",
                 "with_modules")


def profiler_kwargs(options, framework_options):
    """The keyword arguments of torch.profiler.profile for a window.  Raises
    ValueError on an option of the wrong type or an unknown activity."""
    import torch.profiler
    kw = {}
    acts = framework_options.get("activities")
    if acts is not None:
        if isinstance(acts, str):
            acts = [acts]
        if not isinstance(acts, list):
            raise ValueError("activities: not a list")
        kw["activities"] = []
        for a in acts:
            name = str(a).upper()
            act = getattr(torch.profiler.ProfilerActivity, name, None)
            if not isinstance(a, str) or act is None:
                raise ValueError("activities: unknown activity %r" % (a,))
            kw["activities"].append(act)
    for key in _BOOL_OPTIONS:
        if key in framework_options:
            v = framework_options[key]
            if not isinstance(v, bool):
                raise ValueError("%s: not a boolean" % key)
            kw[key] = v
    if options.with_stack:
        kw["with_stack"] = True
    return kw


class ProfileSteps:
    """Drives torch.profiler.profile from a dynprof.Monitor.  See
    profile_steps()."""

    def __init__(self, optimizer=None, **monitor_args):
        self._prof = None
        self._path = None
        self.traces = []        # the trace files written, in order
        self._steps = 0         # steps ended
        self._optimizer = None
        self._hook = None
        self.monitor = Monitor(on_start=self._on_start, on_stop=self._on_stop,
                               **monitor_args)
        self._begin = self.monitor.step_begin
        self._end = self.monitor.step_end
        if optimizer is not None:
            self._wrap(optimizer)
        self._begin(1)

    def _wrap(self, optimizer):
        register = getattr(optimizer, "register_step_post_hook", None)
        if register is not None:        # torch >= 2.0
            self._hook = register(lambda opt, args, kwargs: self.step())
        else:
            had = "step" in vars(optimizer)
            orig = optimizer.step

            def step(*args, **kwargs):
                r = orig(*args, **kwargs)
                self.step()
                return r

            step.__doc__ = getattr(orig, "__doc__", None)
            optimizer.step = step
            self._hook = (had, orig)
        self._optimizer = optimizer

    def _unwrap(self):
        opt, hook = self._optimizer, self._hook
        self._optimizer = self._hook = None
        if opt is None:
            return
        if isinstance(hook, tuple):
            had, orig = hook
            if had:
                opt.step = orig
            else:
                try:
                    del opt.step
                except AttributeError:
                    pass
        else:
            hook.remove()

    def step(self):
        """Ends the current step and begins the next: once per iteration,
        after optimizer.step() (done for you when an optimizer was given)."""
        n = self._steps + 1
        self._steps = n
        self._end(n)
        self._begin(n + 1)

    @property
    def steps(self):
        """The number of steps ended so far."""
        return self._steps

    @property
    def profiler(self):
        """The torch.profiler.profile running now, or None."""
        return self._prof

    def close(self):
        """Restores the optimizer and closes the monitor: a window still open
        stops (and its trace is written).  Idempotent."""
        self._unwrap()
        self.monitor.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _on_start(self, window, options, framework_options, output_dir):
        import torch.profiler
        kw = profiler_kwargs(options, framework_options)
        prof = torch.profiler.profile(**kw)
        prof.start()
        self._prof = prof
        self._path = os.path.join(output_dir,
                                  "rank%d.pt.trace.json" % self.monitor.rank)
        log.debug("torch.profiler.profile(%s) started", kw)

    def _on_stop(self, window, reason, output_dir):
        prof, self._prof = self._prof, None
        if prof is None:
            return
        prof.stop()
        prof.export_chrome_trace(self._path)
        self.traces.append(self._path)
        log.info("window %d (%s): trace %s", window.id,
                 getattr(reason, "name", str(reason)).lower(), self._path)


def profile_steps(optimizer=None, **monitor_args):
    """Returns a ProfileSteps: torch.profiler.profile started at the first step
    of each window scheduled for this rank and stopped at its last, the trace
    written into the window's output directory.  monitor_args go to
    dynprof.Monitor (job, rank, output_root, shm_dir, agent_socket, ...).

    Steps are counted by optimizer.step() when an optimizer is given (a step
    post-hook where torch has them, else a wrapper removed by close()), or by
    calls to step().  Use it as a context manager, or call close()."""
    return ProfileSteps(optimizer, **monitor_args)
