"""A MindSpore job with a custom training loop, profiled by dynprof: the lines
to add to your own.

    export RANK_ID=0        # or RANK; mindspore.communication's rank wins
    python3 examples/mindspore_train.py

dynprof takes the job's name, the agent's socket and the segment directory
from DYNPROF_JOB, DYNPROF_AGENT_SOCKET and DYNPROF_SHM_DIR (README.md, "Profile
your own job").  At a window's first step dynprof builds and starts
mindspore.profiler.Profiler writing into OUTPUT/rank{N}_start{a}_stop{b}
(--output, MindSpore's output_path); at its last step it stops it and runs
analyse().  Without an agent it trains all the same.

The step itself is a placeholder: a linear model fitted by plain gradient
descent, then a fixed time of a bigger model's compute.  Put your network's
train step there (mindspore.value_and_grad and an optimizer, or
Model.train(callbacks=[monitor]) instead of the loop).
"""

import argparse
import logging
import random
import time

import mindspore                                # noqa: F401 (the framework)

from dynprof.mindspore import DynamicProfilerMonitor   # (1) was mindspore.profiler's


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--step-time", type=float, default=0.1,
                    help="seconds of a bigger model's compute in each step")
    ap.add_argument("--output", default="./dyn_profile_data",
                    help="the monitor's output_path: where traces go")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(name)s: %(message)s")

    rng = random.Random(0)
    data = []
    for _ in range(64):
        x = rng.uniform(-1, 1)
        data.append((x, 3 * x + 1 + rng.gauss(0, 0.1)))
    w = b = 0.0
    lr = 0.1

    monitor = DynamicProfilerMonitor(cfg_path="./dyn_cfg",
                                     output_path=args.output)
    for step in range(1, args.steps + 1):
        monitor.step()                          # (2) top of every iteration
        x, y = data[step % len(data)]
        err = w * x + b - y
        w -= lr * err * x
        b -= lr * err
        time.sleep(args.step_time)
    monitor.close()                             # (3) a window still open stops
    logging.info("trained %d steps: w=%.2f b=%.2f", args.steps, w, b)


if __name__ == "__main__":
    main()
