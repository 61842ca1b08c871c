"""dynprof for PyTorch: torch.profiler started and stopped at the scheduled steps.

::

    import dynprof.torch

    with dynprof.torch.profile_steps(optimizer, model) as ps:
        for x, y in ps.iterate(data):   # a step begins as its batch comes
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()            # and ends here
            optimizer.zero_grad()

On a DistributedDataParallel model the hook also marks when the rank enters
the step's communication (a DDP communication hook, the first gradient
bucket's all-reduce): the time from the step's beginning to it is the rank's
busy time, which finds the rank every other one waits for, and the mark's
time when it arrives at the collective (docs/design.md).  ps.marks_comm_by
says how it marks:

- "comm_hook": dynprof's communication hook marks, then all-reduces as DDP's
  default does.  A hook the model's owner registers afterwards (DDP takes one
  hook a model: register_comm_hook() or _register_builtin_comm_hook() would
  raise) runs inside it, after the mark, instead of DDP's all-reduce; a
  second one raises as DDP would; the built-in ALLREDUCE and FP16_COMPRESS
  run as their Python equivalents (default_hooks.allreduce_hook,
  fp16_compress_hook), another built-in raises.
- "gradients": the model already had a communication hook, which cannot be
  replaced nor wrapped (DDP keeps it in its C++ reducer), so the mark is taken
  when each backward computes its first gradient (a hook on each parameter's
  gradient: one cheap call per parameter and step), before DDP all-reduces
  the first bucket: the busy time then leaves out the rest of that bucket's
  gradients.  ps.close() takes these hooks off.
- None: not a DDP model; call ps.mark_comm() before the step's first
  collective.

A step ends at optimizer.step() (or at ps.step(), where
torch.profiler.profile.step() would go, without an optimizer).  The next one
begins when its batch is fetched through ps.iterate(), else at the model's
next forward when a model is given, else at once.

A window's framework options (a JSON object pushed with the window) choose the
profiler's arguments: "activities" (a list of "cpu", "cuda"; default torch's),
"record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"
(booleans).  with_stack is also taken from the window's typed options.  At the
window's stop the trace is exported in Chrome's format to
OUTPUT_DIR/rank{N}.pt.trace.json (TensorBoard's profiler plugin reads it too):
each step of the window is a "ProfilerStep#N" span, as torch.profiler's
schedules name them (tools such as Holistic Trace Analysis split a trace by
them), and the top-level "dynprof" object says the job, rank, window, its
steps and why it stopped ("distributedInfo" says the process group's rank).

torch is imported only when a window starts.
"""

import json
import logging
import os
import re
import secrets
import shutil
import socket
import sys

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

    def __init__(self, optimizer=None, model=None, **monitor_args):
        self._prof = None
        self._path = None
        self._who = None
        self._span = None       # the ProfilerStep#N record_function open
        self._traced = None     # [first, last] step traced in this window
        self.traces = []        # the trace files written, in order
        self._steps = 0         # steps ended
        self._open = False      # step self._steps + 1 has begun
        self._fetched = 0       # the step the last batch of iterate() is in
        self._deferred = model is not None
        self._optimizer = None
        self._hook = None
        self._fwd_hook = None
        self._comm = None
        monitor_args["labels"] = rank_labels(monitor_args.get("labels"))
        self.monitor = Monitor(on_start=self._on_start, on_stop=self._on_stop,
                               **monitor_args)
        if optimizer is not None:
            self._wrap(optimizer)
        if model is not None:
            self._fwd_hook = model.register_forward_pre_hook(
                lambda module, args: self._begin())
            self._comm = _CommMark(model, self.monitor)
            self.marks_comm = self._comm.by is not None
            self.marks_comm_by = self._comm.by
        else:
            self.marks_comm = False
            self.marks_comm_by = None
            self._begin()

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
        if self._fwd_hook is not None:
            self._fwd_hook.remove()
            self._fwd_hook = None
        if self._comm is not None:
            self._comm.remove()
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

    # A step's span, "ProfilerStep#N" as torch.profiler names the steps of a
    # schedule (what trace tools split a trace by), is open exactly while the
    # step is, inside a window.

    def _begin(self):
        if self._open:
            return
        n = self._steps + 1
        self._open = True
        if self._comm is not None:
            self._comm.step_begun()
        self.monitor.step_begin(n)      # may start a window (_on_start)
        if self._prof is not None and self._span is None:
            self._open_span(n)

    def _end(self):
        if not self._open:
            self._begin()
        n = self._steps + 1
        self._close_span()
        self._open = False
        self._steps = n
        self.monitor.step_end(n)        # may stop the window (_on_stop)

    def _open_span(self, n):
        try:
            import torch.autograd.profiler as autograd_profiler
            span = autograd_profiler.record_function("ProfilerStep#%d" % n)
            span.__enter__()
        except Exception as e:          # never into the training loop
            log.warning("step %d: no ProfilerStep span: %s", n, e)
            return
        self._span = span
        if self._traced is None:
            self._traced = [n, n]
        self._traced[1] = n

    def _close_span(self):
        span, self._span = self._span, None
        if span is not None:
            try:
                span.__exit__(None, None, None)
            except Exception as e:
                log.warning("closing a ProfilerStep span: %s", e)

    def step(self):
        """Ends the current step: once per iteration, after optimizer.step()
        (done for you when an optimizer was given).  The next step begins
        now, or, with a model or iterate(), at its first forward or batch."""
        self._end()
        if not self._deferred:
            self._begin()

    def iterate(self, iterable):
        """Yields the items of iterable (a DataLoader), beginning a step as
        each is fetched: the step then holds the loading of its batch, as in
        torch.profiler's own steps.  A step still open from the previous
        batch (no optimizer.step() or step() since) is ended first."""
        self._deferred = True
        it = iter(iterable)
        while True:
            if self._open and self._fetched == self._steps + 1:
                self._end()
            self._begin()
            self._fetched = self._steps + 1
            try:
                item = next(it)
            except StopIteration:
                return
            yield item

    def mark_comm(self):
        """Marks that this rank now enters the step's communication (its first
        collective): the time since the step began is its busy time, which
        finds the rank every other one waits for.  Placed for you on a
        DistributedDataParallel model (marks_comm is then True); call it
        before the first collective of a step otherwise."""
        self.monitor.mark_comm()

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
        self._traced = None
        # Kept: the monitor's handle is gone when close() stops a window.
        self._who = (self.monitor.job, self.monitor.rank)
        self._path = os.path.join(output_dir,
                                  "rank%d.pt.trace.json" % self._who[1])
        log.debug("torch.profiler.profile(%s) started", kw)

    def _on_stop(self, window, reason, output_dir):
        prof, self._prof = self._prof, None
        if prof is None:
            return
        self._close_span()              # closed inside a step
        meta = trace_metadata(self._who, window, reason, self._traced)
        kineto = _kineto()
        if kineto:
            prof.add_metadata_json("dynprof", json.dumps(meta))
        prof.stop()
        # Into a file of our own first (created, never opened: a FIFO put
        # at the trace's name would block the rank, and its job, for ever),
        # then renamed to the name, which replaces what was there but a
        # directory.
        tmp = _trace_tmp(self._path)
        try:
            prof.export_chrome_trace(tmp)
            if not kineto:
                add_trace_metadata(tmp, meta, _distributed_info())
            os.replace(tmp, self._path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        self.traces.append(self._path)
        log.info("window %d (%s): trace %s", window.id, meta["reason"],
                 self._path)


class _CommMark:
    """Marks the rank's entry into the step's communication on a
    DistributedDataParallel model (see the module's doc): by is "comm_hook",
    "gradients" or None (not a DDP model, or no hook could be placed)."""

    ONCE = ("register_comm_hook or register_builtin_comm_hook can only be "
            "called once.")

    def __init__(self, model, monitor):
        self.monitor = monitor
        self.by = None
        self.inner = None       # (state, hook) the model's owner registered
        self.armed = False      # "gradients": not marked yet in this step
        self.handles = []
        try:
            from torch.nn.parallel import DistributedDataParallel
            from torch.distributed.algorithms.ddp_comm_hooks import \
                default_hooks
        except Exception:               # no torch.distributed
            return
        if not isinstance(model, DistributedDataParallel):
            return
        self.defaults = default_hooks
        self.pg = getattr(model, "process_group", None)
        try:
            model.register_comm_hook(self.pg, self._hook)
        except Exception as e:          # a hook of its own already
            log.info("DDP has a communication hook of its own (%s): busy "
                     "time marked at each backward's first gradient", e)
            self._mark_gradients(model)
            return
        self.by = "comm_hook"
        self._take_later_hooks(model)

    def _hook(self, state, bucket):
        self.monitor.mark_comm()        # only a step's first mark counts
        inner = self.inner
        if inner is None:
            return self.defaults.allreduce_hook(state, bucket)
        return inner[1](inner[0], bucket)

    def _take_later_hooks(self, model):
        """A hook the model's owner registers after ours (which DDP would
        refuse: one hook a model) runs inside ours, after the mark."""
        def register_comm_hook(state, hook):
            if self.inner is not None:
                raise RuntimeError(self.ONCE)
            check = getattr(model, "_check_comm_hook", None)
            if check is not None:
                check(hook)
            self._name(model, getattr(hook, "__qualname__", str(hook)))
            self.inner = (state, hook)

        def register_builtin_comm_hook(comm_hook_type):
            import torch.distributed as dist
            hooks = {dist.BuiltinCommHookType.ALLREDUCE:
                     self.defaults.allreduce_hook,
                     dist.BuiltinCommHookType.FP16_COMPRESS:
                     self.defaults.fp16_compress_hook}
            if self.inner is not None:
                raise RuntimeError(self.ONCE)
            if comm_hook_type not in hooks:
                raise RuntimeError("no Python equivalent of the built-in "
                                   "communication hook %s" % comm_hook_type)
            self._name(model, str(comm_hook_type))
            self.inner = (self.pg, hooks[comm_hook_type])

        model.register_comm_hook = register_comm_hook
        model._register_builtin_comm_hook = register_builtin_comm_hook

    @staticmethod
    def _name(model, name):
        try:                            # what DDP's logging data says
            model.logger._set_comm_hook_name(name)
        except Exception:
            pass

    def _mark_gradients(self, model):
        """Marks at the first gradient each backward computes, before DDP
        all-reduces the first bucket (which waits for that bucket's other
        gradients): one cheap call per parameter and step, the mark once."""
        def on_grad(grad):
            if self.armed:
                self.armed = False
                self.monitor.mark_comm()
            return None
        try:
            for p in model.parameters():
                if p.requires_grad:
                    self.handles.append(p.register_hook(on_grad))
        except Exception as e:
            log.info("no busy time from the gradients either: %s", e)
            self.remove()
            return
        self.by = "gradients" if self.handles else None

    def step_begun(self):
        self.armed = True

    def remove(self):
        """Takes the gradients' hooks off (a communication hook stays: DDP
        keeps it for the model's life; closed, it only all-reduces)."""
        for h in self.handles:
            h.remove()
        self.handles = []
        self.armed = False


def _kineto():
    import torch.autograd
    return torch.autograd.kineto_available()


_LABEL_VALUE = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")


def framework_labels():
    """The labels torch tells for free: node, local_rank, world_size, and
    Megatron's parallel ranks (pp, tp, dp, cp, ep) when megatron.core is
    importable and its parallel state is initialized.  A value that would
    not pass as a label is left out, never refused."""
    found = {"node": socket.gethostname().split(".")[0],
             "local_rank": os.environ.get("LOCAL_RANK")}
    # Nothing imported here: a module the script has not loaded tells nothing.
    info = _distributed_info() if "torch.distributed" in sys.modules else None
    found["world_size"] = (info or {}).get("world_size",
                                           os.environ.get("WORLD_SIZE"))
    ps = sys.modules.get("megatron.core.parallel_state")
    try:
        if ps is not None and ps.model_parallel_is_initialized():
            found.update(pp=ps.get_pipeline_model_parallel_rank(),
                         tp=ps.get_tensor_model_parallel_rank(),
                         dp=ps.get_data_parallel_rank(),
                         cp=ps.get_context_parallel_rank(),
                         ep=ps.get_expert_model_parallel_rank())
    except Exception:
        pass
    return {k: str(v) for k, v in found.items()
            if v is not None and _LABEL_VALUE.match(str(v))}


def rank_labels(given=None):
    """The labels a rank opens with: framework_labels(), then what is given
    (a dict, or "k=v,..."; None: DYNPROF_LABELS) over them.  A given text
    that is not k=v pairs goes as it is, for the library to refuse it with
    its reason."""
    if given is None:
        given = os.environ.get("DYNPROF_LABELS", "")
    if isinstance(given, str):
        pairs = [p.split("=", 1) for p in given.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            return given
        given = {k.strip(): v.strip() for k, v in pairs}
    merged = framework_labels()
    merged.update({str(k): str(v) for k, v in given.items()})
    return merged


def _distributed_info():
    """What torch.profiler writes as "distributedInfo" with Kineto, or None."""
    try:
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            return None
        return {"backend": dist.get_backend(), "rank": dist.get_rank(),
                "world_size": dist.get_world_size()}
    except Exception:
        return None


def trace_metadata(who, window, reason, traced):
    """The "dynprof" object of a trace: which job and rank (who), window and
    steps (traced: the first and last, or None)."""
    return {"job": who[0], "rank": who[1], "window": window.id,
            "start_step": window.start_step, "stop_step": window.stop_step,
            "steps": traced,
            "reason": getattr(reason, "name", str(reason)).lower()}


def _trace_tmp(path):
    """Creates an empty file of this process's beside path (O_EXCL, a name
    nobody could guess, the mode the umask gives as torch's own would have)
    and returns its name."""
    for _ in range(16):
        tmp = os.path.join(os.path.dirname(path), ".%s.%s.tmp" % (
            os.path.basename(path), secrets.token_hex(8)))
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                             os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError("no free name beside %s" % path)


def add_trace_metadata(path, meta, dist_info):
    """Puts meta (and distributedInfo) into a trace torch wrote as a bare
    JSON array of events (torch without Kineto): the file becomes the object
    form {"traceEvents": [...], ...} of the same format, which tools expect.
    The events are copied, not parsed."""
    head = {"dynprof": meta}
    if dist_info is not None:
        head["distributedInfo"] = dist_info
    with open(path, "rb") as f:
        start = f.read(64).lstrip()
        if not start.startswith(b"["):
            return              # already an object: nothing known to add
        f.seek(0)
        tmp = _trace_tmp(path)
        try:
            with open(tmp, "wb") as out:
                out.write(json.dumps(head)[:-1].encode() +
                          b', "traceEvents": ')
                shutil.copyfileobj(f, out)
                out.write(b"}\n")
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)


def profile_steps(optimizer=None, model=None, **monitor_args):
    """Returns a ProfileSteps: torch.profiler.profile started at the first step
    of each window scheduled for this rank and stopped at its last, the trace
    written into the window's output directory, each step of the window in it
    as a "ProfilerStep#N" span, and a "dynprof" object saying the job, rank,
    window and steps.  monitor_args go to dynprof.Monitor (job, rank,
    output_root, shm_dir, agent_socket, ...).

    A step ends at optimizer.step() when an optimizer is given (a step
    post-hook where torch has them, else a wrapper removed by close()), or at
    step().  The next step begins then, or, when model is given, at the
    model's next forward, or, with ps.iterate(loader), when the next batch is
    fetched.  Use it as a context manager, or call close()."""
    return ProfileSteps(optimizer, model, **monitor_args)
