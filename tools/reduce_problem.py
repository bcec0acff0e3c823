#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""reduce_problem.py: cut a sharding problem (the IOPDDL contest JSON that
`dtopt solve` reads and `dtopt opt --dump-problem` writes) down to a small
one that still shows a behaviour, by delta debugging: drop chunks of nodes
(with their edges), then edges, then single strategies (with their rows
and columns), as long as CMD still says the behaviour is there, until
nothing more can go.

  tools/reduce_problem.py PROBLEM.json OUT.json -- CMD [ARG...]

CMD runs with every `{}` in its arguments replaced by the candidate's path
(a temporary file); exit status 0 means the candidate still shows the
behaviour. PROBLEM itself must (exit 2 otherwise). OUT gets the smallest
candidate found; progress goes to stderr. For example, the problem where
`dtopt solve` printed an infinite cost as progress
(tests/bad/solver/cost_infinite_in_limit.json came from gpt2/dp_tp's
problem under its budget, 562 nodes, this way):

  tools/reduce_problem.py big.json small.json -- sh -c \\
    'dtopt solve -j 1 --rounds 2 --stall 8 {} 10 | grep -q 9223372036854775807'

Nodes go in halves, then quarters and so on (Zeller's ddmin without the
complement tests); edges the same; strategies one at a time. Each test
runs CMD once: a run of a few hundred tests is usual."""
import json
import os
import subprocess
import sys
import tempfile


class Reducer:
    def __init__(self, cmd, workdir):
        self.cmd = cmd
        self.path = os.path.join(workdir, "candidate.json")
        self.tests = 0

    def shows(self, problem):
        """Whether CMD says `problem` still shows the behaviour."""
        with open(self.path, "w") as f:
            json.dump({"problem": problem}, f, separators=(",", ":"))
        self.tests += 1
        args = [a.replace("{}", self.path) for a in self.cmd]
        return subprocess.run(args, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0


def keep_nodes(p, keep):
    """p with the nodes `keep` (renumbered in order) and the edges between
    them."""
    index = {v: i for i, v in enumerate(keep)}
    nodes = {k: [p["nodes"][k][v] for v in keep]
             for k in ("intervals", "costs", "usages")}
    pairs, costs = [], []
    for (a, b), c in zip(p["edges"]["nodes"], p["edges"]["costs"]):
        if a in index and b in index:
            pairs.append([index[a], index[b]])
            costs.append(c)
    return dict(p, nodes=nodes, edges={"nodes": pairs, "costs": costs})


def keep_edges(p, keep):
    return dict(p, edges={"nodes": [p["edges"]["nodes"][j] for j in keep],
                          "costs": [p["edges"]["costs"][j] for j in keep]})


def drop_strategy(p, v, s):
    """p without strategy s of node v (its edges' rows or columns too)."""
    p = json.loads(json.dumps(p))
    count = [len(c) for c in p["nodes"]["costs"]]
    for key in ("costs", "usages"):
        del p["nodes"][key][v][s]
    for j, (a, b) in enumerate(p["edges"]["nodes"]):
        m, nb = p["edges"]["costs"][j], count[b]
        rows = [m[r * nb:(r + 1) * nb] for r in range(count[a])]
        if a == v:
            del rows[s]
        if b == v:
            rows = [r[:s] + r[s + 1:] for r in rows]
        p["edges"]["costs"][j] = [x for r in rows for x in r]
    return p


def ddmin(items, shows):
    """The items left after dropping chunks, halving the chunk size
    whenever a pass drops none, while shows(items) holds."""
    chunk = len(items) // 2
    while chunk >= 1:
        i, dropped = 0, False
        while i < len(items):
            candidate = items[:i] + items[i + chunk:]
            if candidate and shows(candidate):
                items, dropped = candidate, True
            else:
                i += chunk
        if not dropped:
            chunk //= 2
    return items


def reduce(p, r):
    while True:
        before = (len(p["nodes"]["costs"]), len(p["edges"]["nodes"]),
                  sum(len(c) for c in p["nodes"]["costs"]))
        nodes = ddmin(list(range(before[0])),
                      lambda keep: r.shows(keep_nodes(p, keep)))
        p = keep_nodes(p, nodes)
        edges = ddmin(list(range(len(p["edges"]["nodes"]))),
                      lambda keep: r.shows(keep_edges(p, keep)))
        p = keep_edges(p, edges)
        for v in range(len(p["nodes"]["costs"])):
            s = 0
            while len(p["nodes"]["costs"][v]) > 1 and \
                    s < len(p["nodes"]["costs"][v]):
                candidate = drop_strategy(p, v, s)
                if r.shows(candidate):
                    p = candidate
                else:
                    s += 1
        after = (len(p["nodes"]["costs"]), len(p["edges"]["nodes"]),
                 sum(len(c) for c in p["nodes"]["costs"]))
        print("%d nodes, %d edges, %d strategies (%d tests)" % (
            *after, r.tests), file=sys.stderr)
        if after == before:
            return p


def main(argv):
    if len(argv) < 5 or argv[3] != "--":
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        problem = json.load(f)["problem"]
    with tempfile.TemporaryDirectory(prefix="reduce_problem.") as work:
        r = Reducer(argv[4:], work)
        if not r.shows(problem):
            print("reduce_problem.py: %s does not show the behaviour (CMD "
                  "exits non-zero)" % argv[1], file=sys.stderr)
            return 2
        small = reduce(problem, r)
    with open(argv[2], "w") as f:
        json.dump({"problem": small}, f, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
