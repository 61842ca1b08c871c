#!/usr/bin/python3
"""A job given its own s3:// trace store (PUT /v1/jobs/J/trace-store) has
its traces uploaded under that prefix through the agent's --trace-upload
endpoint and credentials (a real S3-compatible server, tests/support/s3.py),
while another job's go to --trace-upload's prefix."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, main  # noqa: E402
import s3 as s3mod  # noqa: E402

OWN = "upown-%d" % os.getpid()
OTHER = "upoth-%d" % os.getpid()
BUCKET = "traces"


def test():
    s3mod.use_credentials()
    with Cluster("uploadown") as c, s3mod.S3(c.dir, BUCKET) as s3:
        n, store, _ = s3.start_uploading(c, "site/all")
        n.start_rank(OWN, 0, rate=50)
        n.start_rank(OTHER, 0, rate=50)
        c.wait_ranks(OWN, 1, min_step=5)
        c.wait_ranks(OTHER, 1, min_step=5)
        code, body = c.http("PUT", "/v1/jobs/%s/trace-store" % OWN,
                            {"store": "s3://%s/jobs/own" % BUCKET})
        check(code == 200, "trace-store: %s %s" % (code, body))
        for job, prefix in ((OWN, "jobs/own"), (OTHER, "site/all")):
            w = c.add_window(job, {"in_steps": 20, "steps": 10})
            c.wait_window_done(job, w["id"], [0], timeout=60)
            idx = c.wait_traces_indexed(job, w["id"], 1, 120,
                                        "%s collected" % job)
            key = "%s/%s/window-%d/rank-%%d.tar.zst" % (prefix, job, w["id"])
            s3.check_objects(idx, os.path.join(store, job, "window-%d" %
                                               w["id"]), key)
        check(s3.errors == [], "proxy errors %s" % s3.errors)


if __name__ == "__main__":
    main(test)
