"""What the team-state tests share: skyc as a user runs it (a subprocess with its own
``SKYC_HOME`` and, for a PostgreSQL state, ``SKYC_STATE_URL``), and a home whose sqlite
state holds something of every table, made through skyc's own code paths: a ``local``
cluster (a workspace whose node is a directory here, no engine run) that ran two real
jobs with ``skyc exec``, a stopped cloud cluster's record with its jobs and events, and
two finished managed jobs with their attempts and trail."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from skyc.model.managed_jobs import JobSpecDoc, ManagedStatus
from skyc.model.nodes import ClusterInfo, Node
from skyc.state.database import ClusterRecord, StateDB
from skyc.state.managed_jobs import ManagedJobStore
from skyc.state.networks import NetworkRecord, add_network_user, put_network
from skyc.state.storage import StorageRecord, put_storage

ROOT = Path(__file__).resolve().parents[2]


def skyc(home: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SKYC_HOME=str(home), COLUMNS="200")
    env.pop("SKYC_STATE_URL", None)
    if url is not None:
        env["SKYC_STATE_URL"] = url
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def ok(home: Path, *args: str, url: str | None = None) -> str:
    out = skyc(home, *args, url=url)
    assert out.returncode == 0, (args, out.stdout[-2000:], out.stderr[-2000:])
    return out.stdout


def local_cluster(home: Path, name: str) -> None:
    """Cluster ``name`` on one local node, recorded UP in the sqlite state of ``home``."""
    workspace = home / "clusters" / name
    (workspace / "node").mkdir(parents=True)
    info = ClusterInfo(name=name, cloud="local", workspace=str(workspace), nodes=[
        Node(name="head", rank=0, transport="local", ip="127.0.0.1",
             node_dir=str(workspace / "node"))])
    (workspace / "cluster.json").write_text(info.model_dump_json())
    with StateDB(home / "state.db") as db:
        db.upsert_cluster(ClusterRecord(
            name=name, status="UP", cloud="local", workspace=str(workspace), engine="terraform",
            nodes=[n.model_dump(mode="json", exclude_none=True) for n in info.nodes],
            launched_at=time.time() - 60))


def populate(home: Path, local: str = "c1", cloud: str = "train",
             region: str = "us-east-1") -> None:
    local_cluster(home, local)
    ok(home, "exec", local, "echo one")
    ok(home, "exec", local, "echo two")
    with StateDB(home / "state.db") as db:
        db.upsert_cluster(ClusterRecord(
            name=cloud, status="STOPPED", cloud="aws", region="us-east-1", zone="us-east-1b",
            placement={"instance_type": "p4d.24xlarge", "accelerators": {"A100": 8},
                       "num_nodes": 2, "use_spot": True},
            nodes=[{"name": "head", "rank": 0, "ip": "10.0.0.1"}],
            launched_at=1_700_000_000.25, hourly_cost=65.54, engine="terraform"))
        first = db.add_job(cloud, "pretrain", job_id=1)
        db.update_job(first, status="FAILED", exit_codes={"head": 3})
        gone = db.add_job(cloud, "eval", job_id=2)
        db.add_event(cloud, "autostop", "autostop 30m", {"idle_minutes": 30.0, "down": False})
        db.add_event(cloud, "failover", "InsufficientInstanceCapacity",
                     {"blocked": "aws/us-east-1/us-east-1a", "nested": [1, 2.5, None]})
        with db.transaction() as tx:  # a row id sqlite gave out, then lost
            tx.execute("DELETE FROM jobs WHERE id = ?", (gone,))
            tx.execute("UPDATE clusters SET last_job = ? WHERE name = ?", (first, cloud))
        put_storage(db, StorageRecord(
            name=f"{cloud}-data", store="s3", region="us-east-1", url=f"s3://{cloud}-data",
            status="READY", persistent=False, cluster=cloud, users=[cloud]))
        put_network(db, NetworkRecord(
            name=f"network-aws-{region}", cloud="aws", region=region, status="READY",
            zones=["use1-az4", None], outputs={"vpc_id": "vpc-1", "subnet_use1_az4": "s-4"},
            engine="terraform"))
        add_network_user(db, f"network-aws-{region}", cloud)
        managed = ManagedJobStore(db)
        ends: tuple[tuple[int, ManagedStatus], ...] = ((1, "SUCCEEDED"), (2, "FAILED"))
        for n, outcome in ends:
            job = managed.add(f"mj{n}", f"/tasks/{n}.yaml", JobSpecDoc(envs={"N": str(n)}), 1)
            attempt = managed.open_attempt(job, 0, f"skyc-job-{job}", "aws/us-east-1", 1.5)
            managed.set_attempt_job(attempt, 1)
            managed.close_attempt(attempt, outcome)
            managed.set_status(job, "RUNNING", "running", {"infra": "aws/us-east-1"})
            managed.set_status(job, outcome, "ended", failure=None if n == 1 else "exit 1")
