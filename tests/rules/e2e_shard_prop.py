#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""e2e_shard_prop.py: shard-prop end to end, by execution. For one case (a
global-view graph and its input placements on a mesh) it

  1. writes the global graph G (a bundled example, or a real make_fx trace
     from tools/fx_export.py with the case's placements),
  2. runs `dtopt opt -p shard-prop` and then, under mpirun, `dtopt run
     --backend mpi --check` on the result (each rank lowers it for itself
     and compares its outputs with the single-rank run of G),
  3. runs `dtopt opt -p shard-prop,lower-redistribute,fuse-collectives,
     cancel-views,dce --create-groups G -o 'L.{rank}.xml'` and, under
     mpirun, `dtopt run --backend mpi --check --reference G 'L.{rank}.xml'`,
  4. lowers G the same way to one SPMD program for every rank (no
     '{rank}') and checks it the same way.

Both runs must report `check: ok`. Usage:
  e2e_shard_prop.py --dtopt D --mpirun M [--python P] --workdir W CASE
`--list` prints the cases."""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
EXAMPLES = os.path.join(ROOT, 'tools', 'examples')

# name -> (source, mesh, extra exporter args)
CASES = {}
for g in ('mlp_fwd', 'mlp_fwdbwd', 'transformer_fwd', 'transformer_fwdbwd'):
    CASES['example_%s_2x2' % g] = ('example:' + g, '2x2', [])
for model, first in (('mlp', 'x_1'), ('transformer', 'x_1')):
    for backward in (False, True):
        for mesh in ('2x2', '2x4'):
            stem = '%s_%s_%s' % (model, 'fwdbwd' if backward else 'fwd', mesh)
            base = ['--example', model, '--mesh', mesh] + (['--backward'] if backward else [])
            # the exporter's data x tensor parallel placements
            CASES['fx_%s_dp_tp' % stem] = ('fx', mesh, base)
            # data parallel only: the batch split, every weight replicated
            CASES['fx_%s_dp' % stem] = ('fx', mesh, base + ['--placement', first + '=S(0) R'])


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    return p.returncode, p.stdout + p.stderr


def ranks(mesh):
    n = 1
    for s in mesh.split('x'):
        n *= int(s)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dtopt')
    ap.add_argument('--mpirun')
    ap.add_argument('--python', default='/usr/bin/python3')
    ap.add_argument('--workdir')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('case', nargs='?')
    a = ap.parse_args()
    if a.list:
        print('\n'.join(sorted(CASES)))
        return 0
    if a.case not in CASES:
        print('unknown case %r (see --list)' % a.case)
        return 2
    source, mesh, export_args = CASES[a.case]
    work = os.path.join(a.workdir, a.case)
    os.makedirs(work, exist_ok=True)
    g = os.path.join(work, 'global.xml')
    if source.startswith('example:'):
        g = os.path.join(EXAMPLES, source.split(':', 1)[1] + '.xml')
    else:
        rc, out = run([a.python, os.path.join(ROOT, 'tools', 'fx_export.py')] +
                      export_args + ['-o', g])
        if rc != 0:
            print(out)
            print('the exporter failed')
            return 1
    n = str(ranks(mesh))
    mpirun = [a.mpirun, '--allow-run-as-root', '--oversubscribe', '-np', n, a.dtopt, 'run',
              '--backend', 'mpi']
    sp = os.path.join(work, 'shard_prop.xml')
    steps = [
        ('shard-prop', [a.dtopt, 'opt', '-p', 'shard-prop', '--remarks', g, '-o', sp]),
        ('run --check', mpirun + ['--check', sp]),
        ('lower', [a.dtopt, 'opt', '-p',
                   'shard-prop,lower-redistribute,fuse-collectives,cancel-views,dce',
                   '--create-groups', g, '-o', os.path.join(work, 'local.{rank}.xml')]),
        ('run --check --reference', mpirun + ['--check', '--reference', g,
                                              os.path.join(work, 'local.{rank}.xml')]),
        # one SPMD program for every rank (semantics §7)
        ('lower SPMD', [a.dtopt, 'opt', '-p',
                        'shard-prop,lower-redistribute,fuse-collectives,cancel-views,dce',
                        '--create-groups', g, '-o', os.path.join(work, 'spmd.xml')]),
        ('run --check --reference SPMD', mpirun + ['--check', '--reference', g,
                                                   os.path.join(work, 'spmd.xml')]),
    ]
    for what, cmd in steps:
        rc, out = run(cmd)
        print('$ ' + ' '.join(cmd))
        print(out.rstrip())
        if rc != 0 or (what.startswith('run') and 'check: ok' not in out):
            print('FAIL: %s (exit %d)' % (what, rc))
            return 1
    print('ok: %s on %s ranks' % (a.case, n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
