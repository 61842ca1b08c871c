"""dynprof.torch with real PyTorch (Debian's python3-torch, CPU): a small model
trains, a window is written into the real segment, and a Chrome trace appears
holding exactly the window's steps, each a "ProfilerStep#N" span as trace tools
(Holistic Trace Analysis) split a trace by, and a "dynprof" object naming the
job, rank, window and steps."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

import dynprof                                    # noqa: E402
import dynprof.torch                              # noqa: E402
from conftest import EVENT_DETACHED, EVENT_FAILED  # noqa: E402
from test_monitor import W                        # noqa: E402


def model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    x = torch.randn(64, 16)
    y = torch.randint(0, 4, (64,))
    return model, x, y


def train_step(model, opt, x, y, n, label="fwd"):
    # The forward pass (or the backward) is labelled with its step: the trace
    # must hold the labels of the window's steps and no other.
    if label == "fwd":
        with torch.profiler.record_function("fwd_step_%d" % n):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
    else:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        with torch.profiler.record_function("%s_step_%d" % (label, n)):
            loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def labelled_steps(path, label="fwd"):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    prefix = label + "_step_"
    return sorted({int(e["name"][len(prefix):]) for e in events
                   if str(e.get("name", "")).startswith(prefix)}), events


def load_trace(path):
    """The trace as tools read it: the object form of Chrome's trace format,
    ProfilerStep#N spans ("X" events) in order, each once."""
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    spans = sorted((e["ts"], e) for e in trace["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#"))
    steps = []
    for _, e in spans:
        assert e["ph"] == "X" and e["dur"] >= 0
        steps.append(int(e["name"][len("ProfilerStep#"):]))
    # HTA's rule: consecutive steps, none twice, one after the other.
    for (_, a), (_, b) in zip(spans, spans[1:]):
        assert a["ts"] + a["dur"] <= b["ts"]
    return trace, steps


def spans_hold_labels(trace, label="fwd"):
    """Every fwd_step_N label lies inside the span ProfilerStep#N."""
    prefix = label + "_step_"
    spans = {e["name"]: e for e in trace["traceEvents"]
             if str(e.get("name", "")).startswith("ProfilerStep#")}
    for e in trace["traceEvents"]:
        name = str(e.get("name", ""))
        if name.startswith(prefix):
            s = spans["ProfilerStep#" + name[len(prefix):]]
            assert s["ts"] <= e["ts"] <= e["ts"] + e["dur"] <= \
                s["ts"] + s["dur"]


def test_window_traced_through_optimizer_steps(env):
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    orig_step = opt.step
    losses = []
    with dynprof.torch.profile_steps(opt, rank=2, **env.kwargs()) as ps:
        seg = env.segment()
        seg.write([W(1, 4, 6, fwopts='{"activities": ["cpu"]}')])
        for n in range(1, 11):
            losses.append(train_step(model, opt, x, y, n))
            if n == 5:
                assert ps.profiler is not None
        assert ps.steps == 10
        assert ps.profiler is None
    seg.close()
    assert losses[-1] < losses[0]           # it did train
    assert "step" not in vars(opt) or opt.step == orig_step  # unwrapped
    path = os.path.join(env.out, "rank2_start4_stop6", "rank2.pt.trace.json")
    assert ps.traces == [path]
    steps, _ = labelled_steps(path)
    assert steps == [4, 5, 6]
    trace, steps = load_trace(path)
    assert steps == [4, 5, 6]
    spans_hold_labels(trace)
    assert trace["dynprof"] == {"job": env.job, "rank": 2, "window": 1,
                                "start_step": 4, "stop_step": 6,
                                "steps": [4, 6], "reason": "completed"}
    assert "distributedInfo" not in trace       # no process group


def test_steps_begin_at_the_batch(env):
    """With iterate(), a step begins as its batch is fetched: the loading is
    inside ProfilerStep#N, the previous step's zero_grad() is not."""
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def batches():
        for n in range(1, 9):
            with torch.profiler.record_function("load_%d" % n):
                xb = x * 1.0
            yield n, xb

    with dynprof.torch.profile_steps(opt, **env.kwargs()) as ps:
        seg = env.segment()
        seg.write([W(1, 3, 5)])
        for n, xb in ps.iterate(batches()):
            with torch.profiler.record_function("fwd_step_%d" % n):
                loss = torch.nn.functional.cross_entropy(model(xb), y)
            loss.backward()
            opt.step()
            with torch.profiler.record_function("zero_%d" % n):
                opt.zero_grad()
        assert ps.steps == 8
    seg.close()
    trace, steps = load_trace(ps.traces[0])
    assert steps == [3, 4, 5]
    spans_hold_labels(trace)
    names = [e["name"] for e in trace["traceEvents"]]
    # The window's batches were loaded inside their steps; the zero_grad()
    # of step 2 came before the window, those of 3 and 4 between steps.
    spans = {e["name"]: e for e in trace["traceEvents"]}
    for n in (3, 4, 5):
        s, ld = spans["ProfilerStep#%d" % n], spans["load_%d" % n]
        assert s["ts"] <= ld["ts"] and ld["ts"] + ld["dur"] <= \
            s["ts"] + s["dur"]
    assert "zero_2" not in names and "load_6" not in names
    assert "zero_3" in names and "zero_5" not in names


def test_steps_begin_at_the_forward(env):
    """With a model, a step begins at its first forward."""
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with dynprof.torch.profile_steps(opt, model, **env.kwargs()) as ps:
        seg = env.segment()
        seg.write([W(1, 2, 3)])
        for n in range(1, 6):
            with torch.profiler.record_function("before_%d" % n):
                xb = x * 1.0
            train_step(model, opt, xb, y, n, "bwd")
    seg.close()
    assert labelled_steps(ps.traces[0], "bwd")[0] == [2, 3]
    trace, steps = load_trace(ps.traces[0])
    assert steps == [2, 3]
    spans_hold_labels(trace, "bwd")
    names = {e["name"] for e in trace["traceEvents"]}
    assert "before_2" not in names and "before_3" in names  # between steps


def test_explicit_steps_and_framework_options(env, monkeypatch):
    made = []
    real_profile = torch.profiler.profile

    def profile(**kw):             # the real profiler, its arguments noted
        made.append(kw)
        return real_profile(**kw)

    monkeypatch.setattr(torch.profiler, "profile", profile)
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ps = dynprof.torch.profile_steps(**env.kwargs())
    seg = env.segment()
    seg.write([W(1, 2, 2, fwopts='{"record_shapes": true}'),
               W(2, 4, 5, with_stack=1)])
    for n in range(1, 8):
        train_step(model, opt, x, y, n)
        ps.step()
    ps.close()
    seg.close()
    p1 = os.path.join(env.out, "rank0_start2_stop2", "rank0.pt.trace.json")
    p2 = os.path.join(env.out, "rank0_start4_stop5", "rank0.pt.trace.json")
    assert ps.traces == [p1, p2]
    steps, _ = labelled_steps(p1)
    assert steps == [2]
    steps, _ = labelled_steps(p2)
    assert steps == [4, 5]
    assert [load_trace(p)[1] for p in (p1, p2)] == [[2], [4, 5]]
    assert load_trace(p2)[0]["dynprof"]["window"] == 2
    assert made == [{"record_shapes": True}, {"with_stack": True}]


def test_profiler_kwargs():
    opts = dynprof.Options(-1, -1, -1, -1, False, False, False, True)
    fw = {"activities": ["cpu", "CUDA"], "record_shapes": True,
          "profile_memory": False, "with_flops": True, "with_modules": True,
          "other_framework_option": 1}
    A = torch.profiler.ProfilerActivity
    assert dynprof.torch.profiler_kwargs(opts, fw) == {
        "activities": [A.CPU, A.CUDA], "record_shapes": True,
        "profile_memory": False, "with_flops": True, "with_modules": True}
    assert dynprof.torch.profiler_kwargs(opts._replace(with_stack=True),
                                         {"activities": "cpu"}) == {
        "activities": [A.CPU], "with_stack": True}
    with pytest.raises(ValueError):
        dynprof.torch.profiler_kwargs(opts, {"activities": [1]})


def test_closed_inside_a_window_writes_the_trace(env):
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ps = dynprof.torch.profile_steps(opt, model, **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 3, 100)])
    for n in range(1, 6):
        train_step(model, opt, x, y, n, "bwd")
    ps.close()
    seg.close()
    steps, _ = labelled_steps(ps.traces[0], "bwd")
    assert steps == [3, 4, 5]
    trace, steps = load_trace(ps.traces[0])
    assert steps == [3, 4, 5]
    assert trace["dynprof"]["steps"] == [3, 5]
    assert trace["dynprof"]["reason"] == "closed"


def train_windows(env, model, opt, x, y, steps, windows, **kw):
    """Trains steps steps under profile_steps(opt, **kw) with windows
    written into the segment at the start; returns the ProfileSteps."""
    with dynprof.torch.profile_steps(opt, **env.kwargs(), **kw) as ps:
        seg = env.segment()
        seg.write(windows)
        for n in range(1, steps + 1):
            train_step(model, opt, x, y, n)
        seg.close()
    return ps


def test_bad_options_fail_the_window_not_training(env):
    sink = env.listen()
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ps = train_windows(env, model, opt, x, y, 6, [
        W(1, 2, 3, fwopts='{"activities": ["tpu"]}'),
        W(2, 5, 5, fwopts='{"record_shapes": "yes"}')])
    assert ps.traces == []
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    errors = [e["error"] for e in sink.events if e["kind"] == EVENT_FAILED]
    assert errors == [
        "on_start: ValueError: activities: unknown activity 'tpu'",
        "on_start: ValueError: record_shapes: not a boolean"]


def test_trace_name_taken_never_stalls(env):
    """A FIFO where the trace goes (put there by whoever may write the
    output directory) once blocked the rank in open() for ever, and its
    DDP peers with it: the trace is written into a file of the rank's own
    and renamed over the FIFO.  A directory there fails the window, not
    training.  The loop runs in a thread with a deadline, the FIFO opened
    for reading if it is stuck, so that a stall fails and ends."""
    import threading
    sink = env.listen()
    fifo_dir = os.path.join(env.out, "rank0_start2_stop3")
    fifo = os.path.join(fifo_dir, "rank0.pt.trace.json")
    os.makedirs(fifo_dir)
    os.mkfifo(fifo)
    taken = os.path.join(env.out, "rank0_start5_stop5", "rank0.pt.trace.json")
    os.makedirs(taken)
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    done = []

    def train():
        done.append(train_windows(env, model, opt, x, y, 7, [
            W(1, 2, 3, fwopts='{"activities": ["cpu"]}'),
            W(2, 5, 5, fwopts='{"activities": ["cpu"]}')], rank=0))

    t = threading.Thread(target=train, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        t.join(10)
        os.close(fd)
        pytest.fail("the rank stalled writing its trace into a FIFO")
    ps, = done
    assert ps.traces == [fifo]
    assert os.path.isfile(fifo) and not os.path.islink(fifo)
    _, steps = load_trace(fifo)
    assert steps == [2, 3]
    assert sorted(os.listdir(fifo_dir)) == ["rank0.pt.trace.json"]
    assert os.listdir(taken) == []
    assert sorted(os.listdir(os.path.dirname(taken))) == [
        "rank0.pt.trace.json"]          # no file of ours left beside it
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    errors = [e["error"] for e in sink.events if e["kind"] == EVENT_FAILED]
    assert len(errors) == 1 and "IsADirectoryError" in errors[0], errors
