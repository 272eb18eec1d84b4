"""The state's two kinds as a fixture parameter: each test that takes ``state`` runs
against a sqlite file and against a fresh database on the session's real PostgreSQL
server (:mod:`tests.support.postgres`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skyc.state.database import StateDB
from skyc.state.migrations import TABLES
from tests.support.postgres import (  # noqa: F401 - fixtures used by the tests here
    PostgresServer,
    postgres_server,
    postgres_url,
)


@dataclass
class StateKind:
    """Where one test's state lives: a sqlite file, or a PostgreSQL database."""

    kind: str
    path: Path | None = None
    url: str | None = None

    def open(self) -> StateDB:
        return StateDB(url=self.url) if self.url else StateDB(self.path)

    def raw(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement run past skyc (``?`` placeholders), committed; its rows."""
        if self.url:
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as pg:
                cur = pg.execute(sql.replace("?", "%s"), args)
                return list(cur.fetchall()) if cur.description else []
        assert self.path is not None
        conn = sqlite3.connect(self.path)
        try:
            rows = conn.execute(sql, args).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()

    def dump(self) -> str:
        """Every row of every table, as text (to look for what must not be there)."""
        return "\n".join(repr(row) for table in TABLES
                         for row in self.raw(f"SELECT * FROM {table}"))

    def env(self, home: Path) -> dict[str, str]:
        """What a skyc subprocess needs in its environment to use this state."""
        extra = {"SKYC_STATE_URL": self.url} if self.url else {}
        return {"SKYC_HOME": str(home), **extra}


@pytest.fixture(autouse=True)
def _no_state_url_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SKYC_STATE_URL in the shell that runs the tests is not theirs to use."""
    monkeypatch.delenv("SKYC_STATE_URL", raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateKind]:
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        yield StateKind("postgresql", url=server.create_database())
    else:
        yield StateKind("sqlite", path=tmp_path / "state.db")
