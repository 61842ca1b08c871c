#!/usr/bin/python3
"""--trace-upload: every rank's packed trace put into a real S3-compatible
server (s3rver, behind a proxy that checks each request's SigV4 signature
with botocore and each body's sha256, tests/support/s3.py) and reported
once: across the object store refusing the first PUTs (retried with
backoff) and the agent SIGKILLed in the middle of the large rank's upload;
the upload held to --upload-rate; the index gives s3:// locations, and
dynprofctl fetch reads them back signed with the operator's credentials
and unpacks each into DIR/rank-N/ (rank 1's trace.json and big.bin as the
rank wrote them), fails on a wrong secret and on an object changed in the store."""

import hashlib
import os
import re
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, check_collected_once, log, main,  # noqa: E402
                     wait_for)
import s3 as s3mod  # noqa: E402

JOB = "upload-%d" % os.getpid()
RANKS = [0, 1, 2, 3]
BUCKET = "traces"
PREFIX = "site/a"
BIG_MB = 24
RATE = 4 << 20      # --upload-rate 4m


def test():
    s3mod.use_credentials()
    with Cluster("upload") as c, s3mod.S3(c.dir, BUCKET) as s3:
        # The coordinator presigns the index's s3:// locations.
        n, store, flags = s3.start_uploading(
            c, PREFIX, "--upload-rate", "4m", coordinator=[
                "--s3-endpoint", s3.endpoint, "--presign-ttl", "300"])
        for rank in RANKS:
            n.start_rank(JOB, rank, rate=50)
        c.wait_ranks(JOB, len(RANKS), min_step=5)
        s3.refuse_puts = 2          # the first two PUTs: 503 SlowDown
        w = c.add_window(JOB, {"in_steps": 20, "steps": 10})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        c.wait_window_done(JOB, wid, RANKS, timeout=90)
        big = os.path.join(n.out, "rank1_start%d_stop%d" % (a, b), "big.bin")
        with open(big, "wb") as f:
            for _ in range(BIG_MB):
                f.write(os.urandom(1 << 20))

        key = "%s/%s/window-%d/rank-%%d.tar.zst" % (PREFIX, JOB, wid)
        path1 = "/%s/%s" % (BUCKET, key % 1)
        wait_for(lambda: ("PUT", path1) in s3.started or None, 120,
                 "rank 1's upload begun", interval=0.05)
        time.sleep(1)
        check(not [p for p, _ in s3.puts if p == path1],
              "rank 1 uploaded within a second: make it larger")
        n.agent.kill9()
        log("agent SIGKILLed uploading rank 1; %d PUTs stored, refused: %s"
            % (len(s3.puts), s3.refused))
        n.start_agent(extra=flags)

        idx = c.wait_traces_indexed(JOB, wid, len(RANKS), 120,
                                    "every rank collected")
        # The killed agent's PUT was cut short; nothing else refused.
        check([x for x in s3.refused if x != "a body cut short"] ==
              ["told to refuse"] * 2 and s3.errors == [],
              "refused: %s (signatures or payloads wrong?), proxy errors %s"
              % (s3.refused, s3.errors))
        s3.check_objects(idx, os.path.join(store, JOB, "window-%d" % wid),
                         key)
        check_collected_once(c.status(JOB), wid)
        # The rate cap: the big rank's upload took its size over the rate.
        m = re.search(r"uploaded job %s window %d rank 1: \S+, (\d+) bytes "
                      r"in (\d+) ms" % (re.escape(JOB), wid),
                      n.agent.output())
        check(m is not None, "no upload line for rank 1")
        size, ms = int(m.group(1)), int(m.group(2))
        rate = size / (ms / 1000.0)
        log("rank 1: %d bytes uploaded in %d ms: %.2f MiB/s (cap 4)" % (
            size, ms, rate / (1 << 20)))
        check(rate <= RATE * 1.15, "upload at %.0f B/s over the cap" % rate)
        queue = os.path.join(n.shm, "dynprof-agent.collect")
        wait_for(lambda: open(queue).read().splitlines()[1:] == [] or None,
                 30, "the queue file emptied")

        # dynprofctl fetch, signed with the operator's credentials.
        dl = os.path.join(c.dir, "fetched")
        out = c.ctl("fetch", JOB, str(wid), "--out", dl, "--s3-endpoint",
                    s3.endpoint)
        check(out.returncode == 0, "fetch:\n%s" % out.stdout)
        for t in idx["traces"]:
            data = open(os.path.join(dl, "rank-%d.tar.zst" % t["rank"]),
                        "rb").read()
            check(hashlib.sha256(data).hexdigest() == t["sha256"],
                  "rank %d fetched differs" % t["rank"])
            for name in ["trace.json"] + (["big.bin"] if t["rank"] == 1
                                          else []):
                src = os.path.join(n.out, "rank%d_start%d_stop%d" % (
                    t["rank"], a, b), name)
                with open(src, "rb") as f, open(os.path.join(
                        dl, "rank-%d" % t["rank"], name), "rb") as g:
                    check(f.read() == g.read(), "rank %d: %s unpacked "
                          "differs" % (t["rank"], name))
        # No credentials nor endpoint here: the presigned URLs the index
        # gives, which the proxy checks against botocore's.
        for t in idx["traces"]:
            check(t.get("url", "").startswith(s3.endpoint + "/") and
                  "X-Amz-Expires=300&" in t["url"] and t.get("url_expires"),
                  "rank %d: no presigned url: %s" % (t["rank"], t))
        saved = {k: os.environ.pop(k) for k in list(os.environ)
                 if k.startswith("AWS_")}
        out = c.ctl("fetch", JOB, str(wid), "--out", dl + "-presigned")
        os.environ.update(saved)
        check(out.returncode == 0, "fetch with presigned URLs:\n%s\n%s" %
              (out.stdout, s3.errors + s3.refused[-4:]))
        def presigned_gets():
            got = [x for x in s3.answers if x[0] == "GET" and
                   "X-Amz-Signature=" in x[1]]
            return got if len(got) >= len(RANKS) else None
        # (The proxy notes an answer once it is sent: wait for the last.)
        signed = wait_for(presigned_gets, 10, "the presigned GETs noted")
        check(len(signed) == len(RANKS) and all(st == 200 for _, _, st in
                                                signed), "GETs: %s" % signed)
        for t in idx["traces"]:
            data = open(os.path.join(dl + "-presigned", "rank-%d.tar.zst" %
                                     t["rank"]), "rb").read()
            check(hashlib.sha256(data).hexdigest() == t["sha256"],
                  "rank %d fetched (presigned) differs" % t["rank"])
        # A presigned URL changed (another key, its signature kept): 403.
        url = idx["traces"][0]["url"].replace("rank-0.", "rank-1.")
        try:
            urllib.request.urlopen(url, timeout=30)
            check(False, "a changed presigned URL was served")
        except urllib.error.HTTPError as e:
            check(e.code == 403 and s3.refused[-1].startswith("presigned"),
                  "a changed presigned URL: %s, %s" % (e, s3.refused[-1:]))
        # A wrong secret: refused by the signature check.
        os.environ["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        out = c.ctl("fetch", JOB, str(wid), "--out", dl + "2",
                    "--s3-endpoint", s3.endpoint, "--ranks", "0")
        os.environ["AWS_SECRET_ACCESS_KEY"] = s3mod.SECRET_KEY
        check(out.returncode == 1 and "403" in out.stdout and
              s3.refused[-1].startswith("signature"),
              "fetch with a wrong secret:\n%s\nrefused: %s" % (
                  out.stdout, s3.refused[-1:]))
        # An object changed in the store: fails loudly, not kept.
        with open(s3.object_path(key % 3), "r+b") as f:
            f.seek(50)
            byte = f.read(1)
            f.seek(50)
            f.write(bytes([byte[0] ^ 0xff]))
        out = c.ctl("fetch", JOB, str(wid), "--out", dl + "3",
                    "--s3-endpoint", s3.endpoint, "--ranks", "2-3")
        check(out.returncode == 1 and "rank 3: sha256 mismatch" in out.stdout
              and sorted(os.listdir(dl + "3")) == ["rank-2", "rank-2.tar.zst"],
              "fetch of a changed object:\n%s" % out.stdout)


if __name__ == "__main__":
    main(test)
