"""Buckets on a job's nodes: real rclone against a real moto S3 server, real FUSE mounts,
on local nodes (this machine, as root) and on sshd nodes (non-root users, through
sudo). Every test's mounts are released at its teardown, even when it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from skyc.errors import RuntimeAgentError, StorageError
from skyc.model.nodes import ClusterInfo
from skyc.runtime import agent
from skyc.runtime.control import FINAL_STATUSES, queue, stop_all_jobs
from skyc.runtime.run import run_job
from skyc.runtime.spec import BucketMount, JobSpec
from tests.support.moto_server import MotoServer, start_moto
from tests.support.sshd import SshdCluster, unmount_under
from tests.support.storage import FUSE_UNAVAILABLE, files_holding, mounts_released

SECRET = "skyc-test-secret-9b41d7c2e08f"  # moto takes any key: this one is looked for
CA_FILE = "/etc/ssl/certs/ca-certificates.crt"


needs_fuse = pytest.mark.skipif(FUSE_UNAVAILABLE is not None, reason=FUSE_UNAVAILABLE or "")


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    if FUSE_UNAVAILABLE:
        pytest.skip(FUSE_UNAVAILABLE)
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with start_moto(log, skyc_amis=False, front=False) as server:
        yield server


@pytest.fixture
def bucket(moto: MotoServer) -> str:
    name = f"skyc-{uuid.uuid4().hex[:12]}"
    s3 = moto.client("s3")
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="data/hello.txt", Body=b"hello from the bucket\n")
    s3.put_object(Bucket=name, Key="single.txt", Body=b"a single object\n")
    return name


def bucket_env(moto: MotoServer) -> dict[str, SecretStr]:
    values = {"TYPE": "s3", "PROVIDER": "Other", "ENDPOINT": moto.url,
              "ACCESS_KEY_ID": "testing", "SECRET_ACCESS_KEY": SECRET,
              "REGION": "us-east-1", "FORCE_PATH_STYLE": "true"}
    return {f"RCLONE_CONFIG_SKYCS3_{k}": SecretStr(v) for k, v in values.items()}


def mounted(path: Path | str) -> bool:
    points = [line.split(" ")[4] for line in
              Path("/proc/self/mountinfo").read_text().splitlines()]
    return str(path) in points


@pytest.fixture
def cluster(local_cluster: ClusterInfo, tmp_path: Path) -> Iterator[ClusterInfo]:
    """Two local nodes; at teardown their mounts are released."""
    with mounts_released(local_cluster, tmp_path) as info:
        yield info


def node_home(cluster: ClusterInfo, rank: int) -> Path:
    return Path(cluster.nodes[rank].node_dir or "")


def collect() -> tuple[list[tuple[str, str]], Any]:
    lines: list[tuple[str, str]] = []

    def on_line(label: str, line: str) -> None:
        lines.append((label, line))

    return lines, on_line


def records(home: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((home / ".skyc/mounts").glob("*.json"))]


@needs_fuse
def test_a_job_reads_a_mounted_and_a_copied_bucket(
        cluster: ClusterInfo, moto: MotoServer, bucket: str, skyc_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if Path(CA_FILE).is_file():  # rclone 1.60 does not start with it set: --ca-cert instead
        monkeypatch.setenv("AWS_CA_BUNDLE", CA_FILE)
    spec = JobSpec(
        setup="test -f ~/copied/hello.txt && test -f ~/mnt/hello.txt",  # there before setup
        run="cat ~/mnt/hello.txt ~/copied/hello.txt ~/one.txt; "
            "echo written by $SKYC_NODE_RANK > ~/mnt/out-$SKYC_NODE_RANK.txt",
        buckets=[BucketMount(target="~/mnt", remote=f"skycs3:{bucket}/data", mode="MOUNT"),
                 BucketMount(target="~/copied", remote=f"skycs3:{bucket}/data", mode="COPY"),
                 BucketMount(target="~/one.txt", remote=f"skycs3:{bucket}/single.txt",
                             mode="COPY")],
        bucket_env=bucket_env(moto))
    lines, on_line = collect()
    result = run_job(cluster, spec, on_line=on_line)
    assert result.status == "SUCCEEDED", lines
    for label in ("(head, rank=0)", "(worker1, rank=1, ip=127.0.0.1)"):
        said = [line for lab, line in lines if lab == label]
        assert said.count("hello from the bucket") == 2 and "a single object" in said, lines
    s3 = moto.client("s3")
    for rank in (0, 1):  # written through the mount: in the bucket once the job is done
        body = s3.get_object(Bucket=bucket, Key=f"data/out-{rank}.txt")["Body"].read()
        assert body == f"written by {rank}\n".encode()
        assert mounted(node_home(cluster, rank) / "mnt")
        assert (node_home(cluster, rank) / "one.txt").read_text() == "a single object\n"
    # the credentials are on no disk: not in skyc's files, not in the nodes' homes
    for root in (skyc_home, node_home(cluster, 0), node_home(cluster, 1)):
        assert files_holding(root, SECRET.encode()) == []
    record = records(node_home(cluster, 0))[0]
    assert oct(os.stat(node_home(cluster, 0) / f".skyc/mounts/{record['key']}.json").st_mode
               & 0o777) == "0o600"


@needs_fuse
def test_a_second_job_keeps_the_mount_and_stop_all_releases_it(
        cluster: ClusterInfo, moto: MotoServer, bucket: str) -> None:
    spec = JobSpec(run="cat ~/mnt/data/hello.txt", bucket_env=bucket_env(moto), buckets=[
        BucketMount(target="~/mnt", remote=f"skycs3:{bucket}", mode="MOUNT")])
    assert run_job(cluster, spec).status == "SUCCEEDED"
    first = records(node_home(cluster, 0))
    lines, on_line = collect()
    assert run_job(cluster, spec, on_line=on_line).status == "SUCCEEDED"
    assert records(node_home(cluster, 0)) == first  # the same rclone, not mounted again
    assert ("(head, rank=0)", "hello from the bucket") in lines
    points = [node_home(cluster, rank) / "mnt" for rank in (0, 1)]
    assert all(mounted(p) for p in points)
    # another path of the bucket at that target: mounted again in its place
    other = spec.model_copy(update={"run": "cat ~/mnt/hello.txt", "buckets": [BucketMount(
        target="~/mnt", remote=f"skycs3:{bucket}/data", mode="MOUNT")]})
    assert run_job(cluster, other).status == "SUCCEEDED"
    now = records(node_home(cluster, 0))
    assert len(now) == 1 and now[0]["remote"] == f"skycs3:{bucket}/data"
    assert now[0]["pid"] != first[0]["pid"] and all(mounted(p) for p in points)
    stop_all_jobs(cluster)
    assert not any(mounted(p) for p in points)
    assert records(node_home(cluster, 0)) == [] and records(node_home(cluster, 1)) == []
    for pid in (first[0]["pid"], now[0]["pid"]):  # their rclone ended (or is a zombie)
        cmdline = Path(f"/proc/{pid}/cmdline")
        assert not cmdline.exists() or b"rclone" not in cmdline.read_bytes()


CHECKPOINT = ("python3 -c \"import zipfile, os; z = zipfile.ZipFile(os.path.expanduser("
              "'~/ckpt/step-$SKYC_NODE_RANK.zip'), 'w'); z.writestr('w', 'x' * 300000); "
              "z.close()\"")


@needs_fuse
def test_cached_writes_are_in_the_bucket_when_the_job_ends(
        cluster: ClusterInfo, moto: MotoServer, bucket: str) -> None:
    s3 = moto.client("s3")
    spec = JobSpec(run=CHECKPOINT, bucket_env=bucket_env(moto), buckets=[
        BucketMount(target="~/ckpt", remote=f"skycs3:{bucket}/ckpt", mode="MOUNT_CACHED")])
    started = time.monotonic()
    result = run_job(cluster, spec)
    took = time.monotonic() - started
    assert result.status == "SUCCEEDED"
    for rank in (0, 1):  # written back 1 s after being closed: waited for by the run
        head = s3.head_object(Bucket=bucket, Key=f"ckpt/step-{rank}.zip")
        assert head["ContentLength"] > 300000
    assert took < 20
    # detached: the job reads as finished only once its writes are in the bucket
    spec = spec.model_copy(update={"run": CHECKPOINT.replace("step-", "detached-")})
    job = run_job(cluster, spec, detach=True)
    assert job.status == "RUNNING"
    deadline = time.monotonic() + 30
    status = "RUNNING"
    while time.monotonic() < deadline:
        status = next(j for j in queue(cluster) if j["job_id"] == job.job_id)["status"]
        if status in FINAL_STATUSES:
            break
        time.sleep(0.1)
    assert status == "SUCCEEDED"
    for rank in (0, 1):
        s3.head_object(Bucket=bucket, Key=f"ckpt/detached-{rank}.zip")


@needs_fuse
def test_a_missing_bucket_fails_before_setup(cluster: ClusterInfo, moto: MotoServer,
                                             bucket: str) -> None:
    spec = JobSpec(setup="touch ~/setup-ran", run="touch ~/run-ran", bucket_env=bucket_env(moto),
                   buckets=[BucketMount(target="~/data", remote="skycs3:no-such-bucket/x",
                                        mode="MOUNT")])
    with pytest.raises(StorageError) as err:
        run_job(cluster, spec)
    message = str(err.value)
    assert "~/data" in message and "skycs3:no-such-bucket/x" in message, message
    assert "does not exist" in message and SECRET not in message
    for rank in (0, 1):
        assert not (node_home(cluster, rank) / "setup-ran").exists()
        assert not mounted(node_home(cluster, rank) / "data")
    table = queue(cluster)
    assert table[-1]["status"] == "FAILED"
    unknown = spec.model_copy(update={"buckets": [BucketMount(
        target="~/data", remote=f"nosuchremote:{bucket}", mode="COPY")]})
    with pytest.raises(StorageError) as err:
        run_job(cluster, unknown)
    assert f"cannot copy nosuchremote:{bucket} to ~/data" in str(err.value)
    assert "didn't find section in config file" in str(err.value)


@needs_fuse
def test_a_mount_that_dies_fails_the_job_and_is_mounted_again(
        cluster: ClusterInfo, moto: MotoServer, bucket: str) -> None:
    kill_rclone = ("python3 -c \"import glob, json, os, signal; "
                   "p = glob.glob(os.path.expanduser('~/.skyc/mounts/*.json'))[0]; "
                   "os.kill(json.load(open(p))['pid'], signal.SIGKILL)\"; "
                   "sleep 0.2; ls ~/mnt || true")
    spec = JobSpec(run=kill_rclone, bucket_env=bucket_env(moto), buckets=[
        BucketMount(target="~/mnt", remote=f"skycs3:{bucket}/data", mode="MOUNT")])
    lines, on_line = collect()
    started = time.monotonic()
    result = run_job(cluster, spec, on_line=on_line)
    assert result.status == "FAILED" and time.monotonic() - started < 20
    said = [line for _, line in lines]
    assert any(line.startswith(f"skyc: the mount of skycs3:{bucket}/data at ~/mnt is gone")
               for line in said), said
    # a job that uses no bucket is not failed by it
    assert run_job(cluster, JobSpec(run="true")).status == "SUCCEEDED"
    # the next job that uses it replaces the dead mount
    again = spec.model_copy(update={"run": "cat ~/mnt/hello.txt"})
    lines, on_line = collect()
    assert run_job(cluster, again, on_line=on_line).status == "SUCCEEDED", lines
    assert ("(head, rank=0)", "hello from the bucket") in lines


def test_a_node_without_rclone_says_so(tmp_path: Path) -> None:
    """The agent alone, with a PATH where rclone is not: one line naming the node, the
    bucket and the target, and what to install."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    script = tmp_path / "agent_x.py"
    shutil.copyfile(agent.__file__, script)
    document = {"node": "head", "env": {"RCLONE_CONFIG_X_SECRET_ACCESS_KEY": SECRET},
                "mounts": [{"target": "~/data", "remote": "x:bkt", "mode": "MOUNT"}]}
    done = subprocess.run([sys.executable, "-I", "-S", str(script), "mounts", "apply"],
                          input=json.dumps(document).encode(), capture_output=True,
                          env={"HOME": str(tmp_path), "PATH": str(bin_dir)}, timeout=60,
                          check=False)
    assert done.returncode == 4, done
    assert done.stderr.decode() == ("cannot mount x:bkt at ~/data: rclone is not installed "
                                    "on node head; install rclone and fuse3\n")
    bad = subprocess.run([sys.executable, "-I", "-S", str(script), "mounts", "apply"],
                         input=b'{"env": {"LD_PRELOAD": "x"}}', capture_output=True,
                         env={"HOME": str(tmp_path), "PATH": str(bin_dir)}, timeout=60,
                         check=False)
    assert bad.returncode == 2 and b"not an rclone setting" in bad.stderr


@pytest.fixture
def ssh_cluster(sshd2: SshdCluster) -> Iterator[ClusterInfo]:
    with mounts_released(sshd2.cluster_info("sshm"), *(n.home for n in sshd2.nodes)) as info:
        yield info


@needs_fuse
@pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo is not installed (Debian "
                    "package sudo): ssh node users mount through it")
def test_ssh_nodes_mount_through_sudo(ssh_cluster: ClusterInfo, sshd2: SshdCluster,
                                      moto: MotoServer, bucket: str) -> None:
    spec = JobSpec(
        run="cat ~/mnt/hello.txt ~/copied/hello.txt; echo mine > ~/mnt/by-$USER.txt; "
            "stat -c %U ~/mnt/hello.txt",
        bucket_env=bucket_env(moto),
        buckets=[BucketMount(target="~/mnt", remote=f"skycs3:{bucket}/data", mode="MOUNT"),
                 BucketMount(target="~/copied", remote=f"skycs3:{bucket}/data", mode="COPY")])
    lines, on_line = collect()
    result = run_job(ssh_cluster, spec, on_line=on_line)
    assert result.status == "SUCCEEDED", lines
    s3 = moto.client("s3")
    for node in sshd2.nodes:
        said = [line for label, line in lines if label.startswith(
            "(head" if node.index == 0 else "(worker1")]
        assert said == ["hello from the bucket", "hello from the bucket", node.user], lines
        assert s3.get_object(Bucket=bucket, Key=f"data/by-{node.user}.txt")["Body"].read() \
            == b"mine\n"
        assert mounted(node.home / "mnt")
        assert files_holding(node.home, SECRET.encode()) == []
    stop_all_jobs(ssh_cluster)
    assert not any(mounted(node.home / "mnt") for node in sshd2.nodes)


@needs_fuse
@pytest.mark.skipif(shutil.which("sudo") is None or not Path("/srv").is_dir(),
                    reason="needs sudo (Debian package sudo) and /srv")
def test_ssh_targets_outside_home_are_made_with_sudo(
        ssh_cluster: ClusterInfo, sshd2: SshdCluster, moto: MotoServer, bucket: str) -> None:
    top = Path(f"/srv/skyc-test-{uuid.uuid4().hex[:8]}")
    spec = JobSpec(
        num_nodes=1, run=f"cat {top}/m/hello.txt {top}/c/hello.txt; touch {top}/c/mine",
        bucket_env=bucket_env(moto),
        buckets=[BucketMount(target=f"{top}/m", remote=f"skycs3:{bucket}/data", mode="MOUNT"),
                 BucketMount(target=f"{top}/c", remote=f"skycs3:{bucket}/data", mode="COPY")])
    try:
        lines, on_line = collect()
        assert run_job(ssh_cluster, spec, on_line=on_line).status == "SUCCEEDED", lines
        assert [line for _, line in lines] == ["hello from the bucket"] * 2
        assert (top / "c").stat().st_uid == sshd2.nodes[0].uid
        assert mounted(top / "m")
        stop_all_jobs(ssh_cluster)
        assert not mounted(top / "m")
    finally:
        unmount_under(top)
        shutil.rmtree(top, ignore_errors=True)


@needs_fuse
def test_a_user_without_sudo_is_told_what_mounting_needs(
        ssh_cluster: ClusterInfo, sshd2: SshdCluster, moto: MotoServer, bucket: str) -> None:
    node = sshd2.nodes[0]
    Path(f"/etc/sudoers.d/skyc-test-{node.user}").unlink(missing_ok=True)
    spec = JobSpec(num_nodes=1, run="true", bucket_env=bucket_env(moto), buckets=[
        BucketMount(target="~/mnt", remote=f"skycs3:{bucket}", mode="MOUNT")])
    with pytest.raises(RuntimeAgentError) as err:
        run_job(ssh_cluster, spec)
    assert str(err.value) == (
        f"node head: cannot mount skycs3:{bucket} at ~/mnt: mounting (/dev/fuse is not "
        f"open to this user) needs root or passwordless sudo on node head, and user "
        f"{node.user} has neither")
