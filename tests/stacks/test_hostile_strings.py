"""Strings a user controls never become Terraform expressions.

Terraform's JSON syntax reads every string of an expression as a template, object keys
included, so ``${...}`` and ``%{...}`` in a label key or value would be evaluated
(``file()`` reads any file the runner can read, such as ``/proc/self/environ``). Each
hostile string is either refused, naming its field, or arrives literally: checked with
the real terraform binary (``plan`` and ``show -json``) on local stacks, on an AWS
stack against moto, and with the real Pulumi SDKs under Pulumi's mock runtime (no
Pulumi CLI can be installed here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skyc.errors import ConfigError, TaskSpecError
from skyc.task import load_tasks
from tests.support.moto_server import CREDENTIALS, MotoServer, moto_server
from tests.support.terraform import (
    TERRAFORM_ENV,
    requires_aws_provider,
    requires_terraform,
    skyc_home,
)

__all__ = ["moto_server", "skyc_home"]

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "skyc-sentinel-6f1d"
# What each template would evaluate to: none of these may appear anywhere.
EVALUATED = ("ZQK", "ZQV", "zqdir", SENTINEL)


def _payloads(secret: Path) -> list[str]:
    return [
        '${upper("zqk")}',
        '${upper("zqv")}',
        "%{ if true }zq%{ endif }dir",
        f'${{tonumber(file("{secret}"))}}',
        f'$${{file("{secret}")}}',  # already escaped once: must stay as written
        'quote " back \\ slash',
        "new\nline",
    ]


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(SENTINEL)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "home"
    monkeypatch.setenv("SKYC_HOME", str(path))
    yield path


def _skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **TERRAFORM_ENV, "SKYC_HOME": str(home), "PYTHONPATH": str(ROOT),
           "SKYC_TEST_SECRET": SENTINEL}
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _task(tmp_path: Path, labels: dict[str, str], infra: str = "local") -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump({"name": "hostile", "run": "echo hi",
                                    "resources": {"infra": infra, "labels": labels}}))
    return path


def _hostile_labels(secret: Path) -> dict[str, str]:
    payloads = _payloads(secret)
    labels = {p: f"value-{i}" for i, p in enumerate(payloads)}
    labels.update({f"key-{i}": p for i, p in enumerate(payloads)})
    return labels


def _terraform_plan_json(stack_dir: Path) -> dict[str, Any]:
    env = {**os.environ, **TERRAFORM_ENV}
    for argv in (["terraform", "init", "-input=false", "-no-color"],
                 ["terraform", "plan", "-input=false", "-no-color", "-out=plan.bin"]):
        proc = subprocess.run(argv, cwd=stack_dir, capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for word in EVALUATED:
            assert word not in proc.stdout + proc.stderr
    show = subprocess.run(["terraform", "show", "-json", "plan.bin"], cwd=stack_dir,
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    doc: dict[str, Any] = json.loads(show.stdout)
    return doc


def _planned_inputs(plan: dict[str, Any]) -> list[dict[str, Any]]:
    resources = plan["planned_values"]["root_module"]["resources"]
    return [r["values"]["input"] for r in resources if r["type"] == "terraform_data"]


@requires_terraform
def test_label_keys_and_values_reach_a_local_stack_literally(
    tmp_path: Path, home: Path, secret: Path
) -> None:
    labels = _hostile_labels(secret)
    task = _task(tmp_path, labels)
    out = tmp_path / "out"
    proc = _skyc(home, "compile", str(task), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    plan = _terraform_plan_json(out / "hostile")
    inputs = _planned_inputs(plan)
    assert inputs and all(i["labels"] == {**labels, "skyc-cluster": "hostile"} for i in inputs)
    assert SENTINEL not in json.dumps(plan)


@requires_terraform
@pytest.mark.parametrize("fmt", ["markdown", "json", "table"])
def test_plan_with_the_engine_diff_evaluates_nothing(
    tmp_path: Path, home: Path, secret: Path, fmt: str
) -> None:
    """The reported attack: a label key reading a file (the environment of the CI runner)
    into the plan's output, the PR comment, the saved plan or the state."""
    task = _task(tmp_path, {f'${{tonumber(file("{secret}"))}}': "x",
                            '${upper("zqk")}': "%{ if true }zq%{ endif }dir"})
    saved = tmp_path / "plan.skyc"
    proc = _skyc(home, "plan", str(task), "--format", fmt, "--out", str(saved))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for word in EVALUATED:
        assert word not in proc.stdout + proc.stderr
    assert SENTINEL.encode() not in saved.read_bytes()
    for path in home.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path


def test_label_keys_aws_does_not_take_are_refused_naming_the_label(
    tmp_path: Path, home: Path, secret: Path
) -> None:
    for key in ('${file("/proc/self/environ")}', "%{ if true }x%{ endif }", 'q"uote',
                "new\nline", "aws:owner", ""):
        task = _task(tmp_path, {key: "x"}, infra="aws/us-east-1")
        out = tmp_path / "out"
        proc = _skyc(home, "compile", str(task), "-o", str(out))
        assert proc.returncode != 0, key
        assert "labels." in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not list(out.rglob("main.tf.json"))
    task = _task(tmp_path, {"team": '${file("/etc/hostname")}'}, infra="aws/us-east-1")
    proc = _skyc(home, "compile", str(task), "-o", str(tmp_path / "out2"))
    assert proc.returncode != 0 and "labels.team" in proc.stderr, proc.stderr


def test_aws_tag_rules() -> None:
    from skyc.compiler.aws import tags

    tags.check({"team": "ml-infra", "cost center": "a.b:c/d=e+f@g", "ü": "ß"})
    for labels in ({"${x}": "v"}, {"k": "${x}"}, {"k" * 129: "v"}, {"k": "v" * 257},
                   {"AWS:x": "v"}, {f"k{i}": "v" for i in range(50)}):
        with pytest.raises(ConfigError):
            tags.check(labels)


# Every field of a task a user writes, with what a hostile string there must give:
# refused at validate naming the field, or kept exactly as written.
_FIELDS = {
    "name": lambda p: {"name": p, "run": "x"},
    "labels key": lambda p: {"resources": {"labels": {p: "v"}}, "run": "x"},
    "labels value": lambda p: {"resources": {"labels": {"k": p}}, "run": "x"},
    "envs name": lambda p: {"envs": {p: "v"}, "run": "x"},
    "envs value": lambda p: {"envs": {"K": p}, "run": "x"},
    "ports": lambda p: {"resources": {"ports": [p]}, "run": "x"},
    "image_id": lambda p: {"resources": {"image_id": p}, "run": "x"},
    "file_mounts target": lambda p: {"file_mounts": {p: "/tmp"}, "run": "x"},
    "workdir": lambda p: {"workdir": p, "run": "x"},
    "infra": lambda p: {"resources": {"infra": p}, "run": "x"},
}
_FIELD_PATH = {"name": "name", "labels key": "resources.labels",
               "labels value": "resources.labels", "envs name": "envs", "envs value": "envs",
               "ports": "resources.ports", "image_id": "resources.image_id",
               "file_mounts target": "file_mounts", "workdir": "workdir",
               "infra": "resources.infra"}


@pytest.mark.parametrize("field", sorted(_FIELDS))
def test_each_task_field_refuses_or_keeps_hostile_strings(
    field: str, tmp_path: Path, secret: Path
) -> None:
    for payload in _payloads(secret):
        path = tmp_path / "task.yaml"
        path.write_text(yaml.safe_dump(_FIELDS[field](payload)))
        try:
            loaded = load_tasks(path)
        except TaskSpecError as exc:
            assert _FIELD_PATH[field] in str(exc), (field, payload, str(exc))
            continue
        dumped = json.dumps([t.model_dump(mode="json") for t in loaded.tasks])
        assert json.dumps(payload)[1:-1] in dumped, (field, payload)


@pytest.mark.slow
def test_pulumi_programs_keep_hostile_strings_literal(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Azure takes keys with ``$`` and values with quotes and new lines as tags: the
    generated Python program passes them literally to the real SDK classes."""
    pytest.importorskip("pulumi_azure_native",
                        reason="the Pulumi SDKs (skyc[pulumi]) are not installed")
    from skyc.stacks.pulumi_preview import run_program

    labels = {'${upper("zqk")}': 'q"uote \\ back\nline', "k2": "%{ if true }x%{ endif }",
              "k3": '"); import os; os.system("touch PWNED"); ("'}
    task = _task(tmp_path, labels, infra="azure/eastus")
    out = tmp_path / "out"
    proc = _skyc(home, "compile", str(task), "-o", str(out), "--engine", "pulumi")
    assert proc.returncode == 0, proc.stderr
    program = (out / "hostile" / "__main__.py").read_text()
    monkeypatch.chdir(tmp_path)  # where an injected command would write PWNED
    recorded = run_program(program, stack="hostile", config={"ssh_public_key": "ssh-rsa AAAA"})
    tagged = [r.inputs["tags"] for r in recorded if "tags" in r.inputs]
    assert tagged and all(labels.items() <= t.items() for t in tagged)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow
@pytest.mark.aws
@requires_terraform
@requires_aws_provider
def test_an_aws_stack_keeps_strings_literal_even_past_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: Path, moto_server: MotoServer,
    skyc_home: Path,
) -> None:
    """Defence in depth: with AWS's tag rules switched off (as a bug there would), the
    emitter alone keeps hostile tag keys and values literal in terraform's plan against
    moto."""
    from skyc.apply.provision import plan_changes
    from skyc.compiler.aws import tags
    from skyc.model.plan import Placement
    from skyc.settings.config import SkycConfig
    from skyc.task.candidate import ResourceCandidate

    monkeypatch.setattr(tags, "check", lambda labels: None)
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    config = SkycConfig.model_validate({"aws": {"endpoint_url": moto_server.url}})
    labels = _hostile_labels(secret)
    placement = Placement(cloud="aws", region="us-east-1", zone="use1-az1",
                          instance_type="m6i.large", num_nodes=1, hourly_cost=0.1)
    candidate = ResourceCandidate(index=0, labels=labels)
    workspace = tmp_path / "ws"
    diff = plan_changes("hostile", placement, candidate, config=config, workspace=workspace)
    assert diff.plan_file
    show = subprocess.run(["terraform", "show", "-json", diff.plan_file], cwd=workspace,
                          capture_output=True, text=True, timeout=300, check=True,
                          env={**os.environ, **TERRAFORM_ENV})
    assert SENTINEL not in show.stdout
    resources = json.loads(show.stdout)["planned_values"]["root_module"]["resources"]
    tagged = [r["values"]["tags"] for r in resources if r["values"].get("tags")]
    assert tagged and all(labels.items() <= t.items() for t in tagged)
