"""A team's state needs the stacks of cloud and Kubernetes clusters in a remote backend:
with a PostgreSQL state, a local backend is refused naming the setting that fixes it;
machines skyc is given (local, ssh) and a sqlite state need none."""

from __future__ import annotations

import pytest

from skyc.apply.shared_backend import backend_problem, check_shared_backend
from skyc.errors import ConfigError
from skyc.settings.config import SkycConfig

URL = "postgresql://skyc:hunter2@db.example.com:5432/skyc"


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_STATE_URL", URL)


def _config(**values: object) -> SkycConfig:
    return SkycConfig.model_validate(values)


@pytest.mark.usefixtures("shared")
def test_a_shared_state_refuses_a_local_backend_naming_the_fix() -> None:
    problem = backend_problem("aws", "terraform", SkycConfig())
    assert problem is not None and "terraform's local backend" in problem
    assert "db.example.com" in problem and "hunter2" not in problem
    with pytest.raises(ConfigError) as refused:
        check_shared_backend("gcp", "terraform", _config(backend={"local": {"path": "x"}}))
    assert "backend:" in (refused.value.hint or "")
    with pytest.raises(ConfigError) as refused:
        check_shared_backend("kubernetes", "pulumi", _config(
            pulumi={"backend_url": "file:///home/me/pulumi"}))
    assert "pulumi.backend_url" in (refused.value.hint or "")
    assert "Pulumi's file backend" in str(refused.value)
    assert "default local backend" in (backend_problem("azure", "pulumi", SkycConfig()) or "")


@pytest.mark.usefixtures("shared")
def test_a_remote_backend_or_a_given_machine_needs_nothing() -> None:
    s3 = _config(backend={"s3": {"bucket": "team-state", "key": "skyc",
                                 "region": "us-east-1"}})
    assert backend_problem("aws", "terraform", s3) is None
    assert backend_problem("gcp", "pulumi", _config(
        pulumi={"backend_url": "s3://team-state/skyc"})) is None
    assert backend_problem("local", "terraform", SkycConfig()) is None
    assert backend_problem("ssh", "terraform", SkycConfig()) is None


def test_a_state_of_ones_own_needs_no_remote_backend(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: object) -> None:
    monkeypatch.delenv("SKYC_STATE_URL", raising=False)
    monkeypatch.setenv("SKYC_HOME", str(tmp_path))
    assert backend_problem("aws", "terraform", SkycConfig()) is None


def test_the_ci_example_is_a_team_config_that_needs_no_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    import yaml

    from skyc.settings.config import load_config

    example = Path(__file__).resolve().parents[2] / "examples" / "ci"
    config = load_config(example / "skyc-config.yaml")
    assert config.state is not None and config.state.startswith("postgresql://")
    monkeypatch.setenv("SKYC_STATE_URL", config.state)
    for cloud, engine in (("aws", "terraform"), ("gcp", "terraform"),
                          ("kubernetes", "pulumi"), ("azure", "pulumi")):
        assert backend_problem(cloud, engine, config) is None, cloud
    workflow = yaml.safe_load((example / "skyc-plan.yml").read_text())
    for job in workflow["jobs"].values():
        steps = job["steps"]
        assert any('cp skyc-config.yaml "$SKYC_HOME/config.yaml"' in s.get("run", "")
                   for s in steps)
        assert any("PGPASSWORD" in (s.get("env") or {}) for s in steps)
