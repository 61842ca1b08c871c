#!/usr/bin/python3
"""The chaos test (tests/e2e/test_chaos.py), longer: rounds of WINDOWS windows
under random faults, each round on a new cluster (the status keeps 64 events
per rank, so one job cannot hold more windows), until the duration is spent.
Round k's seed is drawn from --seed, so a whole run replays.

    python3 bench/chaos.py --seed N --duration S [--build-dir DIR]

Prints one summary line per round and the totals; exits 1 if any round found
a disagreement between the ranks' records and the coordinator's status.
"""

import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import test_chaos  # noqa: E402
from cluster import Failure  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--duration", type=float, default=300,
                    help="seconds of rounds (default 300)")
    ap.add_argument("--build-dir", default=None)
    a = ap.parse_args()
    if a.build_dir:
        os.environ["DYNPROF_BUILD_DIR"] = os.path.abspath(a.build_dir)
    seed = a.seed if a.seed is not None else test_chaos.seed_from_env()
    rng = random.Random(seed)
    end = time.monotonic() + a.duration
    tot = dict(rounds=0, kills=0, stops=0, windows=0, rank_events=0, lost=0,
               duplicated=0, failed_rounds=0)
    while time.monotonic() < end:
        rseed = rng.randrange(1, 1 << 31)
        try:
            fig = test_chaos.run_chaos(rseed, test_chaos.WINDOWS,
                                       name="chaos-bench")
        except Failure as e:
            print("round seed %d: FAIL: %s" % (rseed, e))
            tot["failed_rounds"] += 1
            tot["rounds"] += 1
            continue
        tot["rounds"] += 1
        for k in ("kills", "stops", "windows", "rank_events", "lost",
                  "duplicated"):
            tot[k] += fig[k]
        if fig["problems"]:
            tot["failed_rounds"] += 1
    print("chaos bench: seed %d duration %.0fs rounds %d kills %d stops %d "
          "windows %d rank events %d lost %d duplicated %d failed rounds %d" % (
              seed, a.duration, tot["rounds"], tot["kills"], tot["stops"],
              tot["windows"], tot["rank_events"], tot["lost"],
              tot["duplicated"], tot["failed_rounds"]))
    return 1 if tot["failed_rounds"] else 0


if __name__ == "__main__":
    sys.exit(main())
