"""Bad input is refused before anything is created, naming the file, the field and
what to do: through ``prepare`` (the checks of ``serve up``) and, for the commands'
own errors, through real ``python -m skyc serve`` processes (exit codes, no
traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyc.errors import ConfigError, TaskSpecError, UnsupportedFeature
from skyc.serve import prepare
from tests.e2e.conftest import Skyc
from tests.serve.conftest import service_yaml


def _prepare(tmp_path: Path, text: str, name: str | None = None) -> object:
    path = tmp_path / "svc.yaml"
    path.write_text(text)
    return prepare(path, name, {})


@pytest.mark.parametrize(("service", "field", "words"), [
    ("  readiness_probe: health\n", "service.readiness_probe", "must start with '/'"),
    ("  readiness_probe:\n    path: v1/models\n", "service.readiness_probe.path",
     "must start with '/'"),
    ("  readiness_probe:\n    path: /\n    post_data: '{not json'\n",
     "service.readiness_probe.post_data", "must be JSON"),
    ("  load_balancing_policy: fastest\n", "service.load_balancing_policy",
     "expected one of least_load, round_robin"),
    ("  replica_policy:\n    min_replicas: 1\n    target_qps_per_replica: 2\n",
     "service.replica_policy.target_qps_per_replica", "set max_replicas"),
])
def test_a_bad_service_field_is_named(tmp_path: Path, service: str, field: str,
                                      words: str) -> None:
    with pytest.raises(TaskSpecError) as caught:
        _prepare(tmp_path, service_yaml(service))
    assert f"svc.yaml: {field}: " in caught.value.message and words in caught.value.message


def test_the_section_validator_still_refuses_min_above_max(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError) as caught:
        _prepare(tmp_path, service_yaml(
            "  replica_policy:\n    min_replicas: 3\n    max_replicas: 2\n"))
    assert "max_replicas (2) must be at least min_replicas (3)" in caught.value.message


@pytest.mark.parametrize(("service", "words"), [
    ("  replica_policy:\n    min_replicas: 1\n    base_ondemand_fallback_replicas: 1\n",
     "base_ondemand_fallback_replicas"),
    ("  replica_policy:\n    min_replicas: 1\n    max_replicas: 2\n"
     "    target_qps_per_replica:\n      A100: 2\n", "by accelerator"),
])
def test_what_this_version_cannot_do_is_refused(tmp_path: Path, service: str,
                                                words: str) -> None:
    with pytest.raises(UnsupportedFeature) as caught:
        _prepare(tmp_path, service_yaml(service))
    assert words in caught.value.message and "not supported" in caught.value.message


def test_defaults_are_skypilots(tmp_path: Path) -> None:
    prepared = _prepare(tmp_path, service_yaml("  replicas: 2\n"))
    config = prepared.config  # type: ignore[attr-defined]
    assert config.readiness.path == "/" and config.readiness.initial_delay_s == 1200
    assert config.readiness.timeout_s == 15 and config.policy == "least_load"
    assert (config.scaling.min_replicas, config.scaling.max_replicas) == (2, 2)


def test_non_local_infra_and_a_bad_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeature) as caught:
        _prepare(tmp_path, service_yaml("  replicas: 1\n", infra="aws"))
    assert "services run on local in this version" in caught.value.message
    assert "aws" in caught.value.message and "SKYC_SERVE_PORT" in (caught.value.hint or "")
    with pytest.raises(ConfigError, match="invalid service name"):
        _prepare(tmp_path, service_yaml("  replicas: 1\n"), name="Bad_Name")


def _refused(runner: Skyc, *args: str) -> str:
    result = runner(*args)
    assert result.returncode != 0, str(result)
    assert "Traceback" not in result.output, str(result)
    return result.stderr


def test_the_commands_refuse_clearly(runner: Skyc) -> None:
    runner.write("plain.yaml", "resources:\n  infra: local\nrun: echo hi\n")
    runner.write("aws.yaml", service_yaml("  replicas: 1\n", infra="aws"))
    err = _refused(runner, "serve", "up", "plain.yaml", "-y")
    assert "plain.yaml: service: the task has no service section" in err
    err = _refused(runner, "serve", "up", "aws.yaml", "-y")
    assert "services run on local in this version" in err
    err = _refused(runner, "serve", "status", "nosuch")
    assert "no service named 'nosuch'" in err
    err = _refused(runner, "serve", "down", "nosuch", "-y")
    assert "no service named 'nosuch'" in err
    err = _refused(runner, "serve", "logs", "nosuch", "--controller")
    assert "no service named 'nosuch'" in err
    err = _refused(runner, "serve", "logs", "nosuch")
    assert "give one of REPLICA_ID, --controller and --load-balancer" in err
    assert not (runner.home / "serve" / "web").exists()
    assert runner.clusters() == []

