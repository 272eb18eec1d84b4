"""``skyc serve update`` end to end on ``local`` (real processes, as
test_service_local): a service of two replicas moves to new versions of its task
(each version's replicas answer ``/version`` with its ``APP_VERSION``) while a client
sends requests through the endpoint all along, rolling and then blue-green; an
update goes on across a restart of its controller; a bad new task changes nothing.

The tests share the service (module scope) and run in order.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from skyc.serve.store import ServeStore
from tests.e2e.conftest import Skyc
from tests.serve.conftest import (
    cleanup,
    controller_pids,
    get,
    make_runner,
    ready,
    service_yaml,
    status,
    wait_status,
)

# One worker runs the module's tests, in order, on the one service they share.
pytestmark = pytest.mark.xdist_group("serve-update")

NAME = "web"
TRAFFIC_LIMIT_S = 90.0   # the client stops by then whatever happens


def _task(version: str) -> str:
    """Version ``version`` of the service: its replicas answer it, and only they pass
    its readiness probe (each replica is probed as its own version says)."""
    return service_yaml(f"  readiness_probe:\n    path: /ready/{version}\n"
                        "    initial_delay_seconds: 60\n  replicas: 2\n",
                        extra=f"envs:\n  APP_VERSION: {version}\n")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Skyc, str]]:
    runner = make_runner(tmp_path_factory.mktemp("update"))
    for version in ("v1", "v2", "v3", "v4"):
        runner.write(f"{version}.yaml", _task(version))
    try:
        up = runner.ok("serve", "up", "v1.yaml", "-n", NAME, "-y")
        url = up.stdout.split()[1]
        wait_status(runner, NAME, lambda d: len(ready(d)) == 2)
        yield runner, url
    finally:
        cleanup(runner)


class Traffic:
    """A client sending requests to ``/version`` through the endpoint one after
    another (until stopped, at most ``TRAFFIC_LIMIT_S``), and a watcher of the
    replicas' statuses in the store."""

    def __init__(self, url: str, home: Path) -> None:
        self.url, self.db = url, home / "serve" / "services.db"
        self.answers: list[str] = []
        self.failures: list[str] = []
        self.fewest_ready = 99
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._send), threading.Thread(target=self._watch)]

    def _send(self) -> None:
        deadline = time.monotonic() + TRAFFIC_LIMIT_S
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                self.answers.append(get(self.url + "/version").split()[0])
            except OSError as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.01)

    def _watch(self) -> None:
        with ServeStore(self.db, create=False) as store:
            while not self.stop.is_set():
                statuses = [r.status for r in store.replicas(NAME)]
                self.fewest_ready = min(self.fewest_ready, statuses.count("READY"))
                time.sleep(0.05)

    def __enter__(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        while len(self.answers) < 5 and not self.failures:
            time.sleep(0.01)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


def _done(version: int) -> Callable[[dict[str, Any]], bool]:
    """The update to ``version`` is over: two ready replicas, both of it."""
    def check(doc: dict[str, Any]) -> bool:
        live = [r for r in doc["replicas"] if r["status"] != "FAILED"]
        return (doc["update_mode"] is None and doc["active_versions"] == [version]
                and len(live) == 2 and all(r["status"] == "READY" for r in live))
    return check


def _every_replica_answers(runner: Skyc, url: str, version: str) -> dict[str, Any]:
    doc = status(runner, NAME)
    for r in ready(doc):
        assert get(r["endpoint"] + "/version").split()[0] == version, r
    assert {get(url + "/version").split()[0] for _ in range(6)} == {version}
    return doc


def test_a_rolling_update_loses_no_request(served: tuple[Skyc, str]) -> None:
    runner, url = served
    with Traffic(url, runner.home) as traffic:
        out = runner.ok("serve", "update", NAME, "v2.yaml", "-y")
        assert out.stdout.split() == [NAME, "version", "2"]
        doc = wait_status(runner, NAME, _done(2))
    assert traffic.failures == [] and len(traffic.answers) > 50
    assert traffic.fewest_ready >= 2   # never fewer ready replicas than min_replicas
    assert traffic.answers[0] == "v1" and traffic.answers[-1] == "v2"
    assert [(r["id"], r["version"]) for r in ready(doc)] == [(3, 2), (4, 2)]
    assert doc["version"] == 2 and runner.clusters() == ["web-3", "web-4"]
    _every_replica_answers(runner, url, "v2")
    table = runner.ok("serve", "status", NAME).stdout
    assert "VERSION" in table and "web-3" in table


def test_a_blue_green_update_switches_all_traffic_at_once(served: tuple[Skyc, str]) -> None:
    runner, url = served
    with Traffic(url, runner.home) as traffic:
        runner.ok("serve", "update", NAME, "v3.yaml", "--mode", "blue_green", "-y")
        during = wait_status(runner, NAME, lambda d: d["active_versions"] == [2, 3])
        assert during["update_mode"] == "blue_green" and during["version"] == 3
        wait_status(runner, NAME, _done(3))
    assert traffic.failures == [] and traffic.fewest_ready >= 2
    first_new = traffic.answers.index("v3")
    # Old replicas alone, then new ones alone: never a mix.
    assert set(traffic.answers[:first_new]) == {"v2"}
    assert set(traffic.answers[first_new:]) == {"v3"}
    _every_replica_answers(runner, url, "v3")


def test_an_update_goes_on_after_its_controller_restarts(served: tuple[Skyc, str]) -> None:
    runner, url = served
    runner.ok("serve", "update", NAME, "v4.yaml", "-y")
    db = runner.home / "serve" / "services.db"
    with ServeStore(db, create=False) as store:
        deadline = time.monotonic() + 30
        while not any(r.version == 4 for r in store.replicas(NAME)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    [pid] = controller_pids(runner.home)
    os.kill(pid, signal.SIGKILL)

    shown = runner.ok("serve", "status", NAME)
    assert "restarted it" in shown.stderr
    doc = wait_status(runner, NAME, _done(4))
    assert doc["version"] == 4
    _every_replica_answers(runner, url, "v4")
    log = runner.ok("serve", "logs", NAME, "--controller").stdout
    assert "version 4: update done" in log


def test_a_bad_new_task_changes_nothing(served: tuple[Skyc, str]) -> None:
    runner, _ = served
    runner.write("plain.yaml", "resources:\n  infra: local\nrun: echo hi\n")
    runner.write("bad.yaml", service_yaml("  load_balancing_policy: fastest\n"))
    runner.write("tls.yaml", service_yaml(
        "  replicas: 1\n  tls:\n    keyfile: nokey.pem\n    certfile: nocert.pem\n"))
    before = status(runner, NAME)
    cases = [("plain.yaml", "plain.yaml: service: the task has no service section"),
             ("bad.yaml", "bad.yaml: service.load_balancing_policy: unknown policy"),
             ("tls.yaml", "tls.yaml: service.tls.keyfile: no such file")]
    for file, words in cases:
        result = runner("serve", "update", NAME, file, "-y")
        assert result.returncode != 0 and words in result.stderr, str(result)
    result = runner("serve", "update", NAME, "v4.yaml", "--mode", "fastest", "-y")
    assert result.returncode != 0 and "expected one of rolling, blue_green" in result.stderr
    result = runner("serve", "update", "nosuch", "v4.yaml", "-y")
    assert result.returncode != 0 and "no service named 'nosuch'" in result.stderr
    after = status(runner, NAME)
    assert after["version"] == before["version"] == 4
    assert after["replicas"] == before["replicas"]
    assert not (runner.home / "serve" / NAME / "task-v5.yaml").exists()


def test_a_new_version_that_never_starts_leaves_the_old_one_serving(
        served: tuple[Skyc, str]) -> None:
    runner, url = served
    runner.write("broken.yaml", service_yaml(
        "  readiness_probe: /health\n  replicas: 2\n",
        extra="envs:\n  APP_VERSION: v5\nsetup: exit 3\n"))
    with Traffic(url, runner.home) as traffic:
        runner.ok("serve", "update", NAME, "broken.yaml", "-y")
        doc = wait_status(runner, NAME, lambda d: sum(
            r["version"] == 5 and r["status"] == "FAILED" for r in d["replicas"]) == 3)
        time.sleep(0.7)   # a few more rounds: nothing more is launched or retired
    assert traffic.failures == [] and set(traffic.answers) == {"v4"}
    doc = status(runner, NAME)
    assert doc["status"] == "READY" and doc["update_mode"] == "rolling"
    assert doc["version"] == 5 and doc["active_versions"] == [4]
    assert sum(r["version"] == 5 for r in doc["replicas"]) == 3
    assert "4 (rolling to 5)" in runner.ok("serve", "status", NAME).stdout
