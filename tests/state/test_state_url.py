"""Choosing the state (``state:`` in the config, ``SKYC_STATE_URL``) and what goes wrong
with a PostgreSQL one: wrong credentials, nothing listening, a newer schema, a connection
dropped by the server. Each is a clear error naming the URL without its password, with
no traceback; the password never reaches output, files under SKYC_HOME or the state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from skyc.errors import ConfigError, StateError
from skyc.settings.config import load_config
from skyc.settings.state_url import check_setting, redacted_url, scrub
from skyc.state.database import ClusterRecord, StateDB
from tests.state.team import ROOT, ok, skyc
from tests.support.postgres import PASSWORD, PostgresServer, _free_port


def test_redacted_url_hides_every_password() -> None:
    assert redacted_url("postgresql://u:s3cr%40t@db:5432/skyc") == "postgresql://u:***@db:5432/skyc"
    assert redacted_url("postgres://u@db/skyc?sslmode=require&password=pw") == (
        "postgres://u@db/skyc?sslmode=require&password=***")
    assert redacted_url("postgresql://db/skyc") == "postgresql://db/skyc"
    assert scrub('failed for "s3cr@t" and s3cr%40t', "postgresql://u:s3cr%40t@db/x") == (
        'failed for "***" and ***')


@pytest.mark.parametrize("value", ["mysql://u:hunter2@h/db",
                                   "postgresql://u:hunter2@h:99999/db", "state.db"])
def test_a_setting_that_is_no_state_is_refused_without_its_password(
        tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="expected 'sqlite' or a postgresql://") as info:
        check_setting(value, "SKYC_STATE_URL")
    assert "hunter2" not in str(info.value)
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"state": value}))
    with pytest.raises(ConfigError, match=r"config.yaml: state: .*expected 'sqlite'") as info:
        load_config(config)
    assert "hunter2" not in str(info.value)
    assert check_setting(" SQLite ", "state") is None


def test_the_config_names_the_state_and_the_environment_wins(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database()
    home = tmp_path / "home"
    home.mkdir()
    with StateDB(url=url) as db:
        db.upsert_cluster(ClusterRecord(name="shared", cloud="aws"))
    (home / "config.yaml").write_text(f"state: {url}\n")
    assert "shared" in ok(home, "status")
    assert not (home / "state.db").exists()
    elsewhere = postgres_server.url("t_absent")
    (home / "config.yaml").write_text(f"state: {elsewhere}\n")
    assert "shared" in ok(home, "status", url=url)                 # SKYC_STATE_URL wins
    assert "No clusters" in ok(home, "status", url="sqlite")       # ... even for sqlite
    _clean_error(skyc(home, "state", "restore", url=url),          # state.db is not it
                 "the state is the PostgreSQL database postgresql://skyc:***@",
                 "SKYC_STATE_URL=sqlite")


def test_a_config_that_never_says_state_is_not_parsed_to_find_it(tmp_path: Path) -> None:
    """Commands that read no config (status) keep working beside a config that a later
    command will refuse, and pay nothing for it; one that says "state" is read."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("infra: [aws\n")          # not YAML
    assert "No clusters" in ok(home, "status")
    (home / "config.yaml").write_text("infra: [aws\nstate: sqlite\n")
    _clean_error(skyc(home, "status"), "config.yaml")


def _clean_error(out: subprocess.CompletedProcess[str], *words: str) -> None:
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    assert PASSWORD not in out.stdout + out.stderr
    for word in words:
        assert word in out.stderr, (word, out.stderr)


def test_wrong_credentials_unreachable_and_missing_databases(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database()
    name = url.rsplit("/", 1)[1]
    wrong = postgres_server.url(name, password="not-the-" + PASSWORD)
    _clean_error(skyc(tmp_path, "status", url=wrong), "cannot sign in to the state database",
                 f"postgresql://skyc:***@127.0.0.1:{postgres_server.port}/{name}",
                 "password authentication failed")
    assert "not-the-" not in skyc(tmp_path, "status", url=wrong).stderr
    port = _free_port()
    _clean_error(skyc(tmp_path, "queue", url=postgres_server.url(name, port=port)),
                 "cannot reach the state database", f"skyc:***@127.0.0.1:{port}/",
                 "Connection refused")
    _clean_error(skyc(tmp_path, "status", url=postgres_server.url("t_absent")),
                 "the state database postgresql://skyc:***@", "does not exist")
    assert not list(tmp_path.rglob("state.db"))


def test_a_newer_schema_is_refused_by_every_command(tmp_path: Path, postgres_url: str) -> None:
    StateDB(url=postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE skyc_schema SET version = 99")
    for args in (("status",), ("state", "check")):
        _clean_error(skyc(tmp_path, *args, url=postgres_url),
                     "schema version 99 is newer than this skyc understands",
                     "postgresql://skyc:***@", "upgrade skyc")


def test_a_dropped_connection_loses_no_write_and_is_made_again(postgres_url: str) -> None:
    with StateDB(url=postgres_url) as db:
        db.upsert_cluster(ClusterRecord(name="c1", cloud="aws"))

        def drop() -> None:
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                              " WHERE application_name = 'skyc'")

        drop()
        assert [c.name for c in db.list_clusters()] == ["c1"]   # a read is tried again
        drop()
        with pytest.raises(StateError, match=r"a write to the state database .* failed: "
                           r"terminating connection.*nothing of that write was recorded"
                           ) as info:
            db.add_event("c1", "apply", "lost")
        assert PASSWORD not in str(info.value) + str(info.value.hint)
        assert "skyc:***@" in str(info.value)
        db.add_event("c1", "apply", "kept")                      # the next write reconnects
        assert [e.message for e in db.events("c1")] == ["kept"]


def test_the_password_stays_out_of_home_output_and_state(tmp_path: Path,
                                                         postgres_url: str) -> None:
    from tests.state.team import local_cluster

    home = tmp_path / "home"
    local_cluster(home, "c1")
    (home / "state.db").unlink()       # the record lives in PostgreSQL from here on
    with StateDB(url=postgres_url) as db:
        db.upsert_cluster(ClusterRecord(name="c1", status="UP", cloud="local",
                                        workspace=str(home / "clusters" / "c1"),
                                        nodes=[{"name": "head", "rank": 0}]))
    outputs = [ok(home, *args, url=postgres_url) for args in (
        ("exec", "c1", "echo hi"), ("queue",), ("status", "-v"), ("logs", "c1", "1"),
        ("state", "check"))]
    assert all(PASSWORD not in text for text in outputs)
    for path in home.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    with psycopg.connect(postgres_url) as conn:
        for table in ("clusters", "jobs", "events"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                assert PASSWORD not in repr(row)
    assert not (home / "state.db").exists()


def test_a_sqlite_state_never_imports_the_postgresql_driver(tmp_path: Path) -> None:
    driver = ("import sys; sys.argv = ['skyc', 'status']\n"
              "from skyc.cli import main\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print('psycopg' in sys.modules)")
    env = dict(os.environ, SKYC_HOME=str(tmp_path))
    env.pop("SKYC_STATE_URL", None)
    out = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
