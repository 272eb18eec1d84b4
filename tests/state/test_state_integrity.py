"""The state never silently forgets a cluster: an emptied ``state.db`` leaves its
workspaces listed with the commands that adopt or destroy them, a copy of the state is
kept and restored, damaged pages, a read-only ``SKYC_HOME`` and a full disk are clear
errors naming the file, and what skyc writes under ``SKYC_HOME`` is private."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import skyc.state.database as state
from skyc.model.nodes import ClusterInfo, Node
from skyc.state.database import ClusterRecord, StateDB
from tests.support.terraform import requires_terraform

ROOT = Path(__file__).resolve().parents[2]
TASK = "examples/hello.yaml"  # two local nodes


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, SKYC_HOME=str(home), COLUMNS="200")


def _skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """skyc as a user runs it, from a shell whose umask lets others read new files."""
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True,
        env=_env(home), timeout=300, cwd=ROOT, preexec_fn=lambda: os.umask(0o022),
    )


def _ok(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = _skyc(home, *args)
    assert out.returncode == 0, (args, out.stdout[-2000:], out.stderr[-2000:])
    return out


def _clean_error(out: subprocess.CompletedProcess[str], *words: str) -> None:
    assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
    assert "Traceback" not in out.stderr, out.stderr
    for word in words:
        assert word in out.stderr, (word, out.stderr)


def _checkpoint(path: Path) -> None:
    """Everything in the write-ahead log into the file itself, the log emptied."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _truncate(path: Path) -> None:
    """What a full disk, a crash or a stray ``> state.db`` leaves."""
    path.write_bytes(b"")


@pytest.fixture()
def launched(tmp_path: Path) -> Iterator[Path]:
    """A home with cluster ``h1`` (two local nodes) up, destroyed afterwards."""
    home = tmp_path / "home"
    _ok(home, "apply", TASK, "--yes", "-c", "h1")
    yield home
    _skyc(home, "down", "h1", "--yes")


# -- an emptied state.db -------------------------------------------------------


@requires_terraform
@pytest.mark.parametrize("with_journal", [False, True])
def test_emptied_state_lists_the_workspace_and_what_to_do(launched: Path,
                                                          with_journal: bool) -> None:
    db = launched / "state.db"
    if not with_journal:
        _checkpoint(db)
    _truncate(db)
    out = _ok(launched, "status")
    assert "No clusters. Launch one" not in out.stdout
    line = next(line for line in out.stdout.splitlines() if line.strip().startswith("h1"))
    assert "local" in line and "2 nodes" in line and str(launched / "clusters" / "h1") in line
    assert "skyc state adopt NAME" in out.stdout and "skyc down NAME" in out.stdout
    [kept] = state.kept_backups(db)  # the copy from before the database was emptied
    assert str(kept) in out.stdout
    doc = json.loads(_ok(launched, "status", "--format", "json").stdout)
    assert doc["clusters"] == []
    assert [(o["name"], o["adopt"], o["destroy"]) for o in doc["orphans"]] == [
        ("h1", "skyc state adopt h1", "skyc down h1")]
    named = _skyc(launched, "status", "h1")
    _clean_error(named, "skyc state adopt h1", "skyc down h1")


@requires_terraform
def test_restoring_the_kept_copy_brings_the_cluster_back(launched: Path) -> None:
    db = launched / "state.db"
    _truncate(db)
    _ok(launched, "apply", TASK, "--yes", "-c", "h2")  # a new cluster, its own copies
    latest, kept = state.kept_backups(db)
    assert latest == state.backup_path(db) and _copy_names(latest) == ["h2"]
    assert _copy_names(kept) == ["h1"]  # the copy from before is not replaced
    out = _ok(launched, "state", "restore", "--from", str(kept))
    assert "1 cluster(s) recorded" in out.stdout
    assert "h2" in out.stdout  # recorded only in the replaced database: a workspace now
    rows = json.loads(_ok(launched, "status", "--format", "json").stdout)
    assert [c["name"] for c in rows["clusters"]] == ["h1"]
    assert rows["clusters"][0]["status"] == "UP" and len(rows["clusters"][0]["nodes"]) == 2
    assert [o["name"] for o in rows["orphans"]] == ["h2"]
    assert _ok(launched, "exec", "h1", "echo back").stdout.strip().endswith("back")
    _ok(launched, "state", "adopt", "h2")
    _ok(launched, "down", "h2", "--yes")


@requires_terraform
def test_adopt_records_the_cluster_from_its_workspace(launched: Path) -> None:
    _truncate(launched / "state.db")
    out = _ok(launched, "state", "adopt", "h1")
    assert "recorded again (UP" in out.stdout
    [row] = json.loads(_ok(launched, "status", "--format", "json").stdout)["clusters"]
    assert (row["name"], row["status"], row["cloud"], row["engine"]) == (
        "h1", "UP", "local", "terraform")
    assert [n["name"] for n in row["nodes"]] == ["head", "worker1"]
    assert _ok(launched, "exec", "h1", "echo adopted").stdout.strip().endswith("adopted")
    _clean_error(_skyc(launched, "state", "adopt", "h1"), "recorded already")
    _ok(launched, "down", "h1", "--yes")
    assert json.loads(_ok(launched, "status", "--format", "json").stdout) == {
        "format_version": "1.4", "clusters": [], "orphans": [], "networks": []}


# -- the copy skyc keeps -------------------------------------------------------


def _copy_names(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM clusters ORDER BY name")]
    finally:
        conn.close()


def test_a_lifecycle_change_writes_the_copy(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    copy = state.backup_path(path)
    with StateDB(path) as db:
        db.upsert_cluster(ClusterRecord(name="a", cloud="local"))
        assert _copy_names(copy) == ["a"]
        db.add_event("a", "apply", "an event is not a lifecycle change")
        db.upsert_cluster(ClusterRecord(name="b", cloud="local"))
        db.set_cluster_status("b", "UP")
        copy.unlink()
        db.add_job("b", "j")
        db.upsert_cluster(ClusterRecord(name="b", status="UP", cloud="local"))  # same status
        assert not copy.exists()
        db.set_cluster_status("a", "STOPPED")
        assert _copy_names(copy) == ["a", "b"]
        db.remove_cluster("a")
        assert _copy_names(copy) == ["b"]
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_emptied_database_keeps_the_earlier_copy_and_restores_it(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with StateDB(path) as db:
        db.upsert_cluster(ClusterRecord(name="kept", cloud="local"))
    _truncate(path)
    with StateDB(path) as db:
        assert db.list_clusters() == []
        db.upsert_cluster(ClusterRecord(name="new", cloud="local"))
    latest, earlier = state.kept_backups(path)
    assert latest == state.backup_path(path) and _copy_names(latest) == ["new"]
    assert _copy_names(earlier) == ["kept"]
    replaced = state.restore_state(path, earlier)
    assert replaced is not None and _copy_names(replaced) == ["new"]
    with StateDB(path) as db:
        assert [c.name for c in db.list_clusters()] == ["kept"]


def test_a_migration_keeps_a_copy_of_the_older_schema(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = state.connect(path)
    state.migrate(conn, upto=3)
    conn.close()
    StateDB(path).close()
    copy = sqlite3.connect(state.backup_path(path))
    assert copy.execute("PRAGMA user_version").fetchone()[0] == 3
    copy.close()


# -- damaged pages -------------------------------------------------------------


def _damaged_home(home: Path, how: str) -> Path:
    """A home whose state.db records cluster ``c1`` (with its nodes on disk), then
    has its pages after the first overwritten (``pages``) or its header (``header``)."""
    workspace = home / "clusters" / "c1"
    (workspace / "node").mkdir(parents=True)
    info = ClusterInfo(name="c1", cloud="local", workspace=str(workspace), nodes=[
        Node(name="head", rank=0, transport="local", ip="127.0.0.1",
             node_dir=str(workspace / "node"))])
    (workspace / "cluster.json").write_text(info.model_dump_json())
    path = home / "state.db"
    with StateDB(path) as db:
        db.upsert_cluster(ClusterRecord(name="c1", status="UP", cloud="local",
                                        workspace=str(workspace)))
        for n in range(50):
            db.add_event("c1", "apply", f"event {n} " + "x" * 200)
    _checkpoint(path)
    data = bytearray(path.read_bytes())
    start, end = (4096, len(data)) if how == "pages" else (0, 100)
    data[start:end] = b"\xab" * (end - start)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("how", ["pages", "header"])
@pytest.mark.parametrize("args", [
    ("status",), ("queue",), ("exec", "c1", "echo hi"),
    ("apply", TASK, "--yes", "-c", "c1"), ("jobs", "launch", TASK, "--yes"),
], ids=["status", "queue", "exec", "apply", "jobs-launch"])
def test_damaged_pages_are_a_clear_error(tmp_path: Path, how: str,
                                         args: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    path = _damaged_home(home, how)
    out = _skyc(home, *args)
    _clean_error(out, f"the state database {path} is damaged", "skyc state restore")
    assert "fresh" not in out.stderr  # never "move it aside, skyc creates a new one"


def test_restore_puts_back_the_copy_of_a_damaged_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _damaged_home(home, "pages")
    out = _ok(home, "state", "restore")
    assert "1 cluster(s) recorded" in out.stdout
    kept = next(home.glob("state.db.before-restore-*"))
    assert kept.read_bytes()[4096:4100] == b"\xab" * 4  # the damaged file, kept as it was
    assert json.loads(_ok(home, "status", "--format", "json").stdout)["clusters"][0][
        "name"] == "c1"
    assert path.exists()


def test_a_damaged_database_without_a_copy_says_how_to_adopt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = _damaged_home(home, "header")
    for copy in state.kept_backups(path):
        copy.unlink()
    _clean_error(_skyc(home, "status"), f"move {path} aside", "skyc state adopt NAME")


# -- a read-only SKYC_HOME, a full disk ---------------------------------------

_READ_ONLY = 'mount --bind "$H" "$H" && mount -o remount,bind,ro "$H" && exec "$@"'
_TINY = 'mount -t tmpfs -o size=1m tmpfs "$H" && mkdir "$H/home" && exec "$@"'


def _isolated(script: str, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` in a mount namespace of its own, after ``script`` mounts ``$H``."""
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *argv], capture_output=True, text=True,
        env={**_env(home), "H": str(home)}, timeout=300, cwd=ROOT,
    )


@pytest.fixture()
def can_mount(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a read-only SKYC_HOME")
    out = _isolated(_READ_ONLY, probe, "sh", "-c", '! touch "$H/x" 2>/dev/null')
    if out.returncode != 0:
        pytest.skip(f"cannot mount a read-only directory here: {out.stderr.strip()[:200]}")


def _read_only_skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _isolated(_READ_ONLY, home, sys.executable, "-m", "skyc", *args)


@pytest.mark.usefixtures("can_mount")
@pytest.mark.parametrize("journal", [False, True])
def test_a_read_only_home_is_read_and_never_written(tmp_path: Path, journal: bool) -> None:
    home = tmp_path / "home"
    path = home / "state.db"
    with StateDB(path) as db:
        db.upsert_cluster(ClusterRecord(name="ro", status="UP", cloud="local"))
        if journal:  # a database whose write-ahead log is still beside it
            keep = sqlite3.connect(path)
            keep.execute("SELECT 1 FROM clusters").fetchall()
    status = _read_only_skyc(home, "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    assert [c["name"] for c in json.loads(status.stdout)["clusters"]] == ["ro"]
    plan = _read_only_skyc(home, "plan", TASK, "--no-diff")
    assert plan.returncode == 0, plan.stderr
    for args in (("jobs", "launch", TASK, "--yes"), ("state", "adopt", "ro"),
                 ("apply", TASK, "--yes", "-c", "other")):
        out = _read_only_skyc(home, *args)
        _clean_error(out, str(home))
        assert "fresh" not in out.stderr
    if journal:
        keep.close()


@requires_terraform
@pytest.mark.usefixtures("can_mount")
def test_a_read_only_home_keeps_status_and_plan_of_a_launched_cluster(launched: Path) -> None:
    for args in (("status",), ("plan", TASK)):
        out = _read_only_skyc(launched, *args)
        assert out.returncode == 0, (args, out.stderr)
    jobs = _read_only_skyc(launched, "jobs", "launch", TASK, "--yes")
    _clean_error(jobs, f"cannot write the state database {launched / 'state.db'}")


@requires_terraform
@pytest.mark.usefixtures("can_mount")
def test_queue_and_logs_on_a_read_only_home(launched: Path) -> None:
    for args in (("queue", "h1"), ("logs", "h1", "1")):
        out = _read_only_skyc(launched, *args)
        assert out.returncode == 0, (args, out.stderr)


_FILL = """
import subprocess, sys
from skyc.errors import StateError
from skyc.state.database import ClusterRecord, StateDB
with StateDB() as db:
    db.upsert_cluster(ClusterRecord(name="c1", cloud="local"))
    subprocess.run(["dd", "if=/dev/zero", f"of={sys.argv[1]}/fill", "bs=4k"],
                   capture_output=True)
    try:
        for n in range(5000):
            db.add_event("c1", "apply", "x" * 1000)
    except StateError as exc:
        print(f"{exc}\\n{exc.hint}")
"""


@pytest.mark.usefixtures("can_mount")
def test_a_full_disk_names_the_state_database(tmp_path: Path) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    home = mount / "home"
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", _TINY, "sh", sys.executable, "-c", _FILL, str(mount)],
        capture_output=True, text=True, env={**_env(home), "H": str(mount)}, timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert f"cannot write the state database {home / 'state.db'}: no space left" in out.stdout
    assert "free space" in out.stdout


# -- permissions -----------------------------------------------------------------


def _loose(home: Path) -> list[str]:
    """What under ``home`` others could read or enter (the local nodes' own files,
    behind their 0700 directory, aside)."""
    found = []
    for path in [home, *home.rglob("*")]:
        if path.is_symlink() or "nodes" in path.relative_to(home).parts[2:3]:
            continue
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            found.append(f"{oct(stat.S_IMODE(path.stat().st_mode))} {path}")
    return found


@requires_terraform
def test_everything_skyc_writes_under_its_home_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _ok(home, "apply", TASK, "--yes", "-c", "p1")
    try:
        workspace = home / "clusters" / "p1"
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        for path in (home / "state.db", workspace / "terraform.tfstate",
                     next(workspace.glob("logs/*.log")), next(home.glob("logs/p1/**/*.log")),
                     home / "state.db.bak"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE((workspace / "nodes").stat().st_mode) == 0o700
        assert _loose(home) == []
    finally:
        _skyc(home, "down", "p1", "--yes")


def test_an_older_home_is_made_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    StateDB(home / "state.db").close()
    (home / "state.db").chmod(0o644)
    _ok(home, "status")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "state.db").stat().st_mode) == 0o600


@requires_terraform
def test_a_local_job_writes_with_the_users_umask(tmp_path: Path) -> None:
    """skyc's own files are private; what the user's job writes follows the user's umask
    (022 here), as it would when the user ran the command by hand."""
    home = tmp_path / "home"
    task = tmp_path / "umask.yaml"
    task.write_text("resources: {infra: local}\nrun: touch made.txt && stat -c %a made.txt\n")
    out = _ok(home, "apply", str(task), "--yes", "-c", "um", "--down")
    assert "644" in out.stdout, out.stdout


@requires_terraform
def test_down_all_destroys_a_workspace_the_state_forgot(launched: Path) -> None:
    _truncate(launched / "state.db")
    out = _ok(launched, "down", "-a", "--yes")
    assert "no clusters to destroy" not in out.stdout
    assert not (launched / "clusters" / "h1" / "nodes").exists()
    status = _ok(launched, "status", "--format", "json")
    assert json.loads(status.stdout)["orphans"] == []
