"""Time from starting ``skyc exec`` to the job's first output line when the node's sshd
starts N seconds late (a node still booting), and the overhead beyond N.

The node is a real OpenSSH sshd on loopback (tests/support/sshd.py; needs root), its
cluster written as apply leaves it (so the node is new and waited for). Each run stops
the node's sshd, starts a whole ``skyc exec`` process, and starts sshd again N s later.
The overhead (first line - N) is skyc's start-up, the connection, the agent and the
job's start, plus however late the wait notices the node: it shows the wait is bounded
by the node, not by a poll interval. A run with sshd up from the start is printed for
reference. Exits 1 when the median overhead is above the budget (2 s).

    python benchmarks/bench_boot_wait.py [--delay N] [--runs R] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _timing import ROOT, skyc_command

sys.path.insert(0, str(ROOT))

from skyc.model.nodes import CLUSTER_FILE, ClusterInfo
from tests.support.sshd import SshdCluster, sshd_unavailable

MARKER = "first-line"


def applied(nodes: SshdCluster, home: Path) -> ClusterInfo:
    """The node as an applied cluster in ``home`` (its key in the workspace)."""
    workspace = home / "clusters" / "bench"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "id_ed25519").write_bytes((nodes.workspace / "id_ed25519").read_bytes())
    (workspace / "id_ed25519").chmod(0o600)
    info = nodes.cluster_info("bench").model_copy(update={"workspace": str(workspace)})
    (workspace / CLUSTER_FILE).write_text(info.model_dump_json())
    return info


def first_line_seconds(nodes: SshdCluster, home: Path, delay: float | None) -> float:
    """Seconds from starting ``skyc exec`` to its first output line; the node's sshd is
    started ``delay`` s after the start (None: it is up already)."""
    node = nodes.nodes[0]
    applied(nodes, home)  # written again: the node is new for this exec
    if delay is not None:
        nodes.stop_listener(node)
    env = {**os.environ, "SKYC_HOME": str(home), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(skyc_command("exec", "bench", f"echo {MARKER}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    starter = None
    if delay is not None:
        starter = threading.Timer(max(0.0, delay - (time.perf_counter() - start)),
                                  nodes.launch, args=(node,))
        starter.start()
    assert proc.stdout is not None
    elapsed = None
    for line in proc.stdout:
        if MARKER in line and elapsed is None:
            elapsed = time.perf_counter() - start
    proc.wait()
    if starter is not None:
        starter.join()
    if elapsed is None or proc.returncode != 0:
        err = proc.stderr.read() if proc.stderr else ""
        sys.exit(f"skyc exec failed ({proc.returncode}): {err}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=5.0,
                        help="seconds after the start of exec at which sshd starts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=float, default=2.0)
    args = parser.parse_args()
    reason = sshd_unavailable()
    if reason:
        sys.exit(f"bench_boot_wait: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nodes = SshdCluster(root / "sshd", 1).start()
        try:
            home = root / "skyc_home"
            first_line_seconds(nodes, home, None)  # warm-up: uploads the agent
            up = first_line_seconds(nodes, home, None)
            times = [first_line_seconds(nodes, home, args.delay) for _ in range(args.runs)]
        finally:
            nodes.stop()
    over = [t - args.delay for t in times]
    median = statistics.median(over)
    print(f"skyc exec to first line, sshd up from the start: {up:.3f} s")
    print(f"sshd {args.delay:g} s late: first line after "
          + ", ".join(f"{t:.3f}" for t in times) + " s")
    print(f"overhead beyond {args.delay:g} s: median {median:.3f} s over {args.runs} runs "
          f"(min {min(over):.3f}, max {max(over):.3f}; budget {args.budget} s)")
    return 0 if median <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
