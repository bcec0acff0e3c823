#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""run_models.py: the real-model suite (issue 10 part 4). For every
configuration (a model of models.py under one of its seven placements):

  export           trace with make_fx, write the global-view graph G with
                   tools/fx_export.py (placeholders pinned as the placement
                   prescribes, every gradient and updated parameter pinned to
                   its parameter's placements, the loss replicated)
  verify           dtopt verify G
  spmd             dtopt opt G -o OUT.xml --create-groups (one program for
                   every rank); when refused, the per-rank fallback
  lower            dtopt opt G -o 'OUT.{rank}.xml' --create-groups
  pins             every output of OUT (of rank 0) has the placements the
                   exporter pinned
  check-reference  mpirun -np N dtopt run --check --reference G OUT
  check            mpirun -np N dtopt run --check G
  eager            dtopt run --backend cpu G against torch eager on the same
                   deterministic inputs (runtime/inputs.c's formula)

and, where experts.py has a plan for the placement (all but naive):

  expert-export    the expert's graph E: G with every intermediate pinned
  expert-lower     dtopt opt E -o EOUT.xml --search=greedy (per-rank files
                   where refused)
  expert-plan      for the configurations of experts.TEXTBOOK: E lowered
                   without bucketing (one collective per tensor) has the
                   textbook's collectives
  expert-check-reference, expert-check   as for G
  expert-space     with --report-expert: every pin of E is a strategy
                   dtopt's whole-graph problem for G keeps (given by the
                   node's rules, not pruned; opt --expert-pins), and the
                   problem has a plan keeping them all
  expert-time      dtopt's program (the whole-graph search's) is modelled
                   no slower than E's (`opt --report`'s µs, to 0.01%)

--table ends with the markdown table of dtopt's plan against the expert's
(collectives per kind and group, bytes, bytes sent per rank, modelled µs
from `--report=json`),
the greedy search's plan (`--search=greedy`, lowered only for its report)
beside dtopt's default unless --search picks greedy, and a summary: per
metric (modelled µs, collectives, bytes sent per rank, bytes) the
configurations where dtopt's plan is not above the expert's, then each
where it is, named with what the whole-graph problem scores both plans
(with --report-expert): the trade its search made;
--assert-not-worse-than-expert fails where dtopt's is worse on any of them
(off in the suite: the whole-graph optimizer, dtopt's default, does not
meet it on every configuration yet).
--budget-from-expert lowers the expert's plan first and gives dtopt's
search its per-rank peak as --memory-budget: the expert keeps per-rank
memory down (weights sharded), which a time-only search at these sizes
trades for fewer bytes moved. Stage `budget` then requires dtopt's program
to fit it. Every peak is the program's memory plan as the interpreter runs
it (`opt --report`'s peak after: values and collective buffers, the most
any rank holds). --memory adds a table of the whole-graph search's usage
estimate of each plan (dtopt's and the expert's, the peak of the
`shard-prop:global` remark) against the peak measured by running it (rank
0's `N bytes in all` of `run --summary`), and the ratio.
--opt-arg ARG passes ARG to every `dtopt opt` the suite runs, dtopt's plan,
greedy's and the expert's alike: `--opt-arg=--bandwidth=0.0877` prices
them at 1000 times less link bandwidth, as tensors 1000 times larger
would (bandwidth-bound, where real sizes live).
--write-budgets FILE writes each expert plan's per-rank peak, a line
`model/placement BYTES` per configuration that has one: the budgets
--budget-from-expert gives, for tools/bench_global.py --budget and
tools/usage_fidelity.py --budget.

A stage fails with a one-line reason; stages after a failed one that need
its result are not reached. With --expected FILE the run passes only when
the failing (configuration, stage) pairs are exactly those FILE lists: a
listed pair that passes fails the run too, so the list shrinks as fixes
land (--update-expected FILE rewrites it from this run).

usage: run_models.py DTOPT [--mpirun M] [--workdir W] [--config PATTERN]...
                     [--table] [--expected FILE] [--update-expected FILE]
                     [--search S] [--no-expert] [--budget-from-expert]
                     [--assert-not-worse-than-expert] [--memory]
                     [--report-expert] [--no-check] [--write-budgets FILE]
                     [--opt-arg ARG]...
       run_models.py - --list      (the models, one a line)
PATTERN: a model (gpt2), a placement (fsdp_tp) or model/placement.
Needs Debian's /usr/bin/python3 with python3-torch.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [HERE, os.path.join(ROOT, "tools"),
                os.path.join(ROOT, "tests", "runtime")]

import torch  # noqa: E402

import check_torch  # noqa: E402  (input_value: runtime/inputs.c's formula)
import experts  # noqa: E402
import fx_export  # noqa: E402
import models  # noqa: E402

STAGES = ("export", "verify", "spmd", "lower", "budget", "pins",
          "check-reference",
          "check", "eager", "expert-export", "expert-lower", "expert-plan",
          "expert-check-reference", "expert-check", "expert-space",
          "expert-time")
# Eager tolerance: |dtopt - torch| <= EAGER_TOL * max(1, max |torch|) per
# output (float32 sums in a different order).
EAGER_TOL = 1e-4
_ROW_RE = re.compile(r"^\s*\d+\s+\S+\s+\S+\s+(bitwise|equal|close|MISMATCH)"
                     r"\s+(\S+)")
_KIND = {"all_gather": "ag", "reduce_scatter": "rs", "all_reduce": "ar",
         "all_to_all": "a2a"}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def opt_cmd(a, graph, out, *flags, textbook=False):
    """`dtopt opt GRAPH -o OUT --create-groups FLAGS...`, then every
    --opt-arg: each plan the suite lowers (dtopt's, greedy's, the
    expert's) is priced alike; not the textbook check (stage
    expert-plan), whose counts are the default model's."""
    return [a.dtopt, "opt", graph, "-o", out, "--create-groups", *flags,
            *([] if textbook else a.opt_arg)]


def first_error(out):
    """The first 'error:' line of `out` (without its file:line prefix),
    else its last non-empty line."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()
    return lines[-1] if lines else "(no output)"


def check_summary(rc, out):
    """(ok, max abs error, reason) of a `dtopt run --check` output."""
    errs = [float(m.group(2)) for m in map(_ROW_RE.match, out.splitlines())
            if m and re.match(r"^[-+0-9.eEinfa]+$", m.group(2))]
    worst = max(errs) if errs else None
    if rc == 0 and "check: ok" in out:
        return True, worst, ""
    m = re.search(r"check: MISMATCH \((\d+ of \d+) outputs differ", out)
    if m:
        return False, worst, "MISMATCH: %s outputs differ, max abs err %.3g" \
            % (m.group(1), worst or 0)
    return False, worst, first_error(out)


def output_placements(path):
    """The placements of each output of the lowered graph at `path` (None
    where an output has no <sharding>)."""
    nodes = ET.parse(path).getroot().findall("node")
    shard = {n.get("name"): n.find("sharding") for n in nodes}
    (out,) = [n for n in nodes if n.get("op") == "output"]
    return [None if shard.get(v) is None else
            " ".join(shard[v].get("placements").split()) +
            (" order=" + shard[v].get("order") if shard[v].get("order")
             else "")
            for v in out.find("arg").get("nodes").split()]


def pins_reason(path, wanted):
    """'' when the outputs of `path` carry the placements `wanted`, else
    the first that does not."""
    got = output_placements(path)
    if len(got) != len(wanted):
        return "%d outputs, %d pinned" % (len(got), len(wanted))
    for i, (g, w) in enumerate(zip(got, wanted)):
        if g != w:
            return "output %d has placements %s, pinned to %s" % (i, g, w)
    return ""


# The default global-view pipeline without bucket-collectives and
# schedule-collectives (the expert-plan stage's textbook counts).
UNBUCKETED_PIPELINE = ("verify,shape-infer,shard-prop,lower-redistribute,"
                       "fuse-collectives,cancel-views,dce")


def peak_after(out):
    """The per-rank peak of the program the passes wrote, as the
    interpreter runs it (bytes), from the `--report=json` memory line of
    `out`, None without one."""
    for ln in out.splitlines():
        if ln.startswith('{"memory"'):
            return int(json.loads(ln)["memory"]["peak_after"])
    return None


def global_estimate(out):
    """The whole-graph plan's peak usage (bytes) from the last
    `shard-prop:global` remark of `out` (the kept plan's where opt planned
    again, opt:replan), None without one."""
    found = re.findall(r"peak (\d+) bytes per rank \[shard-prop:global\]", out)
    return int(found[-1]) if found else None


def measured_peak(mpirun, low):
    """Rank 0's memory at peak (bytes: values and collective buffers) of a
    plain `run --summary` of the lowered graph `low`, None when it does not
    run."""
    rc, out = run(mpirun + ["--summary", low])
    m = re.search(r"(\d+) bytes in all", out)
    return int(m.group(1)) if rc == 0 and m else None


def report(out):
    """({'ag:tp': count, ...}, total bytes, total modelled µs, total bytes
    sent per rank) from the first `--report=json` line of `out`."""
    for ln in out.splitlines():
        if ln.startswith('{"rows"'):
            rep = json.loads(ln)
            return ({"%s:%s" % (_KIND.get(r["kind"], r["kind"]), r["group"]):
                     r["count_after"] for r in rep["rows"]
                     if r["count_after"]},
                    rep["total"]["bytes_after"],
                    rep["total"]["time_us_after"],
                    rep["total"]["sent_after"])
    return {}, 0, 0.0, 0


# ---------------------------------------------------------------------------
# torch eager on dtopt's inputs


def dtopt_inputs(model, seed=0):
    """The batch inputs and parameters dtopt's runtime generates for the
    graph's placeholders (name, global row-major index), as torch tensors;
    parameters require grad."""
    batch, params = models.placeholder_names(model)
    maxes = models.input_max(model)
    out = []
    for name, ex in zip(batch + params, models.example_inputs(model)):
        vals = [check_torch.input_value(seed, name, i, ex.dtype,
                                        maxes.get(name, 2))
                for i in range(ex.numel())]
        t = torch.tensor(vals, dtype=torch.float64).to(ex.dtype).view(
            ex.shape)
        out.append(t.requires_grad_() if name in params else t)
    return out


def eager_outputs(model):
    return [o.detach() for o in
            models.training_step(model)(*dtopt_inputs(model))]


def compare_eager(dtopt, g, work, expected):
    """(ok, max abs error, reason): dtopt's CPU run of g against torch."""
    out_dir = os.path.join(work, "eager")
    rc, out = run([dtopt, "run", "--backend", "cpu", g, "--out", out_dir])
    if rc != 0:
        return False, None, first_error(out)
    with open(os.path.join(out_dir, "index.json")) as f:
        outs = json.load(f)["ranks"][0]["outputs"]
    if len(outs) != len(expected):
        return False, None, "%d outputs, torch has %d" % (len(outs),
                                                          len(expected))
    worst, bad = 0.0, []
    for o, ref in zip(outs, expected):
        with open(os.path.join(out_dir, o["file"]), "rb") as f:
            raw = bytearray(f.read())
        got = torch.frombuffer(raw, dtype=getattr(torch, o["dtype"])) \
            if raw else torch.empty(0, dtype=getattr(torch, o["dtype"]))
        if list(o["shape"]) != list(ref.shape) or got.dtype != ref.dtype:
            bad.append("%s: %s %s, torch %s %s" % (
                o["name"], o["dtype"], o["shape"], ref.dtype,
                list(ref.shape)))
            continue
        err = (got.view(ref.shape).double() - ref.double()).abs().max().item() \
            if ref.numel() else 0.0
        worst = max(worst, err)
        scale = max(1.0, ref.abs().max().item() if ref.numel() else 0.0)
        if not err <= EAGER_TOL * scale:
            bad.append(o["name"])
    if bad:
        return False, worst, "differs from torch eager (max abs err %.3g): " \
            "%s" % (worst, ", ".join(bad[:4]))
    return True, worst, ""


# ---------------------------------------------------------------------------
# One configuration


class Result:
    def __init__(self, config):
        self.config = config
        self.failed = {}  # stage -> reason
        self.passed = set()
        self.collectives = {}
        self.bytes, self.time_us = 0, 0.0
        self.sent = 0  # bytes each rank sends (opt --report's sent per rank)
        self.expert = None  # Result of the expert plan, when there is one
        self.peak = None  # per-rank peak of the plan (liveness estimate)
        self.budget = None  # the --memory-budget dtopt's plan was given
        self.unmet_pins = 0  # expert pins reached by a redistribution
        self.greedy = None  # (collectives, bytes, µs) of --search=greedy
        self.errors = {}  # stage -> max abs error
        self.estimate = None  # the global search's peak usage of the plan
        self.measured = None  # the interpreter's per-rank peak (rank 0)
        self.space = None  # --report-expert: the expert's plan in the
        # whole-graph problem (kept, pruned, absent, score µs, plan µs)
        self.lost = []  # --report-expert: 'node placements: why' lines

    def done(self, stage, ok, reason="", error=None):
        if ok:
            self.passed.add(stage)
        else:
            self.failed[stage] = reason or "failed"
        if error is not None:
            self.errors[stage] = error
        return ok


def run_config(a, model, placement, gm, inputs, expected):
    config = "%s/%s" % (model, placement)
    res = Result(config)
    work = os.path.join(a.workdir, model + "_" + placement)
    os.makedirs(work, exist_ok=True)
    g = os.path.join(work, "global.xml")
    shape, dims, pl, outs = models.config_placements(model, placement)
    try:
        fx_export.export(gm, inputs, mesh_shape=shape, mesh_dims=dims,
                         placements=pl, output_placements=outs, path=g,
                         name=model + "_" + placement)
        res.done("export", True)
    except fx_export.ExportError as e:
        res.done("export", False, str(e).splitlines()[0])
        return res
    rc, out = run([a.dtopt, "verify", g])
    if not res.done("verify", rc == 0, first_error(out)):
        return res

    nranks = 1
    for s in shape:
        nranks *= s
    mpirun = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
              str(nranks), a.dtopt, "run", "--backend", "mpi", "--check"]
    search = ["--search=" + a.search] if a.search else []
    has_expert = placement in experts.PLANS and not a.no_expert
    if has_expert and a.budget_from_expert:
        # The expert's plan first: its per-rank peak is dtopt's budget.
        res.expert = run_expert(a, model, placement, gm, inputs, mpirun,
                                work, res)
        if res.expert.peak is not None:
            res.budget = res.expert.peak
            search.append("--memory-budget=%d" % res.budget)
    if a.memory:
        search.append("--remarks")
    if has_expert and a.report_expert:
        pins = os.path.join(work, "expert.pins")
        try:
            got = experts.export(gm, inputs, model, placement,
                                 os.path.join(work, "expert.xml"))
            fx_export.write_atomic(pins, "".join(
                "%s %s\n" % kv for kv in sorted(got.items())))
            search.append("--expert-pins=" + pins)
            if "--remarks" not in search:
                search.append("--remarks")
        except (fx_export.ExportError, ValueError):
            pass  # expert-export reports it
    low = os.path.join(work, "out.xml")
    rc, out = run(opt_cmd(a, g, low, "--report=json", *search))
    if not res.done("spmd", rc == 0, "SPMD refused: " + first_error(out)):
        low = os.path.join(work, "out.{rank}.xml")
        rc, out = run(opt_cmd(a, g, low, "--report=json", *search))
        res.done("lower", rc == 0, first_error(out))
    lowered = rc == 0
    if lowered:
        res.space, res.lost = expert_space(out)
        if res.space:  # every expert pin a strategy the problem keeps,
            # and a plan keeping them all
            res.done("expert-space", not res.lost and res.space[3] is not None,
                     "expert pins lost: " + "; ".join(res.lost) if res.lost
                     else "no plan keeps every expert pin")
        res.collectives, res.bytes, res.time_us, res.sent = report(out)
        res.peak = peak_after(out)
        if res.budget is not None:
            res.done("budget", res.peak is not None and
                     res.peak <= res.budget, "peak %s bytes per rank over "
                     "the budget %d" % (res.peak, res.budget))
        if a.memory:
            res.estimate = global_estimate(out)
            res.measured = measured_peak(mpirun[:-1], low)
        if a.search not in ("greedy", "pq"):  # the node-by-node plan beside
            # lowered as dtopt's was (one program, or per-rank files)
            grc, gout = run(opt_cmd(
                a, g, os.path.join(work, "greedy" + os.path.basename(
                    low)[len("out"):]), "--report=json", "--search=greedy"))
            res.greedy = report(gout) if grc == 0 else None
        why = pins_reason(low.replace("{rank}", "0"), outs)
        res.done("pins", not why, why)
        if not a.no_check:
            ok, err, why = check_summary(*run(mpirun + ["--reference", g,
                                                        low]))
            res.done("check-reference", ok, why, err)
    if not a.no_check:
        ok, err, why = check_summary(*run(mpirun + [g]))
        res.done("check", ok, why, err)
        ok, err, why = compare_eager(a.dtopt, g, work, expected)
        res.done("eager", ok, why, err)
    if has_expert and not a.budget_from_expert:
        res.expert = run_expert(a, model, placement, gm, inputs, mpirun, work,
                                res)
    if lowered and "expert-lower" in res.passed and \
            a.search in (None, "global"):
        e = res.expert
        res.done("expert-time", res.time_us <= e.time_us * 1.0001,
                 "modelled %.2f µs against the expert's %.2f"
                 % (res.time_us, e.time_us))
    return res


def run_expert(a, model, placement, gm, inputs, mpirun, work, res):
    """The expert plan of `placement` (experts.py) for `model`: export the
    graph with every intermediate pinned, lower it with the greedy search
    (node by node, it moves a value only where a pin asks: the pins are the
    plan; the whole-graph search may realise them otherwise, e.g. gpt2/dp's
    gradients with 2 all-gathers for one all-reduce), check it. Its stages are
    recorded in `res` (expert-*); returns a Result holding its
    collectives."""
    ex = Result(res.config)
    g = os.path.join(work, "expert.xml")
    try:
        experts.export(gm, inputs, model, placement, g)
        res.done("expert-export", True)
    except (fx_export.ExportError, ValueError) as e:
        res.done("expert-export", False, str(e).splitlines()[0])
        return ex
    low = os.path.join(work, "expert.out.xml")
    flags = ("--report=json", "--remarks", "--search=greedy")
    rc, out = run(opt_cmd(a, g, low, *flags))
    if rc != 0:  # per-rank files where one program is refused
        low = os.path.join(work, "expert.out.{rank}.xml")
        rc, out = run(opt_cmd(a, g, low, *flags))
    if not res.done("expert-lower", rc == 0, first_error(out)):
        return ex
    ex.collectives, ex.bytes, ex.time_us, ex.sent = report(out)
    ex.peak = peak_after(out)
    if a.memory:
        ex.estimate = global_estimate(run(
            opt_cmd(a, g, os.devnull, "--search=global", "--remarks"))[1])
        ex.measured = measured_peak(mpirun[:-1], low)
    res.unmet_pins = out.count("[shard-prop:pin]")
    want = experts.TEXTBOOK.get(res.config)
    if want:
        # The textbook counts one collective per tensor: compare the
        # lowering before bucket-collectives merges independent ones.
        rc_u, out_u = run(opt_cmd(a, g, os.devnull, "--report=json",
                                  "--search=greedy", "-p",
                                  UNBUCKETED_PIPELINE, textbook=True))
        got = format_collectives(report(out_u)[0]) if rc_u == 0 else \
            "no lowering (%s)" % first_error(out_u)
        res.done("expert-plan", got == want, "the expert plan lowers to %s, "
                 "the textbook's is %s" % (got, want))
    if a.no_check:
        return ex
    ok, err, why = check_summary(*run(mpirun + ["--reference", g, low]))
    res.done("expert-check-reference", ok, why, err)
    ok, err, why = check_summary(*run(mpirun + [g]))
    res.done("expert-check", ok, why, err)
    return ex


_SPACE_RE = re.compile(r"expert pins: (\d+) kept, (\d+) pruned, (\d+) given "
                       r"by no strategy; the best plan keeping the kept ones "
                       r"costs (?:([0-9.]+) us|no plan)[^,]*, the plan "
                       r"([0-9.]+) us")
_LOST_RE = re.compile(r"node '(\S+)': the expert's (.*) is (pruned|given by "
                      r"no strategy of its rules)")


def expert_space(out):
    """((kept, pruned, absent, score µs or None, plan µs), ['node pl: why'])
    from the shard-prop:expert remarks of `out` (None, [] without)."""
    m = _SPACE_RE.search(out)
    if not m:
        return None, []
    space = (int(m.group(1)), int(m.group(2)), int(m.group(3)),
             float(m.group(4)) if m.group(4) else None, float(m.group(5)))
    lost = ["%s %s: %s" % (x.group(1), x.group(2),
                           "pruned" if x.group(3) == "pruned" else "no rule")
            for x in _LOST_RE.finditer(out)]
    return space, lost


def print_space(results):
    """The --report-expert table: per configuration, the expert's pins
    kept / pruned / given by no strategy in dtopt's problem, the score of
    the best plan keeping the kept ones and dtopt's plan (modelled µs);
    then every pin lost."""
    print("| config | expert pins kept | pruned | no strategy | best plan "
          "keeping them µs | dtopt's plan µs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        if r.space:
            k, p, n, score, plan = r.space
            print("| %s | %d | %d | %d | %s | %.2f |" % (
                r.config, k, p, n, "-" if score is None else "%.2f" % score,
                plan))
    for r in results:
        for ln in r.lost:
            print("  %-16s %s" % (r.config, ln))


# ---------------------------------------------------------------------------
# Expected failures and the table


def read_expected(path):
    """{(config, stage): reason} from FILE: `config stage reason...` lines,
    '#' comments."""
    listed = {}
    with open(path) as f:
        for n, ln in enumerate(f, 1):
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            parts = ln.split(None, 2)
            if len(parts) < 2 or parts[1] not in STAGES:
                sys.exit("%s:%d: error: want 'MODEL/PLACEMENT STAGE reason' "
                         "with STAGE one of %s" % (path, n, " ".join(STAGES)))
            listed[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    return listed


def compare_expected(results, listed):
    """Messages for each unlisted failure and each listed stage that passed
    (of the configurations run)."""
    msgs = []
    for r in results:
        for stage, why in r.failed.items():
            if (r.config, stage) not in listed:
                msgs.append("%s: %s failed and is not in the expected list: "
                            "%s" % (r.config, stage, why))
        for stage in r.passed:
            if (r.config, stage) in listed:
                msgs.append("%s: %s passes now: remove it from the expected "
                            "list" % (r.config, stage))
    return msgs


def write_expected(path, results):
    """Rewrite FILE with this run's failures; the entries of configurations
    not run are kept."""
    run_now = {r.config for r in results}
    kept = {} if not os.path.exists(path) else {
        k: v for k, v in read_expected(path).items() if k[0] not in run_now}
    fails = {(r.config, s): r.failed[s][:160] for r in results
             for s in r.failed}
    fails.update(kept)
    order = ["%s/%s" % c for c in models.CONFIGS]
    lines = ["# Expected failures of tests/models/run_models.py: "
             "MODEL/PLACEMENT STAGE reason.",
             "# The suite fails when a listed stage passes or an unlisted "
             "one fails;",
             "# regenerate with run_models.py DTOPT --update-expected FILE."]
    for (config, stage), why in sorted(fails.items(), key=lambda kv: (
            order.index(kv[0][0]) if kv[0][0] in order else len(order),
            kv[0][0], STAGES.index(kv[0][1]))):
        lines.append("%s %s %s" % (config, stage, why))
    fx_export.write_atomic(path, "\n".join(lines) + "\n")


def _cell(r, stage):
    if stage in r.failed:
        return "FAIL"
    if stage not in r.passed:
        return "-"
    err = r.errors.get(stage)
    return "ok" if err is None else "ok %.1e" % err


def print_table(results):
    head = ("config", "verify", "spmd", "collectives (kind:group=count)",
            "check-ref", "check", "eager")
    rows = []
    for r in results:
        check = {s: _cell(r, s) for s in STAGES}
        for s in ("check-reference", "check", "eager"):
            if s in r.failed and s in r.errors:
                check[s] = "FAIL %.1e" % r.errors[s]
        spmd = "yes" if "spmd" in r.passed else (
            "no" if "spmd" in r.failed else "-")
        coll = " ".join("%s=%d" % kv for kv in sorted(r.collectives.items()))
        rows.append((r.config, check["verify"] if "export" in r.passed
                     else "export FAIL", spmd, coll or "-",
                     check["check-reference"], check["check"],
                     check["eager"]))
    widths = [max(len(str(x[i])) for x in rows + [head])
              for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    print("\nfailures:")
    for r in results:
        for stage in STAGES:
            if stage in r.failed:
                print("  %-16s %-15s %s" % (r.config, stage, r.failed[stage]))


# ---------------------------------------------------------------------------
# dtopt against the expert plans


def format_collectives(coll):
    """{'ar:tp': 4, 'ag:tp': 2} -> '4 AR[tp] + 2 AG[tp]' (all-reduce,
    reduce-scatter, all-gather, all-to-all; '-' for none)."""
    order = {"ar": 0, "rs": 1, "ag": 2, "a2a": 3}
    items = sorted(coll.items(), key=lambda kv: (
        order.get(kv[0].split(":")[0], 9), kv[0]))
    return " + ".join("%d %s[%s]" % (n, k.split(":")[0].upper(),
                                     k.split(":", 1)[1])
                      for k, n in items) or "-"


def compare_rows(results):
    """(config, dtopt Result, expert Result, checked) for each
    configuration run with an expert plan that lowered."""
    rows = []
    for r in results:
        if r.expert is None or "expert-lower" not in r.passed or (
                "spmd" not in r.passed and "lower" not in r.passed):
            continue
        checked = all(s in r.passed for s in ("expert-check",
                                              "expert-check-reference"))
        rows.append((r.config, r, r.expert, checked))
    return rows


def print_comparison(results, search):
    """The markdown table: per configuration, dtopt's collectives, bytes,
    bytes sent per rank, modelled time and per-rank peak (with the budget it was given, if
    any) against the expert plan's."""
    print("| config | dtopt (%s): collectives | bytes | sent | µs "
          "| peak (budget) | greedy: collectives / bytes / µs "
          "| expert: collectives | bytes | sent | µs | peak "
          "| expert checked |" % (search or "default search"))
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: "
          "| ---: | ---: | --- |")
    for config, d, e, checked in compare_rows(results):
        greedy = "-" if d.greedy is None else "%d / %d / %.1f" % (
            sum(d.greedy[0].values()), d.greedy[1], d.greedy[2])
        print("| %s | %s | %d | %d | %.1f | %s%s | %s | %s | %d | %d | %.1f "
              "| %s | %s |"
              % (config, format_collectives(d.collectives), d.bytes, d.sent,
                 d.time_us, d.peak,
                 "" if d.budget is None else " (%d)" % d.budget, greedy,
                 format_collectives(e.collectives), e.bytes, e.sent,
                 e.time_us, e.peak, "yes" if checked else "NO"))


def _ratio(r):
    if r.estimate is None or not r.measured:
        return "-"
    return "%.2f" % (r.estimate / r.measured)


def print_memory(results):
    """The markdown table of --memory: per configuration and plan, the
    global search's usage estimate against the measured per-rank peak."""
    print("| config | dtopt: estimate | measured | ratio | expert: estimate "
          "| measured | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        e = r.expert or Result(r.config)
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r.config, r.estimate, r.measured, _ratio(r), e.estimate,
            e.measured, _ratio(e)))


# The metrics dtopt's plan is held to against the expert's, in the order
# the summary names them: (name, value of a Result, slack on the expert's).
# Bytes sent per rank is the traffic the cost model charges (an all_reduce
# sends twice its bytes: cost_model.h dt_comm_sent); bytes is each
# collective's own size.
EXPERT_METRICS = (("µs", lambda r: r.time_us, 1.0001),
                  ("collectives", lambda r: sum(r.collectives.values()), 1),
                  ("bytes sent", lambda r: r.sent, 1),
                  ("bytes", lambda r: r.bytes, 1))


def above(metric, d, e):
    """Whether dtopt's plan d is above the expert's e in `metric` (an
    entry of EXPERT_METRICS)."""
    _, get, slack = metric
    return get(d) > get(e) * slack


def metrics_worse(d, e):
    """[(metric, dtopt's, expert's)] where dtopt's plan d is above the
    expert's e."""
    return [(m[0], m[1](d), m[1](e)) for m in EXPERT_METRICS
            if above(m, d, e)]


def worse_than_expert(results):
    """Messages for each configuration where dtopt's plan moves more
    (collectives, bytes or modelled time) than the expert's."""
    msgs = []
    for config, d, e, _ in compare_rows(results):
        worse = metrics_worse(d, e)
        if worse:
            msgs.append("%s: dtopt is worse than the expert in %s"
                        % (config, ", ".join("%s (%s against %s)" % w
                                             for w in worse)))
    return msgs


def print_expert_summary(results):
    """Per metric, the configurations where dtopt's plan is not above the
    expert's; then each one where it is, with what the whole-graph problem
    scores both plans (compute and communication; with --report-expert):
    the trade the search made."""
    rows = compare_rows(results)
    if not rows:
        return
    counts = ["%s %d" % (m[0], sum(1 for _, d, e, _ in rows
                                   if not above(m, d, e)))
              for m in EXPERT_METRICS]
    print("dtopt's plan not above the expert's, of %d configurations: %s; "
          "in all of them %d" % (len(rows), ", ".join(counts),
                                 sum(1 for _, d, e, _ in rows
                                     if not metrics_worse(d, e))))
    for config, d, e, _ in rows:
        worse = metrics_worse(d, e)
        if not worse:
            continue
        scored = ""
        if d.space and d.space[3] is not None:
            scored = ("; the problem scores dtopt's plan %.2f µs, the best "
                      "keeping the expert's pins %.2f" % (d.space[4],
                                                         d.space[3]))
        print("  %-16s above in %s%s" % (
            config, ", ".join("%s (%g against %g)" % w for w in worse),
            scored))


# ---------------------------------------------------------------------------


def selected(patterns):
    out = []
    for model, placement in models.CONFIGS:
        cfg = "%s/%s" % (model, placement)
        if not patterns or any(p in (model, placement, cfg) for p in patterns):
            out.append((model, placement))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtopt")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--workdir", help="where graphs go (default: a "
                    "temporary folder, removed after)")
    ap.add_argument("--config", action="append", default=[],
                    metavar="PATTERN")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--list", action="store_true",
                    help="print the model names and exit")
    ap.add_argument("--search", metavar="S", help="dtopt opt --search=S "
                    "for dtopt's plan (default: dtopt's default)")
    ap.add_argument("--budget-from-expert", action="store_true",
                    help="give dtopt's plan --memory-budget = the per-rank "
                    "peak of the configuration's expert plan (its liveness "
                    "estimate, `opt --report`); configurations without an "
                    "expert plan run without a budget")
    ap.add_argument("--memory", action="store_true",
                    help="print the global search's usage estimate of each "
                    "plan against the measured per-rank peak")
    ap.add_argument("--no-expert", action="store_true",
                    help="skip the expert plans (experts.py)")
    ap.add_argument("--assert-not-worse-than-expert", action="store_true",
                    help="fail where dtopt's plan has more collectives, "
                    "bytes or modelled time than the expert's")
    ap.add_argument("--report-expert", action="store_true",
                    help="with --search=global: where the expert plan's "
                    "pins went in dtopt's problem (kept, pruned, given by "
                    "no strategy) and what the problem scores the best plan "
                    "keeping them (opt --expert-pins)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the execution checks (check-reference, "
                    "check, eager and the expert's): tables only")
    ap.add_argument("--write-budgets", metavar="FILE",
                    help="write each expert plan's per-rank peak as "
                    "'model/placement BYTES' lines")
    ap.add_argument("--opt-arg", action="append", default=[], metavar="ARG",
                    help="pass ARG to every `dtopt opt` the suite runs "
                    "(dtopt's, greedy's and the expert's plans alike), "
                    "e.g. --opt-arg=--bandwidth=0.0877")
    ap.add_argument("--expected", metavar="FILE")
    ap.add_argument("--update-expected", metavar="FILE")
    a = ap.parse_args()
    if a.list:
        print("\n".join(models.MODELS))
        return 0
    configs = selected(a.config)
    if not configs:
        ap.error("no configuration matches %s (models: %s; placements: %s)"
                 % (a.config, " ".join(models.MODELS),
                    " ".join(models.PLACEMENTS)))
    listed = read_expected(a.expected) if a.expected else None
    tmp = None
    if not a.workdir:
        tmp = tempfile.TemporaryDirectory(prefix="dtopt-models.")
        a.workdir = tmp.name
    start = time.time()
    results, traced = [], {}
    for model, placement in configs:
        if model not in traced:
            gm, inputs = models.trace(model)
            for n in gm.graph.nodes:  # integer inputs' range for dtopt run
                if n.name in models.input_max(model):
                    n.meta["dtopt.input_max"] = str(
                        models.input_max(model)[n.name])
            traced[model] = (gm, inputs, eager_outputs(model))
        t0 = time.time()
        r = run_config(a, model, placement, *traced[model])
        results.append(r)
        if not a.table:
            vs = "" if r.expert is None else "; collectives dtopt %d, " \
                "expert %d, %d expert pins moved to" % (
                    sum(r.collectives.values()),
                    sum(r.expert.collectives.values()), r.unmet_pins)
            vs += "" if r.greedy is None else "; dtopt %d/%d B/%.1f µs, " \
                "greedy %d/%d B/%.1f µs" % (
                    sum(r.collectives.values()), r.bytes, r.time_us,
                    sum(r.greedy[0].values()), r.greedy[1], r.greedy[2])
            print("%-16s %s (%.1f s%s)" % (
                r.config, "ok" if not r.failed else "failed: " + ", ".join(
                    r.failed), time.time() - t0, vs), flush=True)
    if a.table:
        print_table(results)
        print()
        print_comparison(results, a.search)
        print()
        print_expert_summary(results)
    if a.memory:
        print()
        print_memory(results)
    if a.report_expert:
        print()
        print_space(results)
    print("%d configurations in %.1f s" % (len(results), time.time() - start))
    if a.update_expected:
        write_expected(a.update_expected, results)
    if a.write_budgets:
        with open(a.write_budgets, "w") as f:
            for r in results:
                if r.expert is not None and r.expert.peak is not None:
                    f.write("%s %d\n" % (r.config, r.expert.peak))
    worse = worse_than_expert(results) if \
        a.assert_not_worse_than_expert else []
    for m in worse:
        print("FAIL: " + m)
    if listed is None:
        return 0 if all(not r.failed for r in results) and not worse else 1
    msgs = compare_expected(results, listed) + worse
    for m in msgs:
        print("FAIL: " + m)
    return 1 if msgs else 0


if __name__ == "__main__":
    sys.exit(main())
