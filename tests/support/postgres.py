"""A real PostgreSQL 15 server for tests: one per test session, on 127.0.0.1 on a free
port, its data and socket in a temporary directory, run by a dedicated non-root user
(``initdb`` refuses root, and CI runs as root: the system user ``skyc-pg`` is made when
missing). Password authentication over TCP (scram-sha-256), so that tests can use wrong
credentials; each test gets a fresh database (``CREATE DATABASE``, a few milliseconds).

Tests skip with a reason only when the PostgreSQL binaries are absent (Debian package
``postgresql-15``). The server is stopped and its directory removed at the end.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SERVER_USER = "skyc-pg"
SUPERUSER = "skyc"
# Not a secret: a throwaway server on loopback, gone at the end of the session.
PASSWORD = "pg-test-Secret-4711"


def bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` of PostgreSQL 15 (else the newest installed) are."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                   else 0)
    preferred = [p for p in found if Path(p).parent.name == "15"] or found[-1:]
    for candidate in preferred:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None


def postgres_unavailable() -> str | None:
    if bin_dir() is None:
        return ("PostgreSQL server binaries are not installed (Debian package postgresql-15: "
                "/usr/lib/postgresql/15/bin/initdb)")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ensure_server_user() -> str | None:
    """The user that runs the server: this one, or ``skyc-pg`` (made when missing) as
    root. None when running as that user needs no switch."""
    if os.geteuid() != 0:
        return None
    with contextlib.suppress(KeyError):
        pwd.getpwnam(SERVER_USER)
        return SERVER_USER
    for _ in range(50):  # another test process may hold /etc/passwd's lock
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", SERVER_USER],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0 or "already exists" in done.stderr:
            return SERVER_USER
        if "lock" not in done.stderr:
            break
        time.sleep(0.2)
    raise RuntimeError(f"useradd {SERVER_USER}: {done.stderr.strip()}")


@dataclass
class PostgresServer:
    """A running server; :meth:`url` names a database on it."""

    root: Path
    port: int
    bindir: Path
    user: str | None
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres", password: str = PASSWORD,
            port: int | None = None) -> str:
        return (f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{port or self.port}/"
                f"{database}")

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=120, cwd=self.root)

    def start(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        done = self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--pwfile",
                         str(pwfile), "--auth-local=trust", "--auth-host=scram-sha-256",
                         "--encoding=UTF8", "--locale=C", "--no-sync")
        pwfile.unlink()
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")
        options = (f"-k {self.root} -h 127.0.0.1 -p {self.port} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c wal_level=minimal "
                   "-c max_wal_senders=0")
        done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"),
                         "-o", options, "-w", "-t", "60", "start")
        if done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}{log}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, prefix: str = "t") -> str:
        """A new, empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            # Copying template1's files beats writing them through the WAL here.
            conn.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY')
        return self.url(name)


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    reason = postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    bindir = bin_dir()
    assert bindir is not None
    user = _ensure_server_user()
    root = Path(tempfile.mkdtemp(prefix="skyc-pg-"))
    server = PostgresServer(root=root, port=_free_port(), bindir=bindir, user=user)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test session."""
    with running_server() as server:
        yield server


@pytest.fixture()
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres_server.create_database()
