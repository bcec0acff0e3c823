# SPDX-License-Identifier: MIT
"""execlib.py: what the execution proofs of tests/fusion share: reading a
graph's rank count and collectives, and running `dtopt opt`, `dtopt verify`
and `dtopt run --compare` (under mpirun for local-view graphs) with a time
limit that ends a hang together with every rank mpirun started."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

COLLECTIVES = {
    "_c10d_functional.all_gather_into_tensor.default": "all_gather",
    "_c10d_functional.reduce_scatter_tensor.default": "reduce_scatter",
    "_c10d_functional.all_reduce.default": "all_reduce",
    "_c10d_functional.all_to_all_single.default": "all_to_all",
}
LIMIT = 120  # seconds for one command


class GraphInfo:
    """What the tests need to know about one graph file."""

    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.view = root.get("view", "local")
        mesh = root.find("mesh")
        self.ranks = 1
        if mesh is not None:
            for s in mesh.get("shape").split():
                self.ranks *= int(s)
        self.nodes = 0
        self.collectives = {}
        for node in root.findall("node"):
            self.nodes += 1
            kind = COLLECTIVES.get(node.get("target", ""))
            if kind:
                self.collectives[kind] = self.collectives.get(kind, 0) + 1

    def ncollectives(self):
        return sum(self.collectives.values())


class Result:
    def __init__(self, cmd, code, out, err, took):
        self.cmd, self.code, self.out, self.err, self.took = cmd, code, out, err, took

    def describe(self):
        return "$ %s\n[exit %s in %.1f s]\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(self.cmd), self.code, self.took, self.out, self.err)


def run(cmd, limit=LIMIT):
    """Run cmd in a session of its own; on timeout end the whole session
    (mpirun and its ranks) and return code None."""
    return finish(*start(cmd), limit)


def start(cmd):
    """Start cmd (for running two at a time); finish() collects it. Each
    command gets an OpenMPI session directory of its own: OpenMPI 4.1 keeps
    every job's session under one directory per host and user
    (/tmp/ompi.HOST.UID), which the last job to leave removes, so a job
    starting while another ends can fail at start-up ("mkdir
    /tmp/ompi.HOST.0: File exists")."""
    session_dir = tempfile.mkdtemp(prefix="dtopt-ompi-")
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_orte_tmpdir_base=session_dir)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    proc.session_dir = session_dir
    return proc, cmd, time.monotonic()


def finish(proc, cmd, started, limit=LIMIT):
    try:
        out, err = proc.communicate(timeout=max(1.0, limit - (time.monotonic() - started)))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
                proc.communicate(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        out, err, code = "", "still running after %d s (a hang)" % limit, None
    shutil.rmtree(proc.session_dir, ignore_errors=True)
    return Result(cmd, code, out, err, time.monotonic() - started)


def compare_cmd(dtopt, mpirun, info, a, b):
    """The command comparing graphs a and b: under mpirun with the graph's
    rank count, or alone on the CPU backend for a global-view graph and a
    graph of one rank."""
    if info.view == "global" or info.ranks == 1:
        return [dtopt, "run", "--backend", "cpu", "--compare", a, b]
    return [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(info.ranks),
            dtopt, "run", "--backend", "mpi", "--compare", a, b]


def compare_results(out):
    """The result column of a comparison table: {result: count}."""
    seen = {}
    for line in out.splitlines():
        m = re.match(r"\s+\d+\s+\S+\s+\S+\s+(bitwise|equal|close|MISMATCH)\b", line)
        if m:
            seen[m.group(1)] = seen.get(m.group(1), 0) + 1
    return seen


def format_counts(counts):
    return " ".join("%s=%d" % kv for kv in sorted(counts.items())) or "none"
