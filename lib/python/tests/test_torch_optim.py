"""How dynprof.torch counts steps from an optimizer, without torch: the step
post-hook of torch >= 2.0 when the optimizer has one, else a wrapper of
optimizer.step, removed at close.  (torch is imported only when a window
starts; none does here.)"""

import dynprof.torch


class PlainOptimizer:                   # torch 1.13: no step hooks
    def __init__(self):
        self.calls = 0

    def step(self, closure=None):
        self.calls += 1
        return "loss"


class Handle:
    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn

    def remove(self):
        self.hooks.remove(self.fn)


class HookOptimizer(PlainOptimizer):    # torch >= 2.0
    def __init__(self):
        super().__init__()
        self.hooks = []

    def register_step_post_hook(self, fn):
        self.hooks.append(fn)
        return Handle(self.hooks, fn)

    def step(self, closure=None):
        r = super().step(closure)
        for fn in list(self.hooks):
            fn(self, (closure,), {})
        return r


def test_wrapped_step_counts_and_is_removed(env):
    opt = PlainOptimizer()
    with dynprof.torch.profile_steps(opt, **env.kwargs()) as ps:
        assert "step" in vars(opt)
        for _ in range(5):
            assert opt.step() == "loss"
        assert ps.steps == 5
        assert ps.monitor.current_step == 6     # the next step has begun
    assert "step" not in vars(opt)
    opt.step()
    assert opt.calls == 6 and ps.steps == 5


def test_post_hook_counts_and_is_removed(env):
    opt = HookOptimizer()
    ps = dynprof.torch.profile_steps(opt, **env.kwargs())
    assert len(opt.hooks) == 1 and "step" not in vars(opt)
    for _ in range(3):
        opt.step()
    assert ps.steps == 3
    ps.close()
    assert opt.hooks == []
    opt.step()
    assert ps.steps == 3
