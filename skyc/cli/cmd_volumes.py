"""``skyc volumes``: volumes with a life of their own (SkyPilot's ``sky volumes``):
Kubernetes PersistentVolumeClaims that tasks mount by name."""

from __future__ import annotations

import time
from pathlib import Path

import typer

volumes_app = typer.Typer(
    help="Volumes (Kubernetes PersistentVolumeClaims) that outlive clusters: create one "
    "from a volume file, list them, delete one no cluster uses. A task mounts one by "
    "name: volumes: {/mnt/data: NAME}.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


def volumes_apply(
    path: Path = typer.Argument(..., metavar="VOLUME_YAML",
                                help="name, type: k8s-pvc, infra: k8s/CONTEXT, size, "
                                "[use_existing, labels, config]."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
) -> None:
    """Create the volume (or, with use_existing: true, record a claim that exists)."""
    from skyc.apply.volumes import apply_volume
    from skyc.cli.output import console
    from skyc.settings.config import load_config
    from skyc.state.database import StateDB
    from skyc.task.volume_file import load_volume_file

    volume = load_volume_file(path)
    verb = "Record" if volume.use_existing else "Create"
    if not yes and not typer.confirm(f"{verb} volume {volume.name!r}?", err=True):
        raise typer.Abort()
    with StateDB() as db, console.status(f"volume {volume.name}"):
        record = apply_volume(volume, load_config(), db)
    console.print(f"[bold]{record.name}[/]: {record.status.lower()} ({record.url})",
                  highlight=False)


def volumes_ls() -> None:
    """List the volumes skyc created or recorded, and the clusters that mount them."""
    from skyc.apply.volumes import list_volumes
    from skyc.cli.output import fitted_table, print_table, print_text
    from skyc.state.database import StateDB
    from skyc.state.storage import live_users

    with StateDB() as db:
        rows = [[r.name, r.url, r.status, ", ".join(live_users(db, r)) or "-",
                 r.owner or "-", time.strftime("%Y-%m-%d %H:%M",
                                               time.localtime(r.created_at))]
                for r in list_volumes(db)]
    if not rows:
        print_text("no volumes (create one with `skyc volumes apply VOLUME_YAML`)")
        return
    print_table(fitted_table(None, ["NAME", "CLAIM", "STATUS", "USED BY", "OWNER",
                                    "CREATED"], rows, drop=["OWNER", "CREATED"]))


def volumes_delete(
    names: list[str] = typer.Argument(..., metavar="NAME...", help="Volumes to delete."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
) -> None:
    """Delete volumes skyc created, with their data (a recorded one is only forgotten).
    Refused while a cluster mounts it."""
    from skyc.apply.volumes import delete_volume
    from skyc.cli.output import console
    from skyc.state.database import StateDB

    if not yes and not typer.confirm(f"Delete {', '.join(names)} and the data in "
                                     f"{'them' if len(names) > 1 else 'it'}?", err=True):
        raise typer.Abort()
    with StateDB() as db:
        for name in names:
            with console.status(f"deleting {name}"):
                delete_volume(name, db)
            console.print(f"[bold]{name}[/]: deleted", highlight=False)


def register(app: typer.Typer) -> None:
    volumes_app.command("apply")(volumes_apply)
    volumes_app.command("ls")(volumes_ls)
    volumes_app.command("delete")(volumes_delete)
    app.add_typer(volumes_app, name="volumes")
