"""Which service a cluster is a live replica of (what ``skyc down`` of a replica's
cluster is refused with), read from a real services database."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.errors import SkycError
from skyc.serve.records import Replica, Service
from skyc.serve.store import ServeStore
from skyc.state.service_claims import check_not_replica, replica_of, skip_replicas


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    return tmp_path


def _service(store: ServeStore) -> None:
    store.add_service(Service(name="web", status="READY", created_at=0.0, port=30001,
                              task_file="t.yaml", cwd="/", envs={}, config={}, target=2))


def test_a_live_replica_cluster_is_refused_naming_serve_down(home: Path) -> None:
    assert replica_of("web-1") is None   # no services database at all
    with ServeStore() as store:
        _service(store)
        store.put_replica(Replica("web", 1, "web-1", 20001, "READY", 0.0))
        store.put_replica(Replica("web", 2, "web-2", 20002, "FAILED", 0.0))
        store.put_replica(Replica("web", 3, "web-3", 20003, "SHUTTING_DOWN", 0.0))
    assert replica_of("web-1") == ("web", 1)
    with pytest.raises(SkycError) as caught:
        check_not_replica("web-1")
    assert "replica 1 of service web" in caught.value.message
    assert "skyc serve down web" in (caught.value.hint or "")
    for cluster in ("web-2", "web-3", "other"):   # gone, going (its controller's), not one
        check_not_replica(cluster)
    kept, notes = skip_replicas(["web-1", "other"])
    assert kept == ["other"] and "skyc serve down web" in notes[0]
