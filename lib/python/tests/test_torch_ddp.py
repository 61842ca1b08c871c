"""The PyTorch hook's mark on a real DistributedDataParallel model (Debian's
python3-torch, CPU, one process over gloo): where it marks the rank's entry
into the step's communication when the model has no communication hook, when
its owner registered one before (DDP takes one hook a model: the mark moves
to each backward's first gradient), and when its owner registers one after
(it runs inside dynprof's, after the mark: DDP would have refused it).  Each
counts one busy time a step in the rank's slot, and the owner's hook sees
every bucket."""

import os

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

import dynprof.torch                              # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import \
    default_hooks                                 # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

STEPS = 6


@pytest.fixture
def ddp(tmp_path):
    """A DDP model of one rank over gloo (a FileStore in tmp_path)."""
    dist.init_process_group("gloo", init_method="file://%s" % (
        tmp_path / "store"), rank=0, world_size=1)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)))
    yield model
    dist.destroy_process_group()


def counting():
    """The owner's hook: all-reduces as DDP's default, counting the buckets
    (in its attribute buckets)."""
    def owner_hook(state, bucket):
        owner_hook.buckets += 1
        return default_hooks.allreduce_hook(state, bucket)
    owner_hook.buckets = 0
    return owner_hook


def train(model, env, steps=STEPS):
    """Trains steps steps under profile_steps; returns it (closed) and the
    busy times its slot counted."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    ps = dynprof.torch.profile_steps(opt, model, **env.kwargs(rank=0))
    seg = env.segment()
    slot = seg.slot_of(os.getpid())
    for _ in range(steps):
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    counted = slot.busy_count
    del slot
    ps.close()
    seg.close()
    return ps, counted


def test_marks_through_its_own_hook(ddp, env):
    ps, counted = train(ddp, env)
    assert ps.marks_comm and ps.marks_comm_by == "comm_hook"
    # The first mark starts the timing: each later step counts once.
    assert counted == STEPS - 1


def test_owner_hook_before(ddp, env):
    """The model came with its owner's hook: ours cannot be placed (DDP would
    raise), so the mark is each backward's first gradient; theirs runs."""
    theirs = counting()
    ddp.register_comm_hook(None, theirs)
    ps, counted = train(ddp, env)
    assert ps.marks_comm and ps.marks_comm_by == "gradients"
    assert counted == STEPS - 1
    assert theirs.buckets >= STEPS
    # Closed: the gradients' hooks are off, training goes on unmarked.
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    assert theirs.buckets >= STEPS + 1


def test_owner_hook_after(ddp, env):
    """The owner registers a hook once dynprof's is in place: no error (DDP
    would raise), it runs for every bucket after the mark, and gradients are
    what it makes them; a second registration raises as DDP's would."""
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    ps = dynprof.torch.profile_steps(opt, ddp, **env.kwargs(rank=0))
    assert ps.marks_comm_by == "comm_hook"
    theirs = counting()
    ddp.register_comm_hook(None, theirs)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, theirs)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    seg = env.segment()
    slot = seg.slot_of(os.getpid())
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    for _ in range(STEPS):
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        opt.zero_grad()
    assert slot.busy_count == STEPS - 1
    assert theirs.buckets >= STEPS
    assert ddp._get_ddp_logging_data().get("comm_hook") == \
        theirs.__qualname__
    del slot
    ps.close()
    seg.close()


def test_builtin_hook_after(ddp, env):
    """The built-in FP16_COMPRESS registered after: it runs as its Python
    equivalent, the gradients rounded through half precision."""
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    ps = dynprof.torch.profile_steps(opt, ddp, **env.kwargs(rank=0))
    ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    for p in ddp.parameters():
        assert torch.equal(p.grad, p.grad.half().float())
    ps.close()
