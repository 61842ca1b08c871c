#!/usr/bin/python3
"""--upload-part-size: an archive over the part size goes into the object
store as a multipart upload (s3rver behind the proxy that checks every
request's SigV4 signature and every PUT's and POST's payload sha256):
CreateMultipartUpload, one UploadPart per part, CompleteMultipartUpload.
A part the store refuses aborts that upload (a signed DELETE ?uploadId=)
and the archive goes up again from its first part; the object is the
archive's bytes, reported once.  A rank's archive under the part size goes
up in one PUT."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, check_collected_once, log, main,  # noqa: E402
                     wait_for)
import s3 as s3mod  # noqa: E402

JOB = "multipart-%d" % os.getpid()
RANKS = [0, 1]
BUCKET = "traces"
PREFIX = "mp"
PART = 5 << 20              # --upload-part-size 5m: S3's smallest
BIG = 12 << 20              # rank 0's extra bytes: three parts


def test():
    s3mod.use_credentials()
    with Cluster("multipart") as c, s3mod.S3(c.dir, BUCKET) as s3:
        n, store, _ = s3.start_uploading(c, PREFIX, "--upload-part-size", "5m",
                                         "--upload-backoff", "1")
        for rank in RANKS:
            n.start_rank(JOB, rank, rate=50)
        c.wait_ranks(JOB, len(RANKS), min_step=5)
        w = c.add_window(JOB, {"in_steps": 50, "steps": 100})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        key = "%s/%s/window-%d/rank-%%d.tar.zst" % (PREFIX, JOB, wid)
        path0 = "/%s/%s" % (BUCKET, key % 0)
        s3.fail_part = (path0, 2)
        d0 = os.path.join(n.out, "rank0_start%d_stop%d" % (a, b))
        wait_for(lambda: os.path.isdir(d0) or None, 60, "rank 0's window "
                 "begun", interval=0.02)
        with open(os.path.join(d0, "big.bin"), "wb") as f:
            f.write(os.urandom(BIG))
        c.wait_window_done(JOB, wid, RANKS, timeout=90)

        idx = c.wait_traces_indexed(JOB, wid, len(RANKS), 120,
                                    "every rank collected")
        check(s3.refused == ["told to fail a part"] and s3.errors == [],
              "refused: %s (signatures or payloads wrong?), proxy errors %s"
              % (s3.refused, s3.errors))
        s3.check_objects(idx, os.path.join(store, JOB, "window-%d" % wid),
                         key)
        check_collected_once(c.status(JOB), wid)

        # What went to the store for rank 0: two uploads begun, the first
        # aborted after its part 2 was refused, the second whole.
        size0 = [t["size"] for t in idx["traces"] if t["rank"] == 0][0]
        nparts = (size0 + PART - 1) // PART
        check(nparts == 3, "rank 0's archive is %d bytes: %d parts" % (
            size0, nparts))
        mine = [(m, p, st) for m, p, st in s3.answers
                if p.split("?")[0] == path0]
        log("rank 0 (%d bytes), as s3rver answered: %s" % (size0, [
            (m, p.split("?")[1] if "?" in p else "", st)
            for m, p, st in mine]))
        creates = [x for x in mine if x[0] == "POST" and
                   x[1].endswith("?uploads=")]
        ids = []
        for m, p, st in mine:
            q = re.search(r"uploadId=([^&]+)", p)
            if q and q.group(1) not in ids:
                ids.append(q.group(1))
        check(len(creates) == 2 and len(ids) == 2, "uploads begun: %s" %
              mine)
        first, second = ids

        def of(uid):
            return [(m, re.sub(r"&?uploadId=[^&]+", "", p.split("?")[1]),
                     st) for m, p, st in mine if "uploadId=" + uid in p]
        check(of(first) == [("PUT", "partNumber=1", 200),
                            ("DELETE", "", 405)] or
              of(first) == [("PUT", "partNumber=1", 200),
                            ("DELETE", "", 204)],
              "the first upload: %s" % of(first))
        check(of(second) == [("PUT", "partNumber=%d" % i, 200)
                             for i in (1, 2, 3)] + [("POST", "", 200)],
              "the second upload: %s" % of(second))
        one = [x for x in s3.answers if x[1] == "/%s/%s" % (BUCKET, key % 1)]
        check(one == [("PUT", "/%s/%s" % (BUCKET, key % 1), 200)],
              "rank 1 in one PUT: %s" % one)
        m = re.search(r"upload: job %s window %d rank 0 to \S+: (.*): tried "
                      r"again" % (re.escape(JOB), wid), n.agent.output())
        log("the agent on the refused part: %s" % (m.group(1) if m else
                                                     None))


if __name__ == "__main__":
    main(test)
