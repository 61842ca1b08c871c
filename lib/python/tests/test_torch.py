"""dynprof.torch with real PyTorch (Debian's python3-torch, CPU): a small model
trains, a window is written into the real segment, and a Chrome trace appears
holding exactly the window's steps."""

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


def train_step(model, opt, x, y, n):
    # The forward pass is labelled with its step: the trace must hold the
    # labels of the window's steps and no other.
    with torch.profiler.record_function("fwd_step_%d" % n):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def labelled_steps(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return sorted({int(e["name"][len("fwd_step_"):]) for e in events
                   if str(e.get("name", "")).startswith("fwd_step_")}), events


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
    ps = dynprof.torch.profile_steps(opt, **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 3, 100)])
    for n in range(1, 6):
        train_step(model, opt, x, y, n)
    ps.close()
    seg.close()
    steps, _ = labelled_steps(ps.traces[0])
    assert steps == [3, 4, 5]


def test_bad_options_fail_the_window_not_training(env):
    sink = env.listen()
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with dynprof.torch.profile_steps(opt, **env.kwargs()) as ps:
        seg = env.segment()
        seg.write([W(1, 2, 3, fwopts='{"activities": ["tpu"]}'),
                   W(2, 5, 5, fwopts='{"record_shapes": "yes"}')])
        for n in range(1, 7):
            train_step(model, opt, x, y, n)
        seg.close()
    assert ps.traces == []
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    errors = [e["error"] for e in sink.events if e["kind"] == EVENT_FAILED]
    assert errors == [
        "on_start: ValueError: activities: unknown activity 'tpu'",
        "on_start: ValueError: record_shapes: not a boolean"]
