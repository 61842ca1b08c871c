#!/usr/bin/python3
"""One rank of a real PyTorch (CPU) training loop without a process group,
for the comparison of ranks' traces (tests/e2e/test_compare.py): a tiny
model, each step a forward, a sleep of --step-ms times --slow (the compute a
GPU kernel would hold), a backward and the optimizer's step, under
dynprof.torch.profile_steps(), which runs torch.profiler over the windows
scheduled for the rank and writes their traces.

usage: torch_rank.py --job J --rank R --steps S [--step-ms 20] [--slow F]
The node's agent, segments and output come from DYNPROF_SHM_DIR,
DYNPROF_AGENT_SOCKET and DYNPROF_OUTPUT_ROOT.  Prints "done STEPS" at the end; SIGTERM ends the loop at the step's end.
"""

import argparse
import signal
import sys
import time

import torch

import dynprof.torch


STOP = []


def on_signal(signum, frame):
    STOP.append(signum)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--slow", type=float, default=1.0)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    torch.set_num_threads(1)
    torch.manual_seed(a.rank)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    ps = dynprof.torch.profile_steps(opt, model, job=a.job, rank=a.rank)
    n = 0
    while n < a.steps and not STOP:
        n += 1
        loss = torch.nn.functional.mse_loss(model(x), y)
        time.sleep(a.step_ms * a.slow / 1000.0)
        loss.backward()
        opt.step()
        opt.zero_grad()
    ps.close()
    print("done %d" % n, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
