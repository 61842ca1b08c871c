"""A training loop under dynprof, the example of deploy/README.md.

Job and rank come from the environment (DYNPROF_JOB or SLURM_JOB_ID; RANK, RANK_ID,
OMPI_COMM_WORLD_RANK or SLURM_PROCID); the schedule from the node's dynprof-agent.
An operator asks for a window with
    dynprofctl trace JOB --in 20 --steps 5 --wait
and every rank runs its profiler over those same steps.  Here the "profiler" writes a
file per step into the window's output directory; put torch.profiler or MindSpore's
Profiler in on_start/on_stop (or use dynprof.torch / dynprof.mindspore).

TRAIN_STEPS (default 1000) and STEP_SECONDS (default 0.1) shape the fake training.
"""

import os
import sys
import time

import dynprof

active = {}


def on_start(window, options, framework_options, output_dir):
    os.makedirs(output_dir, exist_ok=True)
    active["dir"] = output_dir
    print(f"profiling steps {window.start_step}-{window.stop_step} into {output_dir}",
          flush=True)


def on_stop(window, reason, output_dir):
    active.pop("dir", None)
    print(f"stopped window {window.id} ({reason})", flush=True)


def main():
    steps = int(os.environ.get("TRAIN_STEPS", "1000"))
    pause = float(os.environ.get("STEP_SECONDS", "0.1"))
    with dynprof.Monitor(on_start=on_start, on_stop=on_stop) as mon:
        print(f"job {mon.job} rank {mon.rank}: {steps} steps", flush=True)
        for _ in range(steps):
            mon.step()                  # once at the top of every iteration
            time.sleep(pause)           # the training step
            if "dir" in active:
                n = mon.current_step
                with open(os.path.join(active["dir"], f"step{n}.trace"), "w") as f:
                    f.write(f"step {n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
