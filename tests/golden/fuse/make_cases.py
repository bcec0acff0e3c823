#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_cases.py: writes the fuse-collectives golden cases of this folder
(CASE.xml and its CASE.xml.run sidecar; long options cannot sit in XML
comments). Each case is a small local-view graph; RUN: lines print the
remarks and the optimized graph, EXEC: lines name the `dtopt opt` flags
whose result tests/fusion/run_exec_goldens.py executes against the input
under mpirun (every positive case has one). Re-run after editing, then
UPDATE=1 the expectations and review them.

    python3 tests/golden/fuse/make_cases.py"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
AG = '_c10d_functional.all_gather_into_tensor.default'
RS = '_c10d_functional.reduce_scatter_tensor.default'
AR = '_c10d_functional.all_reduce.default'
WAIT = '_c10d_functional.wait_tensor.default'


class Graph:
    def __init__(self, name, shape, dims, groups, comment):
        self.name, self.shape, self.dims = name, shape, dims
        self.comment = comment
        self.groups = [g.split() for g in groups]
        self.nodes = []
        self.count = 0

    def size(self, group):
        dims = group.split('_')
        n = 1
        for d in dims:
            n *= self.shape[self.dims.index(d)]
        return n

    def fresh(self, base):
        self.count += 1
        return '%s_%d' % (base, self.count)

    def placeholder(self, name, shape, dtype='float32', sharding=None):
        self.nodes.append(('placeholder', name, None, [], shape, dtype,
                           sharding))
        return name

    def call(self, target, args, base='n', sharding=None):
        name = self.fresh(base)
        self.nodes.append(('call_function', name, target, args, None, None,
                           sharding))
        return name

    def wait(self, coll, sharding=None):
        return self.call(WAIT, [('node', coll)], 'wait', sharding)

    def all_gather(self, x, group):
        return self.wait(self.call(AG, [('node', x), ('int', self.size(group)),
                                        ('str', group)], 'ag'))

    def reduce_scatter(self, x, op, group, sharding=None):
        return self.wait(self.call(RS, [('node', x), ('str', op),
                                        ('int', self.size(group)),
                                        ('str', group)], 'rs'), sharding)

    def all_reduce(self, x, op, group):
        return self.wait(self.call(AR, [('node', x), ('str', op),
                                        ('str', group)], 'ar'))

    def view(self, target, x, *extra):
        return self.call(target, [('node', x)] + list(extra),
                         target.split('.')[1])

    def permute(self, x, dims):
        return self.view('aten.permute.default', x, ('ints', dims))

    def output(self, *names):
        self.nodes.append(('output', 'output', None,
                           [('nodes', list(names))], None, None, None))

    def xml(self):
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<!-- %s -->' % self.comment,
               '<dtopt-graph version="1" name="%s" view="local">' % self.name,
               '  <mesh name="world" shape="%s" dims="%s"/>' % (
                   ' '.join(map(str, self.shape)), ' '.join(self.dims))]
        for g in self.groups:
            out.append('  <group name="%s" mesh="world" dims="%s"/>' % (
                '_'.join(g), ' '.join(g)))
        for op, name, target, args, shape, dtype, sharding in self.nodes:
            head = '  <node name="%s" op="%s"' % (name, op)
            if target:
                head += ' target="%s"' % target
            out.append(head + '>')
            for kind, value in args:
                if isinstance(value, list):
                    value = ' '.join(map(str, value))
                out.append('    <arg %s="%s"/>' % (kind, value))
            if shape is not None:
                out.append('    <tensor dtype="%s" shape="%s"/>' % (
                    dtype, ' '.join(map(str, shape))))
            if sharding:
                out.append('    <sharding mesh="world" %s/>' % sharding)
            out.append('  </node>')
        out.append('</dtopt-graph>')
        return '\n'.join(out) + '\n'


FUSE = 'dtopt opt -p fuse-collectives,dce --remarks %s'
DUMP = ' | dtopt dump -'
CASES = {}


def case(name, run=(), execs=()):
    def wrap(build):
        CASES[name] = (build, list(run) or [FUSE + DUMP], list(execs))
        return build
    return wrap


def permute_pair(g, x):
    return g.permute(g.permute(x, [1, 0]), [1, 0])


# --- all_gather chains -------------------------------------------------
@case('ag_dp_tp_permute_16x8',
      run=[FUSE + DUMP, FUSE + ' --force-fusion' + DUMP,
           FUSE + ' --devices-per-host=128 -o /dev/null'])
def _(g=None):
    g = Graph('ag_dp_tp_permute_16x8', [16, 8], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'format.md example: dp then tp with a cancelling permute pair '
              'on 16x8; the model declines (a 128-rank ring pays 127 hops), '
              'forced it fuses onto (tp dp)')
    x = g.placeholder('primals_5', [32, 4096])
    w = g.all_gather(x, 'dp')
    g.output(g.all_gather(permute_pair(g, w), 'tp'))
    return g


@case('ag_dp_tp_16x8', execs=['-p fuse-collectives,dce --force-fusion'])
def _():
    g = Graph('ag_dp_tp_16x8', [16, 8], ['dp', 'tp'], ['dp', 'tp', 'tp dp'],
              'the 16x8 chain with small shards, forced past the cost model, '
              'to execute the 128-rank fused gather (over the CI rank limit: '
              'run it with run_exec_goldens.py and max-ranks 128)')
    x = g.placeholder('w', [1, 3])
    g.output(g.all_gather(permute_pair(g, g.all_gather(x, 'dp')), 'tp'))
    return g


@case('ag_dp_tp_permute_4x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_dp_tp_permute_4x2', [4, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp', 'dp tp'],
              'dp then tp with a permute pair: one gather on (tp dp), the '
              'column-major group, not the row-major (dp tp) one')
    x = g.placeholder('w', [4, 6])
    g.output(g.all_gather(permute_pair(g, g.all_gather(x, 'dp')), 'tp'))
    return g


@case('ag_tp_dp_2x4', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_tp_dp_2x4', [2, 4], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp', 'dp tp'],
              'tp then dp (DTensor default order): one gather on (dp tp)')
    x = g.placeholder('w', [3, 5])
    g.output(g.all_gather(permute_pair(g, g.all_gather(x, 'tp')), 'dp'))
    return g


@case('ag_direct_both_2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_direct_both_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp', 'dp tp'],
              'two independent direct chains, one each way')
    a = g.placeholder('a', [2, 3])
    b = g.placeholder('b', [4])
    ra = g.all_gather(g.all_gather(a, 'dp'), 'tp')
    rb = g.all_gather(g.all_gather(b, 'tp'), 'dp')
    g.output(ra, rb)
    return g


@case('ag_cast_before_2x4', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_cast_before_2x4', [2, 4], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'a bf16 cast before the chain stays in front of the fused gather')
    x = g.placeholder('w', [2, 8])
    c = g.call('prims.convert_element_type.default',
               [('node', x), ('dtype', 'bfloat16')], 'convert')
    g.output(g.all_gather(g.all_gather(c, 'dp'), 'tp'))
    return g


@case('ag_mixed_views_2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_mixed_views_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'identity view chains of every kind between the links: t t, '
              'view round trip, unsqueeze squeeze, alias detach')
    x = g.placeholder('w', [2, 6])
    w = g.all_gather(x, 'dp')
    v = g.view('aten.t.default', g.view('aten.t.default', w))
    v = g.view('aten.view.default', g.view('aten.view.default', v,
                                           ('ints', [4, 3, 2])),
               ('ints', [4, 6]))
    v = g.view('aten.squeeze.dim', g.view('aten.unsqueeze.default', v,
                                          ('int', 1)), ('int', 1))
    v = g.view('aten.detach.default', g.view('aten.alias.default', v))
    g.output(g.all_gather(v, 'tp'))
    return g


@case('ag_three_link_2x2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_three_link_2x2x2', [2, 2, 2], ['A', 'B', 'C'],
              ['A', 'B', 'C', 'A B C', 'C B A'],
              'a three-link chain C, B, A on 2x2x2: one gather on (A B C)')
    x = g.placeholder('w', [2, 4])
    w = g.all_gather(g.all_gather(x, 'C'), 'B')
    g.output(g.all_gather(permute_pair(g, w), 'A'))
    return g


@case('ag_two_link_2x2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('ag_two_link_2x2x2', [2, 2, 2], ['A', 'B', 'C'],
              ['A', 'B', 'C', 'C A'],
              'a two-link chain A then C on a 3-D mesh: the (C A) sub-group; '
              'B stays outside')
    x = g.placeholder('w', [3, 2])
    g.output(g.all_gather(g.all_gather(x, 'A'), 'C'))
    return g


@case('ag_four_link_2x2x2x2',
      run=[FUSE + ' -o /dev/null',
           FUSE + ' --devices-per-host=16' + DUMP],
      execs=['-p fuse-collectives,dce --devices-per-host=16'])
def _():
    g = Graph('ag_four_link_2x2x2x2', [2, 2, 2, 2], ['A', 'B', 'C', 'D'],
              ['A', 'B', 'C', 'D', 'B D A C'],
              'four links in the order C, A, D, B on 2x2x2x2: on 8-device hosts '
              'dim A is inter-host and the model declines the 16-rank ring; '
              'on one 16-device host one gather on (B D A C)')
    x = g.placeholder('w', [1, 3])
    w = g.all_gather(g.all_gather(x, 'C'), 'A')
    g.output(g.all_gather(g.all_gather(w, 'D'), 'B'))
    return g


@case('ag_no_group_4x2',
      run=[FUSE + ' -o /dev/null', FUSE + ' --create-groups' + DUMP],
      execs=['-p fuse-collectives,dce --create-groups'])
def _():
    g = Graph('ag_no_group_4x2', [4, 2], ['dp', 'tp'], ['dp', 'tp'],
              'no flattened group: a missed remark names the group to add; '
              'with the create-groups option it is declared and used')
    x = g.placeholder('w', [2, 2])
    g.output(g.all_gather(g.all_gather(x, 'dp'), 'tp'))
    return g


@case('ag_wrong_order_4x2', run=[FUSE + DUMP])
def _():
    g = Graph('ag_wrong_order_4x2', [4, 2], ['dp', 'tp'],
              ['dp', 'tp', 'dp tp'],
              'dp then tp needs (tp dp); only (dp tp) exists, which would '
              'permute the rows: refused with the order reason')
    x = g.placeholder('w', [2, 2])
    g.output(g.all_gather(g.all_gather(x, 'dp'), 'tp'))
    return g


@case('ag_not_inverse_2x2')
def _():
    g = Graph('ag_not_inverse_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'the second permute does not undo the first')
    x = g.placeholder('w', [2, 3, 4])
    w = g.all_gather(x, 'dp')
    p = g.permute(g.permute(w, [1, 0, 2]), [0, 2, 1])
    g.output(g.all_gather(p, 'tp'))
    return g


@case('ag_extra_user_2x2')
def _():
    g = Graph('ag_extra_user_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'the intermediate wait has another user')
    x = g.placeholder('w', [2, 3])
    w = g.all_gather(x, 'dp')
    r = g.all_gather(w, 'tp')
    g.output(r, g.call('aten.relu.default', [('node', w)], 'relu'))
    return g


@case('ag_same_group_2x2')
def _():
    g = Graph('ag_same_group_2x2', [2, 2], ['dp', 'tp'], ['dp', 'tp'],
              'both gathers on the same group: overlapping dims')
    x = g.placeholder('w', [2, 3])
    g.output(g.all_gather(g.all_gather(x, 'tp'), 'tp'))
    return g


@case('ag_overlapping_2x2x2')
def _():
    g = Graph('ag_overlapping_2x2x2', [2, 2, 2], ['A', 'B', 'C'],
              ['A', 'B', 'C', 'A B', 'B C'],
              'groups (A B) then (B C) share B')
    x = g.placeholder('w', [2, 3])
    g.output(g.all_gather(g.all_gather(x, 'A_B'), 'B_C'))
    return g


@case('ag_uneven_sharding_2x2')
def _():
    g = Graph('ag_uneven_sharding_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'dp tp'],
              'rank 0 of a (5,3) tensor sharded S(0) S(0): rows 2,1,1,1 are '
              'uneven; flattening would misplace rows')
    g.rank = 0
    x = g.placeholder('w', [2, 3], sharding='placements="S(0) S(0)" '
                      'global-shape="5 3"')
    g.output(g.all_gather(g.all_gather(x, 'tp'), 'dp'))
    return g


@case('ag_uneven_pad_2x2')
def _():
    g = Graph('ag_uneven_pad_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'dp tp'],
              'DTensor pads uneven shards before gathering and narrows after')
    x = g.placeholder('w', [1, 3])
    p = g.call('aten.constant_pad_nd.default',
               [('node', x), ('ints', [0, 0, 0, 1])], 'pad')
    r = g.all_gather(g.all_gather(p, 'tp'), 'dp')
    g.output(g.call('aten.narrow.default', [('node', r), ('int', 0),
                                            ('int', 0), ('int', 7)],
                    'narrow'))
    return g


@case('ag_dtype_change_2x2')
def _():
    g = Graph('ag_dtype_change_2x2', [2, 2], ['dp', 'tp'],
              ['dp', 'tp', 'tp dp'],
              'a cast between the gathers')
    x = g.placeholder('w', [2, 3])
    w = g.all_gather(x, 'dp')
    c = g.call('prims.convert_element_type.default',
               [('node', w), ('dtype', 'bfloat16')], 'convert')
    g.output(g.all_gather(c, 'tp'))
    return g


@case('ag_lone_2x2')
def _():
    g = Graph('ag_lone_2x2', [2, 2], ['dp', 'tp'], ['dp', 'tp', 'tp dp'],
              'a lone gather: no candidate, no remark')
    x = g.placeholder('w', [2, 3])
    g.output(g.all_gather(x, 'dp'))
    return g


@case('ag_dim1_2x2')
def _():
    g = Graph('ag_dim1_2x2', [2, 2], ['dp', 'tp'], ['dp', 'tp', 'tp dp'],
              'the first gather is on tensor dim 1 (gather dim 0, then chunk '
              'and cat on dim 1 as DTensor does): not a chain')
    x = g.placeholder('w', [4, 3])
    w = g.all_gather(x, 'dp')
    parts = g.call('aten.chunk.default', [('node', w), ('int', 2)], 'chunk')
    a = g.call('operator.getitem', [('node', parts), ('int', 0)], 'getitem')
    b = g.call('operator.getitem', [('node', parts), ('int', 1)], 'getitem')
    c = g.call('aten.cat.default', [('nodes', [a, b]), ('int', 1)], 'cat')
    g.output(g.all_gather(c, 'tp'))
    return g


# --- all_reduce chains ---------------------------------------------------
def ar_case(name, shape, ops, groups, comment, dims=('dp', 'tp'), fires=True):
    @case(name, execs=['-p fuse-collectives,dce'] if fires else [])
    def _():
        g = Graph(name, shape, list(dims), list(dims) + groups, comment)
        x = g.placeholder('grad', [3, 4])
        for op, group in ops:
            x = g.all_reduce(x, op, group)
        g.output(x)
        return g


ar_case('ar_sum_sum_2x2', [2, 2], [('sum', 'dp'), ('sum', 'tp')], ['dp tp'],
        'sum then sum: one sum on (dp tp)')
ar_case('ar_avg_avg_4x2', [4, 2], [('avg', 'tp'), ('avg', 'dp')], ['tp dp'],
        'avg then avg: one avg; only (tp dp) is declared and any order '
        'serves an all_reduce')
ar_case('ar_sum_avg_2x4', [2, 4], [('sum', 'dp'), ('avg', 'tp')], ['dp tp'],
        'sum over dp then avg over tp: one sum, then divide by 4')
ar_case('ar_sum_max_2x2', [2, 2], [('sum', 'dp'), ('max', 'tp')], ['dp tp'],
        'sum then max do not combine', fires=False)
ar_case('ar_three_2x2x2', [2, 2, 2],
        [('sum', 'B'), ('sum', 'C'), ('sum', 'A')], ['A B C'],
        'three dims in any order: one sum on (A B C)', dims=('A', 'B', 'C'))


# --- reduce_scatter chains -----------------------------------------------
@case('rs_dp_tp_2x4', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('rs_dp_tp_2x4', [2, 4], ['dp', 'tp'],
              ['dp', 'tp', 'dp tp', 'tp dp'],
              'scatter dp then tp: the first scattered is the slowest, (dp tp)')
    x = g.placeholder('grad', [16, 3])
    g.output(g.reduce_scatter(g.reduce_scatter(x, 'sum', 'dp'), 'sum', 'tp'))
    return g


@case('rs_tp_dp_2x4', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('rs_tp_dp_2x4', [2, 4], ['dp', 'tp'],
              ['dp', 'tp', 'dp tp', 'tp dp'],
              'scatter tp then dp (with a view round trip between): (tp dp)')
    x = g.placeholder('grad', [8, 6])
    w = g.reduce_scatter(x, 'avg', 'tp')
    v = g.view('aten.view.default', g.view('aten.view.default', w,
                                           ('ints', [12])), ('ints', [2, 6]))
    g.output(g.reduce_scatter(v, 'avg', 'dp'))
    return g


@case('rs_sum_avg_2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('rs_sum_avg_2x2', [2, 2], ['dp', 'tp'], ['dp', 'tp', 'dp tp'],
              'sum over dp then avg over tp: one sum on (dp tp), divided by 2')
    x = g.placeholder('grad', [4, 2])
    g.output(g.reduce_scatter(g.reduce_scatter(x, 'sum', 'dp'), 'avg', 'tp'))
    return g


@case('rs_uneven_2x2')
def _():
    g = Graph('rs_uneven_2x2', [2, 2], ['dp', 'tp'], ['dp', 'tp', 'dp tp'],
              'a reduce-scatter chain whose result is an uneven shard '
              '(13 rows on 4 ranks, padded to 16): refused')
    x = g.placeholder('grad', [13, 2])
    p = g.call('aten.constant_pad_nd.default',
               [('node', x), ('ints', [0, 0, 0, 3])], 'pad')
    g.output(g.reduce_scatter(g.reduce_scatter(p, 'sum', 'dp'), 'sum', 'tp'))
    return g


# --- DTensor's merge cases (semantics §4.4) as local graphs ----------------
@case('dtensor_merges_4x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('dtensor_merges_4x2', [4, 2], ['A', 'B'], ['A', 'B', 'A B'],
              "DTensor's plans with mesh (4,2) and A B declared: PP->RR 1 AR, "
              'PP->S0S0 1 RS, S0S0->RR 1 AG (gathers descending), S0S1->RR '
              'stays 2 AG')
    pp = g.placeholder('pp', [8, 4])
    rr = g.all_reduce(g.all_reduce(pp, 'sum', 'A'), 'sum', 'B')
    ss = g.reduce_scatter(g.reduce_scatter(pp, 'sum', 'A'), 'sum', 'B')
    s00 = g.placeholder('s0s0', [1, 4])
    gathered = g.all_gather(g.all_gather(s00, 'B'), 'A')
    s01 = g.placeholder('s0s1', [2, 2])
    w = g.all_gather(s01, 'B')
    parts = g.call('aten.chunk.default', [('node', w), ('int', 2)], 'chunk')
    a = g.call('operator.getitem', [('node', parts), ('int', 0)], 'getitem')
    b = g.call('operator.getitem', [('node', parts), ('int', 1)], 'getitem')
    cat = g.call('aten.cat.default', [('nodes', [a, b]), ('int', 1)], 'cat')
    g.output(rr, ss, gathered, g.all_gather(cat, 'A'))
    return g


@case('dtensor_merges_2x2x2', execs=['-p fuse-collectives,dce'])
def _():
    g = Graph('dtensor_merges_2x2x2', [2, 2, 2], ['A', 'B', 'C'],
              ['A', 'B', 'C', 'A B', 'A C', 'A B C'],
              "DTensor's plans on 2x2x2 with A B, A C, A B C declared: "
              'PPP->RRR 1 AR, PRP->RRR 1 AR on (A C), PS0P->RRR 2 AR + 1 AG '
              '(the gather in between keeps them apart), (Pavg,Pavg,Psum)->RRR '
              '1 AR: the sum over 8 divided by 4')
    x = g.placeholder('x', [4, 2])
    ppp = g.all_reduce(g.all_reduce(g.all_reduce(x, 'sum', 'A'), 'sum', 'B'),
                       'sum', 'C')
    prp = g.all_reduce(g.all_reduce(x, 'sum', 'A'), 'sum', 'C')
    y = g.placeholder('y', [2, 2])
    psp = g.all_reduce(g.all_gather(g.all_reduce(y, 'sum', 'A'), 'B'),
                       'sum', 'C')
    mixed = g.all_reduce(g.all_reduce(g.all_reduce(x, 'avg', 'A'), 'avg', 'B'),
                         'sum', 'C')
    g.output(ppp, prp, psp, mixed)
    return g


def main():
    for name, (build, runs, execs) in CASES.items():
        g = build()
        xml = g.xml()
        if getattr(g, 'rank', None) is not None:
            xml = xml.replace('view="local">', 'view="local" rank="%d">' % g.rank)
        with open(os.path.join(HERE, name + '.xml'), 'w') as f:
            f.write(xml)
        with open(os.path.join(HERE, name + '.xml.run'), 'w') as f:
            for r in runs:
                f.write('RUN: %s\n' % r)
            for e in execs:
                f.write('EXEC: %s\n' % e)


if __name__ == '__main__':
    main()
