"""One Ctrl-C always ends a running skyc within a few seconds, with the cluster lock free.

A real process holds the cluster's lock and runs jobs on a local cluster (many short
commands: the window where a SIGINT lands while a subprocess is being started is hit
often); SIGINT arrives at a random moment. The seed is printed so a failure replays.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from skyc.state.locks import cluster_lock
from tests.runtime.conftest import make_local_cluster

TRIES = 12
EXIT_WITHIN_S = 8.0

_WORKER = """
import sys
from pathlib import Path
from skyc.state.locks import cluster_lock
from skyc.model.nodes import ClusterInfo
from skyc.runtime import JobSpec, run_job

cluster = ClusterInfo.model_validate_json(Path(sys.argv[1]).read_text())
try:
    with cluster_lock(cluster.name, timeout=5):
        print("locked", flush=True)
        while True:
            run_job(cluster, JobSpec(setup="true", run="echo hi"), rerun_setup=True)
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_sigint_always_exits_quickly_and_frees_the_lock(tmp_path: Path, skyc_home: Path) -> None:
    cluster = make_local_cluster(tmp_path, 2, name="intr")
    spec = tmp_path / "cluster.json"
    spec.write_text(cluster.model_dump_json())
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    env = {**os.environ, "SKYC_HOME": str(skyc_home)}
    for attempt in range(TRIES):
        proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(spec)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(
                f"try {attempt} (seed {seed}): still running {EXIT_WITHIN_S} s after SIGINT"
            ) from None
        err = proc.stderr.read() if proc.stderr else ""
        assert proc.returncode == 130, f"seed {seed}: exit {proc.returncode}: {err[-2000:]}"
        with cluster_lock("intr", timeout=0):  # free again: LockTimeout otherwise
            pass
