"""The networks skyc keeps for many clusters, in the state database (table ``networks``).

A network (an AWS region's VPC with a subnet per zone its clusters use) is recorded from
before its stack is applied (CREATING) until its stack is destroyed. ``users`` names the
clusters whose stacks use it (a cluster no longer in the state does not count);
``outputs`` holds what its stack gave (the VPC's and each zone's subnet's ids), which a
cluster's stack takes as inputs, so a teammate's or CI's plan of a cluster builds the
stack it has.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skyc.state.records import dump_payload, load_payload

if TYPE_CHECKING:
    from skyc.state.database import StateDB

NetworkStatus = Literal["CREATING", "READY", "DELETING", "FAILED"]


class NetworkRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    cloud: str
    region: str
    status: NetworkStatus = "CREATING"
    zones: list[str | None] = Field(default_factory=list)  # in the order first used
    users: list[str] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)
    workspace: str | None = None
    engine: str | None = None
    owner: str | None = None
    created_at: float = 0.0
    updated_at: float | None = None


def network_from_row(row: Mapping[str, Any]) -> NetworkRecord:
    what = f"network '{row['name']}'"
    return NetworkRecord(
        name=row["name"], cloud=row["cloud"], region=row["region"], status=row["status"],
        zones=load_payload(row["zones"], f"{what} zones") or [],
        users=load_payload(row["users"], f"{what} users") or [],
        outputs=load_payload(row["outputs"], f"{what} outputs") or {},
        workspace=row["workspace"], engine=row["engine"], owner=row["owner"],
        created_at=row["created_at"], updated_at=row["updated_at"])


def put_network(db: StateDB, record: NetworkRecord) -> None:
    """Record the network, or update its status, zones, outputs, workspace and engine
    (its users, owner and creation time are kept)."""
    now = time.time()
    with db.transaction() as tx:
        tx.execute(
            """
            INSERT INTO networks (name, cloud, region, status, zones, users, outputs,
                workspace, engine, owner, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET
                status = excluded.status, zones = excluded.zones,
                outputs = excluded.outputs, workspace = excluded.workspace,
                engine = excluded.engine, updated_at = excluded.updated_at
            """,
            (record.name, record.cloud, record.region, record.status,
             dump_payload(record.zones), dump_payload(sorted(record.users)),
             dump_payload(record.outputs), record.workspace, record.engine,
             record.owner or db.caller(), record.created_at or now, now))


def get_network(db: StateDB, name: str) -> NetworkRecord | None:
    rows = db.query("SELECT * FROM networks WHERE name = ?", (name,))
    return network_from_row(rows[0]) if rows else None


def list_networks(db: StateDB) -> list[NetworkRecord]:
    return [network_from_row(r) for r in db.query("SELECT * FROM networks ORDER BY name")]


def _set_users(db: StateDB, name: str, change: set[str], add: bool) -> None:
    with db.transaction() as tx:
        rows = tx.rows("SELECT users FROM networks WHERE name = ?", (name,))
        if not rows:
            return
        users = set(load_payload(rows[0]["users"], f"network '{name}' users") or [])
        users = users | change if add else users - change
        tx.execute("UPDATE networks SET users = ?, updated_at = ? WHERE name = ?",
                   (dump_payload(sorted(users)), time.time(), name))


def add_network_user(db: StateDB, name: str, cluster: str) -> None:
    """Record that ``cluster``'s stack uses the network ``name``."""
    _set_users(db, name, {cluster}, add=True)


def remove_network_user(db: StateDB, name: str, cluster: str) -> None:
    _set_users(db, name, {cluster}, add=False)


def networks_of(db: StateDB, cluster: str) -> list[NetworkRecord]:
    """The networks whose users name ``cluster``."""
    return [n for n in list_networks(db) if cluster in n.users]


def live_users(db: StateDB, record: NetworkRecord) -> list[str]:
    """The network's users that are still clusters in the state."""
    live = {c.name for c in db.list_clusters()}
    return [u for u in record.users if u in live]


def remove_network(db: StateDB, name: str) -> bool:
    with db.transaction() as tx:
        return tx.execute("DELETE FROM networks WHERE name = ?", (name,)) > 0
