#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""iopddl_eval.py PROBLEM.json[.gz] [PLAN]: score a plan of an IOPDDL contest
problem independently of dtopt. PLAN is a file whose last line is the
strategy vector [i, j, ...] (what `dtopt solve` prints; default: stdin).
Prints one line "cost C peak P limit L feasible yes|no" and exits 0 when the
plan is valid and within the limit, 1 otherwise (wrong length, a strategy
out of range, or over the limit)."""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        return json.load(f)['problem']


def evaluate(problem, plan):
    nodes, edges = problem['nodes'], problem['edges']
    costs, usages, intervals = nodes['costs'], nodes['usages'], nodes['intervals']
    if len(plan) != len(costs):
        raise ValueError('plan has %d entries for %d nodes' % (len(plan), len(costs)))
    cost = 0
    events = {}
    for v, s in enumerate(plan):
        if not 0 <= s < len(costs[v]):
            raise ValueError('node %d: strategy %d out of range' % (v, s))
        cost += costs[v][s]
        start, end = intervals[v]
        if start < end:
            events[start] = events.get(start, 0) + usages[v][s]
            events[end] = events.get(end, 0) - usages[v][s]
    for (a, b), m in zip(edges['nodes'], edges['costs']):
        cost += m[plan[a] * len(costs[b]) + plan[b]]
    peak = live = 0
    for t in sorted(events):
        live += events[t]
        peak = max(peak, live)
    return cost, peak


def main():
    problem = load(sys.argv[1])
    text = open(sys.argv[2]).read() if len(sys.argv) > 2 else sys.stdin.read()
    lines = [l for l in text.splitlines() if l.strip()]
    try:
        plan = json.loads(lines[-1]) if lines else None
        if not isinstance(plan, list):
            raise ValueError('no strategy vector on the last line')
        cost, peak = evaluate(problem, plan)
    except ValueError as e:
        print('invalid plan: %s' % e)
        return 1
    limit = problem.get('usage_limit', -1)
    ok = limit < 0 or peak <= limit
    print('cost %d peak %d limit %d feasible %s' % (cost, peak, limit, 'yes' if ok else 'no'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
