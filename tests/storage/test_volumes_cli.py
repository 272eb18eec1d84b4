"""`skyc volumes` as a user runs it (real subprocesses). No Kubernetes API server can
run here and no Pulumi CLI can be installed: a created volume's stack is applied
through the Pulumi Automation API against the recording stand-in CLI
(tests/support/pulumi_standin.py), and its claim is validated against the API's own
schemas (kubernetes-validate)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.compiler.kubernetes.volumes import volume_stack
from skyc.task.volume_file import VolumeFile

REPO = Path(__file__).resolve().parents[2]
VOLUME = """\
name: team-cache
type: k8s-pvc
infra: k8s/gke-ml
size: 10Gi
labels: {team: ml}
config: {access_mode: ReadWriteMany, storage_class_name: fs-sc, namespace: ml}
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "STANDIN_LOG": str(tmp_path / "standin.log"), "COLUMNS": "200",
           "NO_COLOR": "1"}
    if (tmp_path / "standin").exists():
        env["SKYC_PULUMI_ROOT"] = str(tmp_path / "standin")
    return subprocess.run([sys.executable, "-m", "skyc", *args], cwd=tmp_path, env=env,
                          text=True, capture_output=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def _commands(tmp_path: Path) -> list[str]:
    """The stand-in CLI's commands, in order (their first word)."""
    lines = (tmp_path / "standin.log").read_text().splitlines()
    return [next(a for a in json.loads(line)["argv"] if a != "--non-interactive")
            for line in lines if '"argv"' in line]


@pytest.mark.parametrize(("text", "message"), [
    ("name: v1\ntype: runpod-network-volume\ninfra: runpod\nsize: 10Gi\n",
     "skyc makes Kubernetes volumes only"),
    ("name: v1\ninfra: aws\nsize: 10Gi\n", "a volume lives in a Kubernetes cluster"),
    ("name: v1\ninfra: k8s/ctx\n", "a new volume needs a size"),
    ("name: Bad_Name\ninfra: k8s/ctx\nsize: 1Gi\n", "name"),
])
def test_a_volume_file_that_cannot_be_used_is_refused(tmp_path: Path, text: str,
                                                      message: str) -> None:
    (tmp_path / "v.yaml").write_text(text)
    done = _run(tmp_path, "volumes", "apply", "v.yaml", "--yes")
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_an_existing_claim_is_recorded_listed_and_forgotten(tmp_path: Path) -> None:
    (tmp_path / "v.yaml").write_text("name: shared-data\ninfra: k8s/onprem\n"
                                     "use_existing: true\n")
    done = _run(tmp_path, "volumes", "apply", "v.yaml", "--yes")
    assert done.returncode == 0, done.stderr
    listed = _run(tmp_path, "volumes", "ls").stdout
    assert "shared-data" in listed and "k8s-pvc://onprem/default/shared-data" in listed
    assert "no buckets" in _run(tmp_path, "storage", "ls").stdout  # volumes are not buckets
    refused = _run(tmp_path, "storage", "delete", "shared-data", "--yes")
    assert refused.returncode == 1 and "is a volume, not a bucket" in refused.stderr
    assert _run(tmp_path, "volumes", "delete", "shared-data", "--yes").returncode == 0
    assert "no volumes" in _run(tmp_path, "volumes", "ls").stdout
    assert not (tmp_path / "standin.log").exists()  # nothing was applied for it


def test_a_created_volume_is_a_stack_applied_and_destroyed(tmp_path: Path) -> None:
    pytest.importorskip("pulumi_kubernetes", reason="the Pulumi SDKs are not installed")
    from tests.support.pulumi_standin import install

    install(tmp_path / "standin")
    (tmp_path / "v.yaml").write_text(VOLUME)
    done = _run(tmp_path, "volumes", "apply", "v.yaml", "--yes")
    assert done.returncode == 0, done.stderr
    assert "up" in _commands(tmp_path)
    assert (tmp_path / "home" / "volumes" / "team-cache" / "__main__.py").exists()
    assert "team-cache" in _run(tmp_path, "volumes", "ls").stdout
    assert _run(tmp_path, "volumes", "delete", "team-cache", "--yes").returncode == 0
    assert "destroy" in _commands(tmp_path)
    assert not (tmp_path / "home" / "volumes" / "team-cache").exists()


@pytest.mark.parametrize("version", ["1.27.0", "1.30.0"])
def test_the_claim_validates_against_the_kubernetes_api(version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    import yaml

    volume = VolumeFile.model_validate(yaml.safe_load(VOLUME))
    stack = volume_stack(volume, "gke-ml", "ml", {"skyc-owner": "alice"})
    [claim] = stack.resources
    manifest = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim.properties}
    kubernetes_validate.validate(manifest, version, strict=True)
    assert manifest["spec"] == {"accessModes": ["ReadWriteMany"],
                                "resources": {"requests": {"storage": "10Gi"}},
                                "storageClassName": "fs-sc"}
    assert manifest["metadata"]["labels"] == {"skyc-owner": "alice", "team": "ml"}
