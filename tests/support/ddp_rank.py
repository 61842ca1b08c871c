#!/usr/bin/python3
"""One rank of a real PyTorch DistributedDataParallel job over gloo (CPU), for
the end-to-end tests of busy time (tests/e2e/test_busy.py) and its benchmark
(bench/busy.py).

A tiny model; each step a forward, then the step's compute, then the backward
(whose first gradient bucket DDP all-reduces: the hook of dynprof.torch marks
the rank's communication there), then the optimizer's step.  The compute is
held as a GPU kernel holds the CPU that waits for it: a sleep of --step-ms,
times --slow from step --slow-from on (1: never slower).  The dynprof hook is
profile_steps(optimizer, model) on the unmodified loop: nothing in the loop
calls dynprof.

usage: ddp_rank.py --job J --rank R --world N --store FILE --steps S
       [--step-ms 20] [--slow F] [--slow-from STEP] [--nice N]
--nice N (root: negative) runs the rank at that niceness, as a training job
owns its node's cores, away from a shared machine's other work.
The ranks meet through FILE (torch's FileStore: a path new to the job, on a
file system they share), not a TCP port another test could take meanwhile.
The node's agent, segments and output come from DYNPROF_SHM_DIR,
DYNPROF_AGENT_SOCKET and DYNPROF_OUTPUT_ROOT.  Prints "marks_comm True" once
the hook is in place, "done STEPS" at the end.
"""

import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import dynprof.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--slow", type=float, default=1.0)
    ap.add_argument("--slow-from", type=int, default=1)
    ap.add_argument("--nice", type=int, default=0)
    a = ap.parse_args()

    if a.nice:
        try:                # as a training job owns its node's cores
            os.nice(a.nice)
        except OSError:
            pass
    torch.set_num_threads(1)
    torch.manual_seed(a.rank)
    dist.init_process_group("gloo", init_method="file://" + a.store,
                            rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=180))
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    ps = dynprof.torch.profile_steps(opt, model, job=a.job, rank=a.rank)
    print("marks_comm %s" % ps.marks_comm, flush=True)
    for n in range(1, a.steps + 1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        f = a.slow if n >= a.slow_from else 1.0
        time.sleep(a.step_ms * f / 1000.0)
        loss.backward()
        opt.step()
        opt.zero_grad()
    ps.close()
    dist.barrier()
    dist.destroy_process_group()
    print("done %d" % a.steps, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
