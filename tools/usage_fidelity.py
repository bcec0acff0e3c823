#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""usage_fidelity.py: the whole-graph problem's per-rank memory estimate
(the shard-prop:global remark's `peak N bytes per rank`) against what the
interpreter's memory plan of the lowered, unbucketed program holds (`run
--summary`'s `T bytes in all`), per configuration of the models suite.

  tools/usage_fidelity.py build/tools/dtopt /tmp/gw [--budget FILE] [-j N]

/tmp/gw is run_models.py's --workdir (<model>_<placement>/{global,expert}.xml).
--budget reads 'config budget' lines (e.g. gpt2/dp 205764) and adds the
runs under --memory-budget."""
import argparse, concurrent.futures as cf, os, re, subprocess, sys, tempfile

PASSES = ("verify,shape-infer,shard-prop,lower-redistribute,"
          "fuse-collectives,cancel-views,dce")
TMP = tempfile.mkdtemp(prefix="usage_fidelity_")
MODELS = ["gpt2", "llama", "mlp_sgd", "mixer"]
PLACEMENTS = ["dp", "fsdp", "tp", "dp_tp", "fsdp_tp", "3d"]


def one(dtopt, work, model, placement, plan, budget):
    src = os.path.join(work, f"{model}_{placement}", f"{plan}.xml")
    tag = f"{model}_{placement}_{plan}_{budget or 0}"
    out = os.path.join(TMP, f"{tag}.xml")
    cmd = [dtopt, "opt", src, "-o", out, "--create-groups",
           f"--passes={PASSES}", "--remarks"]
    if budget:
        cmd.append(f"--memory-budget={budget}")
    p = subprocess.run(cmd, capture_output=True, text=True)
    # The last remark: the kept plan's, where opt planned again (opt:replan).
    found = re.findall(r"peak (\d+) bytes per rank \[shard-prop:global\]",
                       p.stderr)
    if not found:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        return (model, placement, plan, budget, None, None, err[-60:])
    est = int(found[-1])
    n = "8" if placement == "3d" else "4"
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe",
                        "-np", n, dtopt, "run", "--backend", "mpi",
                        "--summary", out], capture_output=True, text=True)
    m = re.search(r"memory: values (\d+) bytes.*collective buffers (\d+)"
                  r" bytes at peak, (\d+) bytes in all", r.stdout)
    os.unlink(out)
    if not m:
        return (model, placement, plan, budget, est, None, "run failed")
    return (model, placement, plan, budget, est, int(m.group(3)), "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dtopt")
    ap.add_argument("work")
    ap.add_argument("--budget")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", help="regex on model/placement")
    a = ap.parse_args()
    budgets = {}
    if a.budget:
        for line in open(a.budget):
            f = line.split()
            if len(f) == 2:
                budgets[f[0]] = int(f[1])
    jobs = []
    for model in MODELS:
        for pl in PLACEMENTS:
            name = f"{model}/{pl}"
            if a.only and not re.search(a.only, name):
                continue
            for plan in ["global", "expert"]:
                jobs.append((model, pl, plan, None))
                if name in budgets:
                    jobs.append((model, pl, plan, budgets[name]))
    with cf.ThreadPoolExecutor(a.j) as ex:
        res = list(ex.map(lambda j: one(a.dtopt, a.work, *j), jobs))
    print("| config | plan | budget | estimate | measured | est/meas |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    exact = off = 0
    for model, pl, plan, budget, est, meas, err in res:
        ratio = f"{est / meas:.3f}" if est and meas else err
        if est and meas:
            exact += est == meas
            off += abs(est / meas - 1) > 0.03
        print(f"| {model}/{pl} | {plan} | {budget or '-'} | {est or '-'} "
              f"| {meas or '-'} | {ratio} |")
    print(f"{exact} exact, {off} off by more than 3%, of {len(res)}")


if __name__ == "__main__":
    main()
