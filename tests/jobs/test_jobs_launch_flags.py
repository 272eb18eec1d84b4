"""``skyc jobs launch`` takes what ``skyc launch`` takes: a command in quotes, --infra
and the resource overrides (--gpus, --cpus, ...). Real ``python -m skyc`` processes on
the ``local`` infra, and the task file the controller is handed, read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from skyc.cli.jobs_launch import handed_task, narrowed
from skyc.errors import ConfigError
from skyc.task import load_tasks
from tests.e2e.conftest import Skyc
from tests.jobs.conftest import (
    TERMINAL,
    jobs,  # noqa: F401 - the fixture these tests use
    queue,
    wait_for,
)

pytestmark = pytest.mark.timeout(180)
SECRET = "s3cr3t-jobs-flag-value"


def test_a_command_in_quotes_with_infra_runs_as_a_managed_job(jobs: Skyc) -> None:  # noqa: F811
    out = jobs.ok("jobs", "launch", "--infra", "local", "--cpus", "1+", "echo hi from $WHO",
                  "--env", "WHO=flags", "-y", "-d")
    job_id = int(out.stdout.strip())
    done = wait_for(jobs, job_id, lambda j: j["status"] in TERMINAL)
    assert done["status"] == "SUCCEEDED", done
    [listed] = queue(jobs)
    assert listed["id"] == job_id
    logs = jobs.ok("jobs", "logs", str(job_id))
    assert "hi from flags" in logs.stdout
    handed = Path(done["task_path"])
    assert handed.parent == jobs.home / "jobs" / "tasks"
    [task] = load_tasks(handed, env={"WHO": "x"}).tasks
    assert task.run == "echo hi from $WHO"
    [candidate] = task.candidates()
    assert candidate.infra.cloud == "local" and candidate.cpus is not None
    assert "flags" not in handed.read_text()  # --env values reach the controller apart


def test_gpus_and_a_bad_value_reach_the_tasks_resources(jobs: Skyc) -> None:  # noqa: F811
    task = jobs.write("train.yaml", "name: train\nrun: python train.py\n")
    bad = jobs("jobs", "launch", str(task), "--gpus", "A100:x", "-y", "-d")
    assert bad.returncode != 0 and "No such option" not in bad.output
    assert "accelerators" in bad.stderr and "Traceback" not in bad.output
    elsewhere = jobs("jobs", "launch", "--infra", "aws", "--gpus", "A100:1", "-y", "-d",
                     jobs.write("gcp.yaml", "resources:\n  infra: gcp\nrun: x\n").name)
    assert elsewhere.returncode == 1
    assert "--infra aws: task" in elsewhere.stderr and "runs on gcp" in elsewhere.stderr
    assert not (jobs.home / "state.db").exists() or queue(jobs) == []


def test_overrides_are_written_into_the_task_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plan-only: the task file the controller would be handed, no job submitted."""
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    task = tmp_path / "train.yaml"
    task.write_text("name: train\nresources:\n  accelerators: V100:1\n  any_of:\n"
                    "    - infra: aws/us-east-1\n    - infra: gcp\n"
                    "secrets:\n  TOKEN: null\nrun: python train.py\n")
    path, secrets = handed_task(
        str(task), envs={}, secrets={"TOKEN": SECRET},
        overrides={"resources": {"accelerators": "A100:8", "use_spot": True},
                   "num_nodes": 2}, infra="aws")
    assert path.parent == tmp_path / "home" / "jobs" / "tasks"
    assert secrets == {"TOKEN": SECRET} and SECRET not in path.read_text()
    [loaded] = load_tasks(path, secrets=secrets, require_values=True).tasks
    assert loaded.num_nodes == 2
    [candidate] = loaded.candidates()  # only the aws alternative is left
    assert (candidate.infra.cloud, candidate.infra.region) == ("aws", "us-east-1")
    assert candidate.accelerator is not None and candidate.accelerator.name == "A100"
    assert candidate.accelerator.count == 8 and candidate.use_spot
    same, _ = handed_task(str(task), envs={}, secrets={"TOKEN": SECRET}, overrides={},
                          infra=None)
    assert same == task  # nothing changed on the command line: the file as it is


@pytest.mark.parametrize(("resources", "infra", "expected"), [
    ({}, "aws", {"infra": "aws"}),
    ({"infra": "aws"}, "aws/us-east-1", {"infra": "aws/us-east-1"}),
    ({"infra": "*/us-east-1"}, "aws", {"infra": "aws/us-east-1"}),
    ({"ordered": [{"infra": "gcp"}, {"cpus": "4+"}]}, "aws",
     {"infra": "aws", "ordered": [{"cpus": "4+", "infra": "aws"}]}),
    ({"infra": "gcp", "any_of": [{"infra": "aws"}, {"cpus": "2"}]}, "aws",
     {"any_of": [{"infra": "aws"}]}),
])
def test_narrowed_keeps_the_alternatives_that_run_there(
    resources: dict[str, Any], infra: str, expected: dict[str, Any],
) -> None:
    assert narrowed(resources, infra, "t") == expected


def test_narrowed_refuses_a_task_that_runs_only_elsewhere() -> None:
    with pytest.raises(ConfigError, match=r"none of task t's resources\.any_of runs there"):
        narrowed({"any_of": [{"infra": "gcp"}, {"infra": "azure"}]}, "aws", "t")
    with pytest.raises(ConfigError, match="--infra aws/us-west-2: task t runs on aws/eu-west-1"):
        narrowed({"infra": "aws/eu-west-1"}, "aws/us-west-2", "t")


def test_a_pipeline_keeps_its_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "home"))
    task = tmp_path / "pipe.yaml"
    task.write_text("name: pipe\n---\nname: a\nrun: echo a\n---\nname: b\nrun: echo b\n")
    path, _ = handed_task(str(task), envs={}, secrets={}, overrides={}, infra="local")
    docs = list(yaml.safe_load_all(path.read_text()))
    assert docs[0] == {"execution": "serial", "name": "pipe"}
    assert [d["name"] for d in docs[1:]] == ["a", "b"]
    assert all(d["resources"]["infra"] == "local" for d in docs[1:])
