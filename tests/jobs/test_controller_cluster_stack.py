"""The controller cluster on a cloud is a stack like any other, compiled offline from
``jobs.controller`` (no credentials, no engine run): every resource is tagged as the
jobs controller's, and the same config gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyc.apply.launch import LaunchOptions, make_plan
from skyc.compiler import build_stack
from skyc.errors import ConfigError
from skyc.jobs.controller_cluster import controller_cluster_name, controller_task
from skyc.settings.config import JobsControllerConfig, load_config
from skyc.stacks import emit


def _stack(tmp_path: Path, settings: JobsControllerConfig) -> str:
    task = controller_task(settings)
    placement = make_plan([task], LaunchOptions(), config=load_config()).tasks[0].placement
    candidate = task.candidates()[placement.candidate_index]
    name = controller_cluster_name()
    stack = build_stack(name, placement, candidate, config=load_config(),
                        workspace=tmp_path / name)
    return emit(stack, "terraform")["main.tf.json"]


def test_an_aws_controller_cluster_compiles_to_a_tagged_stack(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    settings = JobsControllerConfig(infra="aws/us-east-1", resources={"cpus": "4+"})
    text = _stack(tmp_path, settings)
    doc = json.loads(text)
    instances = doc["resource"]["aws_instance"]
    assert instances, doc["resource"].keys()
    for instance in instances.values():
        assert instance["tags"]["skyc-role"] == "jobs-controller"
        assert instance["tags"]["skyc-cluster"] == controller_cluster_name()
    assert _stack(tmp_path, settings) == text


def test_infra_inside_the_controller_resources_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    with pytest.raises(ConfigError, match=r"jobs\.controller\.resources\.infra"):
        controller_task(JobsControllerConfig(infra="local", resources={"infra": "aws"}))
