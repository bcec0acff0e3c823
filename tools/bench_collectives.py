#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_collectives.py DTOPT [--np 4] [--max-mib 64]: nccl-tests style
timings of chained vs fused collectives under `mpirun dtopt run`, measured
side by side in one run on a 2x2 mesh (dp, tp):

  all_gather:  gather over tp then dp (two collectives)  vs  one gather on
               the group (dp tp), which gives the same bytes (semantics 4.1)
  all_reduce:  all_reduce over tp then dp                 vs  one all_reduce
               on (dp tp)

For each size (bytes of the gathered output / of the reduced tensor per
rank) it prints time per iteration, algbw = size / time and busbw
(all_gather: algbw (n-1)/n; all_reduce: algbw 2(n-1)/n; n = 4), and the
ratio chain/fused. Each pair is also checked equal with `run --compare`
first. Times are whole-graph seconds per iteration from `dtopt run --iters`
(the max over ranks), so they include the interpreter's per-node cost."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HEAD = '''<?xml version="1.0" encoding="UTF-8"?>
<dtopt-graph version="1" name="{name}" view="local">
  <mesh name="world" shape="2 2" dims="dp tp"/>
  <group name="dp" mesh="world" dims="dp"/>
  <group name="tp" mesh="world" dims="tp"/>
  <group name="dp_tp" mesh="world" dims="dp tp"/>
  <node name="x" op="placeholder"><tensor dtype="float32" shape="{rows} 256"/></node>
'''
AG = ('  <node name="{n}" op="call_function" target="_c10d_functional.all_gather_into_tensor.default">'
      '<arg node="{x}"/><arg int="{size}"/><arg str="{group}"/></node>\n')
AR = ('  <node name="{n}" op="call_function" target="_c10d_functional.all_reduce.default">'
      '<arg node="{x}"/><arg str="sum"/><arg str="{group}"/></node>\n')
WAIT = ('  <node name="w{n}" op="call_function" target="_c10d_functional.wait_tensor.default">'
        '<arg node="{n}"/></node>\n')
TAIL = '  <node name="output" op="output"><arg nodes="{out}"/></node>\n</dtopt-graph>\n'


def graph(kind, links, rows):
    text = HEAD.format(name=kind, rows=rows)
    x = 'x'
    for i, (size, group) in enumerate(links):
        n = 'c%d' % i
        text += (AG if kind == 'ag' else AR).format(n=n, x=x, size=size, group=group)
        text += WAIT.format(n=n)
        x = 'w' + n
    return text + TAIL.format(out=x)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit('failed: %s\n%s%s' % (' '.join(cmd), p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dtopt')
    ap.add_argument('--np', type=int, default=4)
    ap.add_argument('--max-mib', type=int, default=64)
    args = ap.parse_args()
    mpirun = ['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', str(args.np)]
    n = args.np
    tmp = tempfile.mkdtemp()
    print('%-10s %-10s %12s %12s %12s %12s %8s' % (
        'collective', 'size', 'chain us', 'fused us', 'fused algbw', 'fused busbw', 'chain/fused'))
    size = 1024
    while size <= args.max_mib << 20:
        row_bytes = 256 * 4
        for kind in ('ag', 'ar'):
            # ag: size = gathered output per rank; ar: size = tensor per rank
            rows = max(1, size // row_bytes // (n if kind == 'ag' else 1))
            chain = graph(kind, [(2, 'tp'), (2, 'dp')], rows)
            fused = graph(kind, [(4, 'dp_tp')], rows)
            paths = []
            for name, text in (('chain', chain), ('fused', fused)):
                path = os.path.join(tmp, '%s_%s.xml' % (kind, name))
                with open(path, 'w') as f:
                    f.write(text)
                paths.append(path)
            run(mpirun + [args.dtopt, 'run', '--compare'] + paths)
            iters = max(5, min(200, (64 << 20) // size))
            times = []
            for path in paths:
                out = run(mpirun + [args.dtopt, 'run', path, '--iters', str(iters),
                                    '--warmup', '3'])
                times.append(float(re.search(r'time: ([0-9.e+-]+) s/iteration', out).group(1)))
            algbw = size / times[1] / 1e9
            busbw = algbw * ((n - 1) / n if kind == 'ag' else 2 * (n - 1) / n)
            label = 'all_gather' if kind == 'ag' else 'all_reduce'
            print('%-10s %-10s %12.1f %12.1f %10.3f GB/s %8.3f GB/s %8.2f' % (
                label, '%d KiB' % (size >> 10), times[0] * 1e6, times[1] * 1e6,
                algbw, busbw, times[0] / times[1]))
            sys.stdout.flush()
        size *= 4


if __name__ == '__main__':
    main()
