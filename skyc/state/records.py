"""The records of the state database (clusters, jobs, events) and the versioned JSON
payloads of its structured columns (``{"v": 1, "data": ...}``; never pickles). Values
under secret-looking keys are replaced by ``"<redacted>"`` before anything is written."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from skyc.errors import StateError

ClusterStatus = Literal["INIT", "UP", "STOPPED", "FAILED"]
JobStatus = Literal["PENDING", "SETUP", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
CLUSTER_STATUSES: tuple[str, ...] = get_args(ClusterStatus)
JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
TERMINAL_JOB_STATUSES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

PAYLOAD_VERSION = 1
_SECRET_KEY = re.compile(
    r"(secret|password|passwd|token|private_key|access_key|credential|api_key)", re.IGNORECASE
)
REDACTED = "<redacted>"


class _Model(BaseModel):
    # defer_build: a record's validator is built when a command first reads that kind of
    # record, not when the module is imported (start-up time).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ClusterRecord(_Model):
    """One cluster skyc launched (or is launching)."""

    name: str
    status: ClusterStatus = "INIT"
    cloud: str
    region: str | None = None
    zone: str | None = None
    placement: dict[str, Any] = Field(default_factory=dict)
    workspace: str | None = None          # $SKYC_HOME/clusters/<name>/
    engine: str | None = None             # terraform, tofu, pulumi, local
    nodes: list[dict[str, Any]] = Field(default_factory=list)  # name, rank, ip, ...
    launched_at: float | None = None      # epoch seconds
    hourly_cost: float = 0.0              # USD/hour, all nodes
    last_job: int | None = None           # id of the newest job on this cluster
    updated_at: float | None = None       # set by the database
    # Who it belongs to (the config's user:, else user@host), set when it is first
    # recorded and never changed; None: recorded before owners were.
    owner: str | None = None
    # The cluster's SSH public key, its stack's input (None: not recorded yet).
    ssh_public_key: str | None = None


class JobRecord(_Model):
    id: int                               # the database's row
    job_id: int | None = None             # the cluster's id for the job (queue, logs)
    cluster: str
    name: str | None = None
    status: JobStatus = "PENDING"
    submitted_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_codes: dict[str, int] = Field(default_factory=dict)  # node name -> exit code
    log_path: str | None = None
    owner: str | None = None             # who submitted it (None: before owners were)


class EventRecord(_Model):
    id: int
    cluster: str
    ts: float
    kind: str                            # apply, destroy, failover, attempt, ...
    message: str
    data: dict[str, Any] | None = None
    actor: str | None = None             # who did it (None: before actors were recorded)


def owned_by(owner: str | None, caller: str) -> bool:
    """Whether a record of ``owner`` is ``caller``'s: theirs, or written before owners
    were recorded (read as everyone's own, so nothing older disappears from a view)."""
    return owner is None or owner == caller


def check_value(value: str, allowed: Any, what: str) -> None:
    choices = get_args(allowed)
    if value not in choices:
        raise StateError(f"invalid {what} {value!r}: expected one of {', '.join(choices)}")


# -- versioned JSON payloads -------------------------------------------------


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-looking keys' values replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def dump_payload(value: Any) -> str:
    return json.dumps({"v": PAYLOAD_VERSION, "data": redact(value)}, sort_keys=True)


def load_payload(text: str | None, where: str) -> Any:
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(f"state database: {where} holds invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or "v" not in doc:
        raise StateError(f"state database: {where} is not a versioned payload")
    if doc["v"] != PAYLOAD_VERSION:
        raise StateError(
            f"state database: {where} has payload version {doc['v']}, this skyc reads "
            f"version {PAYLOAD_VERSION}",
            hint="upgrade skyc",
        )
    return doc.get("data")


# -- rows as records -----------------------------------------------------------


def cluster_from_row(row: Mapping[str, Any]) -> ClusterRecord:
    where = f"cluster '{row['name']}'"
    return ClusterRecord(
        name=row["name"], status=row["status"], cloud=row["cloud"], region=row["region"],
        zone=row["zone"], placement=load_payload(row["placement"], f"{where} placement") or {},
        workspace=row["workspace"], engine=row["engine"],
        nodes=load_payload(row["nodes"], f"{where} nodes") or [], launched_at=row["launched_at"],
        hourly_cost=row["hourly_cost"], last_job=row["last_job"], updated_at=row["updated_at"],
        owner=row.get("owner"),  # absent: a read-only state of an older schema
        ssh_public_key=row.get("ssh_public_key"),
    )


def job_status_from_node(status: str) -> JobStatus | None:
    """A node-side job status (``skyc queue``) as a state database status."""
    table: dict[str, JobStatus] = {
        "PENDING": "PENDING", "SETTING_UP": "SETUP", "SETUP_DONE": "RUNNING",
        "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED",
        "FAILED_SETUP": "FAILED", "CANCELLED": "CANCELLED",
    }
    return table.get(status)


def job_from_row(row: Mapping[str, Any]) -> JobRecord:
    return JobRecord(
        id=row["id"], job_id=row["job_id"], cluster=row["cluster"], name=row["name"],
        status=row["status"],
        submitted_at=row["submitted_at"], started_at=row["started_at"],
        ended_at=row["ended_at"],
        exit_codes=load_payload(row["exit_codes"], f"job {row['id']} exit codes") or {},
        log_path=row["log_path"], owner=row.get("owner"),
    )


def event_from_row(row: Mapping[str, Any]) -> EventRecord:
    return EventRecord(id=row["id"], cluster=row["cluster"], ts=row["ts"], kind=row["kind"],
                       message=row["message"],
                       data=load_payload(row["data"], f"event {row['id']} data"),
                       actor=row.get("actor"))
