"""``skyc storage``: the buckets skyc created (SkyPilot's ``sky storage``): list them,
delete one no cluster uses."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from skyc.state.database import StateDB
    from skyc.state.storage import StorageRecord

storage_app = typer.Typer(
    help="The buckets skyc created for tasks (file_mounts with a name): list them, or "
    "delete one that no cluster uses. Buckets a task only reads are never listed, "
    "changed or deleted.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


def _bucket(db: StateDB, record: StorageRecord) -> dict[str, Any]:
    from skyc.state.storage import live_users

    return {"name": record.name, "store": record.store, "url": record.url,
            "region": record.region, "status": record.status,
            "persistent": record.persistent, "cluster": record.cluster,
            "used_by": live_users(db, record), "owner": record.owner,
            "created_at": record.created_at}


def storage_ls(
    fmt: str = typer.Option("table", "--format", metavar="table|json", help="table or json."),
) -> None:
    """List the buckets skyc created: store, status, whether they outlive their cluster,
    and which clusters mount them."""
    from skyc.cli.output import fitted_table, print_table, print_text
    from skyc.errors import ConfigError
    from skyc.schemas import versions
    from skyc.state.database import StateDB
    from skyc.state.storage import VOLUME_STORE, list_storage

    if fmt not in ("table", "json"):
        raise ConfigError(f"--format: expected one of table, json, got {fmt!r}")
    with StateDB() as db:
        buckets = [_bucket(db, r) for r in list_storage(db) if r.store != VOLUME_STORE]
    if fmt == "json":
        typer.echo(json.dumps({"format_version": versions.STORAGE, "buckets": buckets},
                              indent=2, sort_keys=True))
        return
    if not buckets:
        print_text("no buckets (skyc lists the buckets it created: file_mounts with a name)")
        return
    rows = [[b["name"], b["store"], b["status"],
             "yes" if b["persistent"] else f"no ({b['cluster']})",
             ", ".join(b["used_by"]) or "-", b["owner"] or "-",
             time.strftime("%Y-%m-%d %H:%M", time.localtime(b["created_at"]))]
            for b in buckets]
    print_table(fitted_table(None, ["NAME", "STORE", "STATUS", "PERSISTENT", "USED BY",
                                    "OWNER", "CREATED"], rows, drop=["OWNER", "CREATED"]))


def storage_delete(
    names: list[str] = typer.Argument(..., metavar="NAME...", help="Buckets to delete."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
) -> None:
    """Delete buckets skyc created, with every object in them. Refused for a bucket a
    cluster still mounts, and for buckets skyc did not create."""
    from skyc.apply.buckets import delete_bucket
    from skyc.cli.output import console
    from skyc.state.database import StateDB
    from skyc.state.storage import get_storage

    with StateDB() as db:
        for name in names:
            if get_storage(db, name) is None:
                delete_bucket(name, db)  # raises: says what exists
        them = "them" if len(names) > 1 else "it"
        if not yes and not typer.confirm(
                f"Delete {', '.join(names)} and every object in {them}?", err=True):
            raise typer.Abort()
        for name in names:
            with console.status(f"deleting {name}"):
                delete_bucket(name, db)
            console.print(f"[bold]{name}[/]: deleted")


def register(app: typer.Typer) -> None:
    storage_app.command("ls")(storage_ls)
    storage_app.command("delete")(storage_delete)
    app.add_typer(storage_app, name="storage")
