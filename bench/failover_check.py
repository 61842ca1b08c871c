#!/usr/bin/python3
"""After bench/failover.sh's failover: reads every rank of the job, page by
page, from whichever of the coordinators leads now, and checks each rank's
start and stop of window 1 are there exactly once.

  failover_check.py JOB RANKS HOST:PORT...
"""

import json
import sys
import urllib.error
import urllib.request


def get(addr, path):
    try:
        with urllib.request.urlopen("http://%s%s" % (addr, path),
                                    timeout=60) as r:
            return json.loads(r.read())
    except (urllib.error.URLError, OSError):
        return None


def main(argv):
    job, want, addrs = argv[0], int(argv[1]), argv[2:]
    lead = [a for a in addrs
            if (get(a, "/healthz") or {}).get("role") == "leader"]
    if len(lead) != 1:
        print("failover_check: %d leaders among %s" % (len(lead), addrs))
        return 1
    after, seen, bad = -1, 0, []
    while True:
        page = get(lead[0], "/v1/jobs/%s/ranks?limit=10000&after=%d" %
                   (job, after))
        if page is None:
            print("failover_check: no page after rank %d" % after)
            return 1
        for r in page["ranks"]:
            seen += 1
            kinds = [e["kind"] for e in r["events"] if e["window"] == 1]
            if sorted(kinds) != ["started", "stopped"]:
                bad.append((r["rank"], kinds))
        if page.get("next") is None:
            break
        after = page["next"]
    print("failover_check: %d of %d ranks on the new leader, %d without "
          "exactly one start and one stop%s" % (
              seen, want, len(bad), (": %s" % bad[:5]) if bad else ""))
    return 0 if seen == want and not bad else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
