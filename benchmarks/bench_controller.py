"""Managed-job controllers on local clusters (real skyc processes, the real terraform
binary, the real node agent):

1. recovery overhead: a job's head node is killed (every process of it, SIGKILL); the
   time from that moment to the controller noticing (RECOVERING in the trail), to the
   start of the recovery's first ``terraform apply`` (after the lost cluster's
   destroy), and to the job running again. Terraform commands are timed by the shared
   wrapper in _timing.py.
2. memory: ``--jobs`` (100) short managed jobs, each running until all of them run
   (so all are supervised at once), all by the one controller process of the
   SKYC_HOME. Sampled every 0.5 s from /proc: the peak number of controller
   processes, the controller's peak RSS, and, separately, the peak summed RSS of the
   processes it spawned (terraform, and the local nodes' agents and runs: its
   descendants, and every process whose HOME is a node directory of this SKYC_HOME).

    python benchmarks/bench_controller.py [--runs 3] [--jobs 100] [--budget 60]

Exits non-zero when the median loss-to-apply time is over the budget (seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._timing import (  # noqa: E402
    bench_env,
    find_terraform,
    load_average,
    skyc_command,
    terraform_wrapper,
)

TERMINAL = {"SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "CANCELLED"}


def _skyc(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(skyc_command(*args), cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"skyc {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def _queue(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(
        _skyc(env, cwd, "jobs", "queue", "--format", "json"))["jobs"]
    return doc


def _wait(env: dict[str, str], cwd: Path, job_id: int, check: Any,
          timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = next(j for j in _queue(env, cwd) if j["id"] == job_id)
        if check(job):
            return job
        time.sleep(0.2)
    sys.exit(f"job {job_id} did not get there in {timeout:.0f} s")


def _kill_node(node_dir: Path) -> None:
    want = f"HOME={node_dir}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if want in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue


def _tf_starts(log: Path) -> list[tuple[float, str]]:
    if not log.exists():
        return []
    return [(float(line.split()[0]), line.split()[2]) for line in log.read_text().splitlines()]


def recovery_once(tmp: Path, terraform: str) -> dict[str, float]:
    home, cwd = tmp / "home", tmp / "project"
    cwd.mkdir(parents=True)
    log = tmp / "tf.log"
    env = bench_env(SKYC_HOME=str(home), SKYC_TERRAFORM=str(terraform_wrapper(tmp, terraform)),
                    SKYC_BENCH_TF_LOG=str(log), PYTHONPATH=str(ROOT), SKYC_JOBS_IDLE_S="2")
    (cwd / "job.yaml").write_text("name: bench\nresources:\n  infra: local\n"
                                  "run: sleep 600\n")
    job_id = int(_skyc(env, cwd, "jobs", "launch", "job.yaml", "-y", "-d").strip())
    _wait(env, cwd, job_id, lambda j: j["status"] == "RUNNING")
    lost = time.time()
    _kill_node(home / "clusters" / f"skyc-job-{job_id}" / "nodes" / "head")
    job = _wait(env, cwd, job_id, lambda j: j["recoveries"] == 1 and j["status"] == "RUNNING")
    noticed = next(e["ts"] for e in job["trail"] if e["status"] == "RECOVERING")
    running_again = [e["ts"] for e in job["trail"] if e["status"] == "RUNNING"][-1]
    after = [(t, op) for t, op in _tf_starts(log) if t >= lost]
    destroyed = next(i for i, (_, op) in enumerate(after) if op == "destroy")
    first_apply = next(t for t, op in after[destroyed:] if op == "apply")
    _skyc(env, cwd, "jobs", "cancel", str(job_id))
    _wait_controller_exit(home)
    return {"noticed": noticed - lost, "first_apply": first_apply - lost,
            "running_again": running_again - lost}


def _processes(home: Path) -> dict[int, tuple[int, int, bool, bool]]:
    """pid -> (parent pid, RSS bytes, is a controller of ``home``, runs on a node of it)."""
    found = {}
    page = os.sysconf("SC_PAGE_SIZE")
    mine = f"SKYC_HOME={home}".encode()
    nodes = f"HOME={home / 'clusters'}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            ppid = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            rss_pages = int(Path(f"/proc/{name}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        controller = argv[-3:] == [b"jobs", b"controller", b""] and mine in env
        on_node = any(e.startswith(nodes) for e in env)
        found[int(name)] = (ppid, rss_pages * page, controller, on_node)
    return found


def _sample(home: Path) -> tuple[int, int, int, int]:
    """(controller processes, their RSS, spawned processes, their RSS) in bytes."""
    procs = _processes(home)
    controllers = {pid for pid, p in procs.items() if p[2]}
    spawned = set()
    for pid, (_, _, controller, on_node) in procs.items():
        seen, up = 0, procs.get(pid, (0, 0, False, False))[0]
        while up > 1 and up not in controllers and seen < 64:
            up, seen = procs.get(up, (0, 0, False, False))[0], seen + 1
        if not controller and (on_node or up in controllers):
            spawned.add(pid)
    return (len(controllers), sum(procs[p][1] for p in controllers),
            len(spawned), sum(procs[p][1] for p in spawned))


def _wait_controller_exit(home: Path, timeout: float = 60.0) -> None:
    """Until the controller of ``home`` has exited (it does once idle)."""
    deadline = time.monotonic() + timeout
    while _sample(home)[0] and time.monotonic() < deadline:
        time.sleep(0.2)


def memory(tmp: Path, jobs: int, terraform: str) -> dict[str, float]:
    home, cwd = tmp / "home", tmp / "project"
    cwd.mkdir(parents=True)
    env = bench_env(SKYC_HOME=str(home), SKYC_TERRAFORM=terraform, PYTHONPATH=str(ROOT),
                    SKYC_JOBS_POLL_S="2", SKYC_JOBS_IDLE_S="2")
    go = tmp / "go"
    # Each job runs until every job is running: all of them are supervised at once.
    (cwd / "short.yaml").write_text("name: short\nresources:\n  infra: local\n"
                                    f"run: while [ ! -f {go} ]; do sleep 0.5; done\n")
    t0 = time.monotonic()
    try:
        return _supervised(env, cwd, jobs, go, t0)
    finally:  # whatever happened, leave no job (nor its controller) behind
        subprocess.run(skyc_command("jobs", "cancel", "--all"), cwd=cwd, env=env,
                       capture_output=True, stdin=subprocess.DEVNULL, timeout=900, check=False)
        _wait_controller_exit(home)


def _supervised(env: dict[str, str], cwd: Path, jobs: int, go: Path,
                t0: float) -> dict[str, float]:
    home = Path(env["SKYC_HOME"])
    peak = [0, 0, 0, 0]   # controllers, their RSS, spawned processes, their RSS
    at_all_running: tuple[int, int, int, int] | None = None

    def sample() -> tuple[int, int, int, int]:
        now = _sample(home)
        peak[:] = [max(a, b) for a, b in zip(peak, now, strict=True)]
        return now

    for _ in range(jobs):
        _skyc(env, cwd, "jobs", "launch", "short.yaml", "-y", "-d")
        sample()
    while True:
        now = sample()
        queue = _queue(env, cwd)
        if not go.exists() and sum(j["status"] == "RUNNING" for j in queue) == jobs:
            at_all_running = now
            go.touch()
        if sum(j["status"] in TERMINAL for j in queue) == jobs:
            break
        time.sleep(0.5)
    statuses = sorted({j["status"] for j in _queue(env, cwd)})
    steady = at_all_running or (0, 0, 0, 0)
    return {"peak_controllers": peak[0], "peak_controller_rss_mib": peak[1] / 2**20,
            "peak_spawned": peak[2], "peak_spawned_rss_mib": peak[3] / 2**20,
            "running_controller_rss_mib": steady[1] / 2**20,
            "running_spawned": steady[2], "running_spawned_rss_mib": steady[3] / 2**20,
            "seconds": time.monotonic() - t0, "statuses": statuses}  # type: ignore[dict-item]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    terraform = find_terraform()
    if terraform is None:
        sys.exit("terraform (or tofu) is not on PATH")
    print(load_average())
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(recovery_once(Path(tmp), terraform))
        print(f"recovery run {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in
                                                   runs[-1].items()))
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"recovery (median of {len(runs)}, default poll interval 5 s): node lost -> "
          f"noticed {medians['noticed']:.2f} s, -> first apply of the recovery "
          f"{medians['first_apply']:.2f} s, -> running again {medians['running_again']:.2f} s")
    if not args.skip_memory:
        with tempfile.TemporaryDirectory() as tmp:
            mem = memory(Path(tmp), args.jobs, terraform)
        print(f"memory, {args.jobs} short jobs: {mem['peak_controllers']:.0f} controller "
              f"process(es) at most; controller RSS {mem['running_controller_rss_mib']:.0f} MiB"
              f" with all {args.jobs} running (peak {mem['peak_controller_rss_mib']:.0f} MiB);"
              f" spawned processes (terraform, node agents, runs) "
              f"{mem['running_spawned']:.0f} using {mem['running_spawned_rss_mib']:.0f} MiB "
              f"then (peak {mem['peak_spawned']:.0f} using "
              f"{mem['peak_spawned_rss_mib']:.0f} MiB); all ended in "
              f"{mem['seconds']:.0f} s ({mem['statuses']})")
    print(load_average())
    if medians["first_apply"] > args.budget:
        print(f"FAIL: node lost -> first apply median {medians['first_apply']:.2f} s is over "
              f"the budget of {args.budget:.2f} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
