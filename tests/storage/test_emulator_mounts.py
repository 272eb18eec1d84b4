"""GCS and Azure Blob buckets on a job's nodes, for real: gcp-storage-emulator and Azurite
on 127.0.0.1, reached by rclone with the settings skyc makes from the user's environment
the way Google's and Azure's own tools read it (STORAGE_EMULATOR_HOST,
AZURE_STORAGE_CONNECTION_STRING), real FUSE mounts on local nodes. A job's buckets come
the way an apply makes them: a task's file_mounts read by skyc.storage, the nodes'
settings from skyc.storage.access, the mounts from skyc.apply.buckets. Buckets and
objects are made and read back through each emulator's own API.

Every test's mounts are released at its teardown, even when it fails."""

from __future__ import annotations

import contextlib
import io
import shutil
import urllib.parse
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from skyc.apply.buckets import Buckets
from skyc.errors import StorageError
from skyc.model.nodes import ClusterInfo
from skyc.runtime.node_agent.mounts import Rclone
from skyc.runtime.run import run_job
from skyc.runtime.spec import JobSpec
from skyc.settings.config import SkycConfig
from skyc.storage import bucket_uses
from skyc.storage.access import rclone_env
from skyc.storage.checks import check_source
from skyc.storage.uses import BucketUse
from skyc.task import load_tasks
from tests.support.emulators import (
    AZURITE_KEY,
    Azurite,
    EmulatorUnavailable,
    GcsEmulator,
    start_azurite,
    start_gcs,
)
from tests.support.storage import FUSE_UNAVAILABLE, files_holding, mounts_released

needs_fuse = pytest.mark.skipif(FUSE_UNAVAILABLE is not None, reason=FUSE_UNAVAILABLE or "")
needs_rclone = pytest.mark.skipif(shutil.which("rclone") is None,
                                  reason="rclone is not installed (Debian package rclone)")
CHECKPOINT = ("python3 -c \"import zipfile, os; z = zipfile.ZipFile(os.path.expanduser("
              "'~/ckpt/step-$SKYC_NODE_RANK.zip'), 'w'); z.writestr('w', 'x' * 300000); "
              "z.close()\"")


def _serve(start: Callable[[Path], contextlib.AbstractContextManager[Any]],
           workdir: Path) -> Iterator[Any]:
    """A module's emulator, skipped with the reason when it cannot run here."""
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(start(workdir))
        except EmulatorUnavailable as exc:
            pytest.skip(str(exc))
        yield server


@pytest.fixture(scope="module")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    yield from _serve(start_gcs, tmp_path_factory.mktemp("gcs"))


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    yield from _serve(start_azurite, tmp_path_factory.mktemp("azurite"))


@dataclass
class Emulated:
    """A store as the tests use it: the user's environment that leads skyc to its
    emulator, the URL a task names, and the emulator's own API."""

    name: str
    env: dict[str, str]
    url: Callable[[str, str], str]            # (bucket, path) -> a task's source URL
    make: Callable[[str], None]               # a new bucket
    put: Callable[[str, str, bytes], None]    # (bucket, object, bytes)
    get: Callable[[str, str], bytes | None]   # an object's bytes, None when missing


def _gcs(server: GcsEmulator) -> Emulated:
    return Emulated("gcs", {"STORAGE_EMULATOR_HOST": server.url},
                    lambda b, p: f"gs://{b}/{p}" if p else f"gs://{b}",
                    server.create_bucket, server.put, server.get)


def _azure(server: Azurite) -> Emulated:
    return Emulated("azure", {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string},
                    server.url, server.create_container, server.put, server.get)


@pytest.fixture(params=["gcs", "azure"])
def store(request: pytest.FixtureRequest) -> Emulated:
    if request.param == "gcs":
        return _gcs(request.getfixturevalue("gcs_server"))
    return _azure(request.getfixturevalue("azurite"))


@pytest.fixture
def bucket(store: Emulated) -> str:
    name = f"skyc-{uuid.uuid4().hex[:12]}"
    store.make(name)
    store.put(name, "data/hello.txt", b"hello from the bucket\n")
    store.put(name, "single.txt", b"a single object\n")
    return name


@pytest.fixture
def cluster(local_cluster: ClusterInfo, tmp_path: Path) -> Iterator[ClusterInfo]:
    """Two local nodes; at teardown their mounts are released."""
    with mounts_released(local_cluster, tmp_path) as info:
        yield info


def task_uses(tmp_path: Path, mounts: dict[str, Any]) -> list[BucketUse]:
    """The bucket uses of a task with these file_mounts, as skyc reads its YAML."""
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump({"run": "true", "file_mounts": mounts}))
    return bucket_uses(load_tasks(path).tasks[0], None, s3_configured=False)


def node_settings(uses: list[BucketUse], env: dict[str, str], tmp_path: Path
                  ) -> dict[str, str]:
    """What the nodes are given for ``uses`` from a user whose environment is ``env``
    (and whose home holds no credentials)."""
    home = tmp_path / "user-home"
    home.mkdir(exist_ok=True)
    return rclone_env(uses, SkycConfig(), env=env, home=home)


def job(uses: list[BucketUse], settings: dict[str, str], **fields: Any) -> JobSpec:
    return JobSpec(buckets=Buckets(uses, settings).mounts(),
                   bucket_env={k: SecretStr(v) for k, v in settings.items()}, **fields)


def node_home(cluster: ClusterInfo, rank: int) -> Path:
    return Path(cluster.nodes[rank].node_dir or "")


def sas_signature(settings: dict[str, str]) -> str:
    """The signature of the SAS URL among ``settings``."""
    url = next(v for k, v in settings.items() if k.endswith("_SAS_URL"))
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["sig"][0]


@needs_fuse
def test_a_job_reads_a_mounted_and_a_copied_bucket(
        cluster: ClusterInfo, store: Emulated, bucket: str, skyc_home: Path,
        tmp_path: Path) -> None:
    uses = task_uses(tmp_path, {
        "~/mnt": {"source": store.url(bucket, "data"), "mode": "MOUNT"},
        "~/copied": store.url(bucket, "data"),
        "~/one.txt": store.url(bucket, "single.txt")})
    assert [u.mode for u in uses] == ["COPY", "MOUNT", "COPY"]
    settings = node_settings(uses, store.env, tmp_path)
    spec = job(uses, settings,
               setup="test -f ~/copied/hello.txt && test -f ~/mnt/hello.txt",
               run="cat ~/mnt/hello.txt ~/copied/hello.txt ~/one.txt; "
                   "echo written by $SKYC_NODE_RANK > ~/mnt/out-$SKYC_NODE_RANK.txt")
    lines: list[tuple[str, str]] = []
    result = run_job(cluster, spec, on_line=lambda label, line: lines.append((label, line)))
    assert result.status == "SUCCEEDED", lines
    for label in ("(head, rank=0)", "(worker1, rank=1, ip=127.0.0.1)"):
        said = [line for lab, line in lines if lab == label]
        assert said == ["hello from the bucket", "hello from the bucket",
                        "a single object"], lines
    for rank in (0, 1):  # written through the mount: in the bucket once the job is done
        assert store.get(bucket, f"data/out-{rank}.txt") == f"written by {rank}\n".encode()
        assert (node_home(cluster, rank) / "one.txt").read_text() == "a single object\n"
    if store.name == "azure":  # the nodes get a SAS, never the key, and keep it off disk
        assert not any(AZURITE_KEY in v for v in settings.values())
        signature = sas_signature(settings).encode()
        for root in (skyc_home, node_home(cluster, 0), node_home(cluster, 1)):
            assert files_holding(root, signature) == []


@needs_fuse
def test_cached_writes_are_in_the_bucket_when_the_job_ends(
        cluster: ClusterInfo, store: Emulated, bucket: str, tmp_path: Path) -> None:
    uses = task_uses(tmp_path, {
        "~/ckpt": {"source": store.url(bucket, "ckpt"), "mode": "MOUNT_CACHED"}})
    spec = job(uses, node_settings(uses, store.env, tmp_path), run=CHECKPOINT)
    lines: list[tuple[str, str]] = []
    result = run_job(cluster, spec, on_line=lambda label, line: lines.append((label, line)))
    assert result.status == "SUCCEEDED", lines
    for rank in (0, 1):  # written back 1 s after being closed: waited for by the run
        data = store.get(bucket, f"ckpt/step-{rank}.zip")
        assert data is not None, f"ckpt/step-{rank}.zip is not in {bucket}"
        assert zipfile.ZipFile(io.BytesIO(data)).read("w") == b"x" * 300000


@needs_rclone
def test_the_source_check_names_a_bucket_that_does_not_exist(
        store: Emulated, bucket: str, tmp_path: Path) -> None:
    missing = f"skyc-missing-{uuid.uuid4().hex[:8]}"
    uses = task_uses(tmp_path, {"/data": store.url(missing, "x"),
                                "/here": store.url(bucket, "data")})
    settings = node_settings(uses, store.env, tmp_path)
    there = next(u for u in uses if u.target == "/here")
    check_source(there, settings)  # the bucket that is there passes
    gone = next(u for u in uses if u.target == "/data")
    with pytest.raises(StorageError) as err:
        check_source(gone, settings)
    assert str(err.value) == (f"file_mounts./data.source: {store.url(missing, 'x')} does "
                              "not exist")


@needs_rclone
def test_an_azure_key_that_is_not_the_accounts_is_refused(
        azurite: Azurite, tmp_path: Path) -> None:
    container = f"skyc-{uuid.uuid4().hex[:12]}"
    azurite.create_container(container)
    wrong = "A" * 86 + "=="
    other = Azurite(azurite.endpoint, key=wrong)
    uses = task_uses(tmp_path, {"/data": azurite.url(container)})
    settings = node_settings(uses, {"AZURE_STORAGE_CONNECTION_STRING":
                                    other.connection_string}, tmp_path)
    with pytest.raises(StorageError) as err:
        check_source(uses[0], settings)
    message = str(err.value)
    assert message.startswith(f"file_mounts./data.source: {azurite.url(container)} is not "
                              "readable with your credentials"), message
    assert wrong not in message and sas_signature(settings) not in message


def test_gcs_settings_point_at_the_emulator_without_credentials(tmp_path: Path) -> None:
    uses = task_uses(tmp_path, {"/data": "gs://some-bucket/x"})
    plain = node_settings(uses, {}, tmp_path)
    assert plain["RCLONE_CONFIG_SKYCGCS_ENV_AUTH"] == "true"
    assert "RCLONE_CONFIG_SKYCGCS_ENDPOINT" not in plain
    for host in ("127.0.0.1:9023", "http://127.0.0.1:9023/"):
        for cloud in (None, "gcp"):  # on GCP too: an emulator is not the nodes' own store
            home = tmp_path / "user-home"
            settings = rclone_env(uses, SkycConfig(), env={"STORAGE_EMULATOR_HOST": host},
                                  home=home, cloud=cloud)
            assert settings == {
                "RCLONE_CONFIG_SKYCGCS_ANONYMOUS": "true",
                "RCLONE_CONFIG_SKYCGCS_BUCKET_POLICY_ONLY": "true",
                "RCLONE_CONFIG_SKYCGCS_ENDPOINT": "http://127.0.0.1:9023/storage/v1/",
                "RCLONE_CONFIG_SKYCGCS_TYPE": "google cloud storage"}
    key = tmp_path / "sa.json"
    key.write_text('{"type": "service_account"}')
    with_key = node_settings(uses, {"STORAGE_EMULATOR_HOST": "127.0.0.1:9023",
                                    "GOOGLE_APPLICATION_CREDENTIALS": str(key)}, tmp_path)
    assert with_key["RCLONE_CONFIG_SKYCGCS_SERVICE_ACCOUNT_CREDENTIALS"] == key.read_text()
    assert "RCLONE_CONFIG_SKYCGCS_ANONYMOUS" not in with_key


def test_azure_settings_follow_the_connection_string_of_the_account(tmp_path: Path) -> None:
    key = "a2V5LW9mLXRoZS1hY2NvdW50"
    uses = task_uses(tmp_path, {"/data": "https://devstoreaccount1.blob.core.windows.net/cont1"})
    prefix = f"RCLONE_CONFIG_{uses[0].remote.split(':')[0].upper()}_"
    string = ("DefaultEndpointsProtocol=http;AccountName={};AccountKey={};"
              "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;")
    # another account's: neither its key nor its endpoint is this account's
    other = node_settings(uses, {"AZURE_STORAGE_CONNECTION_STRING":
                                 string.format("otheraccount", key)}, tmp_path)
    assert other == {f"{prefix}ACCOUNT": "devstoreaccount1", f"{prefix}ENV_AUTH": "true",
                     f"{prefix}TYPE": "azureblob"}
    # AZURE_STORAGE_KEY with the account it is of (the Azure CLI's pair) comes first;
    # without its account it is not used (a key is only ever given to its own account)
    pair = {"AZURE_STORAGE_KEY": "c2Vjb25k", "AZURE_STORAGE_CONNECTION_STRING":
            string.format("otheraccount", key)}
    both = node_settings(uses, {**pair, "AZURE_STORAGE_ACCOUNT": "devstoreaccount1"},
                         tmp_path)
    assert both[f"{prefix}KEY"] == "c2Vjb25k"
    assert f"{prefix}KEY" not in node_settings(uses, pair, tmp_path)
    for cloud in (None, "azure"):  # on Azure too: an endpoint of its own is not its cloud's
        settings = rclone_env(uses, SkycConfig(), env={
            "AZURE_STORAGE_CONNECTION_STRING": string.format("devstoreaccount1", key)},
            home=tmp_path / "user-home", cloud=cloud)
        assert sorted(settings) == [f"{prefix}SAS_URL", f"{prefix}TYPE"]
        url = urllib.parse.urlsplit(settings[f"{prefix}SAS_URL"])
        assert url._replace(query="").geturl() == "http://127.0.0.1:10000/devstoreaccount1"
        query = urllib.parse.parse_qs(url.query)
        assert (query["ss"], query["srt"], query["sp"]) == (["b"], ["sco"], ["rwdlac"])
        assert key not in settings[f"{prefix}SAS_URL"]
    with pytest.raises(StorageError, match="key of Azure storage account devstoreaccount1 "
                       "is not base64"):
        node_settings(uses, {"AZURE_STORAGE_CONNECTION_STRING":
                             string.format("devstoreaccount1", "not base64!")}, tmp_path)


def test_the_node_agent_keeps_a_sas_signature_out_of_its_messages() -> None:
    sig = "s4N1196ItZMZmfFmWG1dxspJfC2Y7g5+e+YQVPBwN6I="
    query = urllib.parse.urlencode({"sv": "2021-08-06", "se": "2027-01-01T00:00:00Z",
                                    "sig": sig})
    rc = Rclone("head", {"RCLONE_CONFIG_X_SAS_URL": f"http://127.0.0.1:1/acct?{query}"})
    # as rclone 1.60 writes a request it could not send: the URL with the container's
    # path, its own parameters, and the signature percent-encoded
    said = ('Head "http://127.0.0.1:1/acct/c1/x?se=2027-01-01T00%3A00%3A00Z&sig='
            + urllib.parse.quote(sig, safe="") + '&sv=2021-08-06&timeout=31536001": '
            f"dial tcp 127.0.0.1:1: connect: connection refused (signed {sig})")
    scrubbed = rc.scrub(said)
    assert sig not in scrubbed and urllib.parse.quote(sig, safe="") not in scrubbed
    assert "&sig=***&sv=2021-08-06" in scrubbed and scrubbed.endswith("(signed ***)")
