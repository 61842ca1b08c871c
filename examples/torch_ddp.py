"""A PyTorch DDP job profiled by dynprof: the lines to add to your own.

Run on CPU over gloo, two ranks on this machine:

    export MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2
    for r in 0 1; do RANK=$r python3 examples/torch_ddp.py & done; wait

(torchrun sets the same variables; Debian 12's torch 1.13 has a torchrun that
fails under its Python 3.11.)  RANK is dynprof's rank too.  dynprof takes the
job's name, the agent's socket, the segment directory and where traces go from
DYNPROF_JOB, DYNPROF_AGENT_SOCKET, DYNPROF_SHM_DIR and DYNPROF_OUTPUT_ROOT
(README.md, "Profile your own job").  Without an agent it trains all the
same.
"""

import argparse
import logging
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import dynprof.torch                            # (1) the hook


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--step-time", type=float, default=0.1,
                    help="seconds of a bigger model's compute in each step")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(name)s: %(message)s")

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(32, 64), torch.randint(0, 8, (32,)))
            for _ in range(16)]

    def loader():
        for n in range(args.steps):
            yield data[n % len(data)]

    # (2) steps begin as their batch is fetched and end at optimizer.step()
    with dynprof.torch.profile_steps(opt, model) as ps:
        for x, y in ps.iterate(loader()):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            # A bigger model's compute: a fixed time before the gradients'
            # all-reduce (in backward), as a GPU's kernels would hold it.
            # Not a sleep to a deadline of the step's own: each rank would
            # keep its start-up offset from the others for ever, arriving
            # late at every all-reduce while costing the job nothing.
            time.sleep(args.step_time)
            loss.backward()
            opt.step()
            opt.zero_grad()
    if ps.traces:
        logging.info("rank %d wrote %s", rank, ", ".join(ps.traces))
    # Every rank at the end before any tears gloo down.  Without this
    # barrier a rank of this example now and then aborted at exit
    # ("terminate called without an active exception", torch 1.13's gloo);
    # tests/support/ddp_rank.py, which has it, never did.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
