"""The MindSpore workflow end to end, with the real dynprof-agent in standalone
mode watching a profiler_config.json: no polling in the job, the file's window
reaches the ranks through the segment, and the Profiler (stand-in) or
torch.profiler (real) runs for exactly its steps."""

import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "standins"))

import mindspore.profiler as msprof               # noqa: E402 (stand-in)

import dynprof.mindspore                          # noqa: E402
from test_mindspore import Ctx, calls_between     # noqa: E402


def agent_binary():
    build = os.environ.get("DYNPROF_BUILD_DIR")
    path = os.path.join(build, "agent", "dynprof-agent") if build else None
    if not path or not os.access(path, os.X_OK):
        pytest.skip("needs DYNPROF_BUILD_DIR with agent/dynprof-agent")
    return path


class Agent:
    """dynprof-agent --config-file FILE, on the test's socket and shm dir."""

    def __init__(self, env, config_file):
        ready = os.path.join(env.dir, "agent.ready")
        self.log = open(os.path.join(env.dir, "agent.log"), "w+")
        self.proc = subprocess.Popen(
            [agent_binary(), "--config-file", config_file, "--job", env.job,
             "--socket", env.socket, "--shm-dir", env.shm_dir,
             "--ready-file", ready, "-v"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("agent not ready:\n" + self.text)
            time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.seek(0)
            self.text = self.log.read()
            self.log.close()


def write_config(path, **fields):
    cfg = dict(dynprof.mindspore.DEFAULT_CONFIG)
    cfg.update(fields)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f)
    os.rename(tmp, path)


def wait_for_window(env, start, stop, timeout=10):
    """Polls the segment until the agent has written the window."""
    seg = env.segment()
    try:
        deadline = time.monotonic() + timeout
        while True:
            c = seg.config
            if seg.hdr.seq % 2 == 0 and any(
                    c.windows[i].start_step == start and
                    c.windows[i].stop_step == stop
                    for i in range(min(c.nwindows, 16))):
                return
            if time.monotonic() > deadline:
                raise AssertionError("window %d-%d never reached the segment"
                                     % (start, stop))
            time.sleep(0.01)
    finally:
        seg.close()


@pytest.fixture(autouse=True)
def fresh_standins():
    msprof.CALLS.clear()
    msprof.FAIL.clear()


def test_mindspore_workflow_with_standalone_agent(env):
    cfg = os.path.join(env.dir, "cfg")
    out = os.path.join(env.dir, "prof")
    cfg_json = os.path.join(cfg, "profiler_config.json")
    os.mkdir(cfg)                   # the agent watches an existing directory
    agent = Agent(env, cfg_json)
    try:
        # As in MindSpore: rank 0 creates the default file; the agent, which
        # waited for it, reads it (no window) and later edits.
        cb = dynprof.mindspore.DynamicProfilerMonitor(cfg_path=cfg,
                                                      output_path=out)
        assert os.path.exists(cfg_json)
        write_config(cfg_json, start_step=5, stop_step=7, profiler_level=0,
                     analyse_mode=1, with_stack=True)
        wait_for_window(env, 5, 7)
        ctx = Ctx()
        for n in range(1, 11):
            ctx.cur_step_num = n
            msprof.CALLS.append(("step_begin", n))
            cb.step_begin(ctx)
            msprof.CALLS.append(("step_end", n))
            cb.step_end(ctx)
        cb.on_train_end(ctx)
    finally:
        agent.stop()
    calls = calls_between(None, None)
    assert calls == [
        (("step_begin", 5), "Profiler", dict(
            output_path=os.path.join(out, "rank0_start5_stop7"),
            start_profile=False, aicore_metrics=-1,
            profiler_level=msprof.ProfilerLevel.Level0,
            profile_framework=None, profile_communication=False,
            parallel_strategy=False, with_stack=True,
            data_simplification=True)),
        (("step_begin", 5), "start"),
        (("step_end", 7), "stop"),
        (("step_end", 7), "analyse", {"mode": "async"}),
    ]


def test_torch_window_from_profiler_config_json(env):
    torch = pytest.importorskip("torch")
    import dynprof.torch
    from test_torch import labelled_steps, model_and_data, train_step
    cfg_json = os.path.join(env.dir, "profiler_config.json")
    # Keys MindSpore does not know travel as framework options.
    write_config(cfg_json, start_step=3, stop_step=4, activities=["cpu"],
                 record_shapes=True)
    agent = Agent(env, cfg_json)
    try:
        wait_for_window(env, 3, 4)
        model, x, y = model_and_data()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with dynprof.torch.profile_steps(opt, **env.kwargs()) as ps:
            for n in range(1, 7):
                train_step(model, opt, x, y, n)
    finally:
        agent.stop()
    path = os.path.join(env.out, "rank0_start3_stop4", "rank0.pt.trace.json")
    assert ps.traces == [path]
    steps, _ = labelled_steps(path)
    assert steps == [3, 4]
