#!/usr/bin/python3
"""Hosts apart: two agents, each in a network namespace made by the test and
joined to the coordinator's (the root namespace) by a veth pair, their ranks in
the same namespaces.  A window is pushed, then one node's link is cut (ip link
set down) before the window starts: that node's ranks still run it (latched in
their segment), the coordinator marks the node lost, and when the link comes
back the agent reconnects, catches up and replays its queued events, so its
ranks' started and stopped arrive, exactly once.

Needs root (CAP_NET_ADMIN) for ip netns: skipped (77) with a message when not
root; as root, a namespace that cannot be made is a failure (cluster.skip())."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, events_of, log, main,  # noqa: E402
                     skip, wait_for)

JOB = "netns-%d" % os.getpid()
TAG = "dp%d" % (os.getpid() % 100000)


def ip(*args, check_rc=True):
    p = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=20)
    if check_rc and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), p.stdout.strip()))
    return p


def can_make_netns():
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN"
    probe = TAG + "probe"
    p = ip("netns", "add", probe, check_rc=False)
    if p.returncode != 0:
        return "ip netns add failed: %s" % p.stdout.strip()
    ip("netns", "del", probe, check_rc=False)
    return None


def make_node_net(c, i):
    """netns TAGn<i> with veth TAGs<i> (10.200+i.X.2) paired to TAGr<i> (.1)."""
    ns, root_if, ns_if = "%sn%d" % (TAG, i), "%sr%d" % (TAG, i), "%ss%d" % (TAG, i)
    net = "10.%d.%d" % (200 + i, os.getpid() % 250)
    ip("netns", "add", ns)
    c.cleanups.append(lambda: ip("netns", "del", ns, check_rc=False))
    ip("link", "add", root_if, "type", "veth", "peer", "name", ns_if)
    c.cleanups.append(lambda: ip("link", "del", root_if, check_rc=False))
    ip("link", "set", ns_if, "netns", ns)
    ip("addr", "add", net + ".1/30", "dev", root_if)
    ip("link", "set", root_if, "up")
    ip("-n", ns, "addr", "add", net + ".2/30", "dev", ns_if)
    ip("-n", ns, "link", "set", ns_if, "up")
    ip("-n", ns, "link", "set", "lo", "up")
    return ns, root_if, net + ".1"


def test():
    why = can_make_netns()
    if why is not None:
        return skip("cannot make a network namespace: %s" % why)
    with Cluster("netns") as c:
        # The agents reach the coordinator over the veths: listen on every address.
        c.start_coordinator(listen="0.0.0.0", extra=["--insecure"])
        nodes, links = [], []
        for i in range(2):
            ns, root_if, gw = make_node_net(c, i)
            n = c.node("n%d" % i, netns=ns, coord_addr="%s:%d" % (gw, c.agent_port))
            n.start_agent()
            nodes.append(n)
            links.append(root_if)
            for k in range(2):
                n.start_rank(JOB, i * 2 + k, rate=50)
        c.wait_ranks(JOB, 4, min_step=5)
        w = c.add_window(JOB, {"in_steps": 150, "steps": 50})
        wid, a, b, gen = w["id"], w["start_step"], w["stop_step"], w["generation"]

        def applied():
            s = c.status(JOB)
            return len([x for x in s.get("nodes", [])
                        if x.get("applied_generation", 0) >= gen]) >= 2
        wait_for(applied, 20, "both nodes applied generation %d" % gen)

        cut, cut_if = nodes[1], links[1]
        log("cutting %s's link (%s down) before step %d" % (cut.name, cut_if, a))
        ip("link", "set", cut_if, "down")
        wait_for(lambda: [x for x in c.status(JOB).get("nodes", [])
                          if x.get("node") == cut.name and x.get("state") == "lost"],
                 30, "the coordinator marking %s lost" % cut.name, interval=0.2)
        # The cut node's ranks run the window on their own, from their segment.
        wait_for(lambda: all(cut.trace(r, a, b) and cut.trace(r, a, b)["reason"] ==
                             "completed" for r in (2, 3)),
                 60, "ranks 2 and 3 completing window %d while cut off" % wid,
                 interval=0.2)
        st = c.status(JOB)
        for r in st["ranks"]:
            if r["rank"] in (2, 3):
                check(not events_of(r, "stopped", wid),
                      "rank %d's stop arrived while its link was down?" % r["rank"])
        log("restoring %s's link" % cut.name)
        ip("link", "set", cut_if, "up")
        t = time.monotonic()
        st = c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=90)
        log("%s caught up %.1f s after the link came back" % (cut.name, time.monotonic() - t))
        wait_for(lambda: [x for x in c.status(JOB).get("nodes", [])
                          if x.get("node") == cut.name and x.get("state") == "connected"],
                 30, "%s connected again" % cut.name)
        time.sleep(1)
        st = c.status(JOB)
        for r in st["ranks"]:
            s1, s2 = events_of(r, "started", wid), events_of(r, "stopped", wid)
            check(len(s1) == 1 and len(s2) == 1 and s1[0].get("step") == a and
                  s2[0].get("step") == b,
                  "rank %d: events %s, want one start at %d and one stop at %d" % (
                      r["rank"], r.get("events"), a, b))


if __name__ == "__main__":
    main(test)
