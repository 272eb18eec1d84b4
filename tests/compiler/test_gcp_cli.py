"""GCP through the CLI, as real subprocesses: ``skyc check`` says which credentials and
project it found (or why not, labelled plan only), ``skyc compile`` writes a Pulumi
program for a GCP placement, and ``--engine terraform`` is refused naming pulumi."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFRESH = "1//0gSECRETREFRESHTOKEN"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQkeymaterial\n-----END PRIVATE KEY-----\n"


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def skyc(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG", "CLOUDSDK_",
                                "GCLOUD_"))}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
               COLUMNS="200", **extra)
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def _gcp_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gcp "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")),
               len(lines))
    return lines[start:end]


def _adc(home: Path, data: dict[str, str]) -> None:
    path = home / ".config" / "gcloud" / "application_default_credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_check_without_credentials_is_plan_only_and_says_what_to_do(home: Path) -> None:
    r = skyc(home, "check")
    assert r.returncode == 0, r.stderr
    head, *details = _gcp_lines(r.stdout)
    assert "disabled" in head and "plan only" in head and "--infra gcp" in head
    assert "application_default_credentials.json is missing" in details[0]
    assert "gcloud auth application-default login" in details[1]


def test_check_names_the_login_and_the_project(home: Path, tmp_path: Path) -> None:
    _adc(home, {"type": "authorized_user", "refresh_token": REFRESH, "client_secret": "x"})
    head, *details = _gcp_lines(skyc(home, "check").stdout)
    assert "disabled" in head and "plan only" in head            # a login, but no project
    assert "but no project" in details[0] and "gcp: {project: <id>}" in details[1]
    (home / ".skyc").mkdir()
    (home / ".skyc" / "config.yaml").write_text("gcp:\n  project: my-project-1\n")
    r = skyc(home, "check")
    head, *details = _gcp_lines(r.stdout)
    assert "enabled" in head and not details
    assert "project my-project-1 from gcp.project in the config" in head
    assert "authorized_user" in head
    key = tmp_path / "sa.json"
    key.write_text(json.dumps({"type": "service_account", "project_id": "key-project-1",
                               "private_key": KEY, "client_email": "sa@x.iam"}))
    (home / ".skyc" / "config.yaml").unlink()
    r = skyc(home, "check", GOOGLE_APPLICATION_CREDENTIALS=str(key))
    head = _gcp_lines(r.stdout)[0]
    assert "GOOGLE_APPLICATION_CREDENTIALS" in head and "service_account" in head
    assert "project key-project-1 from the credentials file" in head
    for secret in (REFRESH, "MIIEvQkeymaterial", "PRIVATE KEY"):
        assert secret not in r.stdout + r.stderr


def test_compile_writes_a_pulumi_program_and_terraform_is_refused(home: Path,
                                                                  tmp_path: Path) -> None:
    task = tmp_path / "t4.yaml"
    task.write_text("resources:\n  accelerators: T4:1\n  infra: gcp\n  ports: 8080\n"
                    "run: nvidia-smi\n")
    out = tmp_path / "out"
    r = skyc(home, "compile", str(task), "-o", str(out))
    assert r.returncode == 0, r.stderr
    # The cluster's program, and its region's shared network's beside it.
    programs = {p.parent.name: p for p in out.glob("*/__main__.py")}
    [network] = [n for n in programs if n.startswith("network-gcp-")]
    assert "gcp.compute.Network(" in programs.pop(network).read_text()
    (program,) = programs.values()
    text = program.read_text()
    assert "gcp.compute.Network(" not in text and "vpc_id" in text
    assert "gcp.compute.Instance(" in text and 'machine_type="n1-highmem-4"' in text
    assert 'type="nvidia-tesla-t4"' in text and 'ports=["8080"]' in text
    assert not list(out.glob("*/main.tf.json"))
    r = skyc(home, "compile", str(task), "-o", str(tmp_path / "tf"), "--engine", "terraform")
    assert r.returncode == 1
    assert "engines for gcp: pulumi" in r.stderr and "--engine pulumi" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "tf").exists()
