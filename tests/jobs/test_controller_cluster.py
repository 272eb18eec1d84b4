"""Managed jobs whose controller runs on a controller cluster on the ``local`` target
(config ``jobs: {controller: {infra: local}}``): a regular cluster whose node is a
directory of this machine, with its own SKYC_HOME there. Real ``python -m skyc``
subprocesses, real terraform; the client reaches the controller through the runtime's
local transport, as it reaches an SSH controller through asyncssh."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Skyc
from tests.jobs.conftest import TERMINAL, queue, wait_for

SECRET = "s3cr3t-ctl-7f2a9c"


@pytest.fixture(autouse=True)
def _cancel_what_is_left(jobs: Skyc) -> Iterator[None]:
    """A test that failed half-way leaves no job running on the controller cluster."""
    yield
    if (jobs.home / "config.yaml").exists():
        jobs("jobs", "cancel", "--all", timeout=120)


def _controller_config(jobs: Skyc, user: str | None = None, **controller: object) -> None:
    jobs.home.mkdir(parents=True, exist_ok=True)
    (jobs.home / "config.yaml").write_text(yaml.safe_dump(
        {"jobs": {"controller": {"infra": "local", **controller}},
         **({"user": user} if user else {})}))


def _controller(jobs: Skyc) -> str:
    names = [c for c in jobs.clusters() if c.startswith("skyc-jobs-controller-")]
    assert len(names) == 1, jobs.clusters()
    return names[0]


def _controller_home(jobs: Skyc, name: str) -> Path:
    return jobs.workspace(name) / "nodes" / "head" / ".skyc-controller" / "home"


def _files_holding(root: Path, needle: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and needle.encode() in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_a_job_launched_detached_runs_on_the_controller_cluster_to_its_end(
        jobs: Skyc, tmp_path: Path) -> None:
    _controller_config(jobs, user="dana@laptop")
    jobs.write("train.yaml", """\
name: ctl-train
resources:
  infra: local
envs:
  EPOCHS: "2"
secrets:
  API_TOKEN: null
run: |
  echo "epochs $EPOCHS, token of ${#API_TOKEN} characters, id $SKYPILOT_TASK_ID"
  sleep 3
  echo done-training
""")
    launched = jobs.ok("jobs", "launch", "train.yaml", "-y", "-d",
                       "--secret", f"API_TOKEN={SECRET}")
    assert launched.stdout.strip() == "1"
    assert "jobs controller" in launched.stderr
    # The client has exited; the job goes on on the controller cluster.
    name = _controller(jobs)
    running = wait_for(jobs, 1, lambda j: j["status"] in ("RUNNING", "SUCCEEDED"), timeout=60)
    assert running["name"] == "ctl-train"

    followed = jobs.ok("jobs", "logs", "1", "--follow", timeout=120)
    assert f"token of {len(SECRET)} characters" in followed.stdout
    assert "done-training" in followed.stdout
    done = queue(jobs)[0]
    assert done["status"] == "SUCCEEDED", done
    table = jobs.ok("jobs", "queue").stdout
    assert "ctl-train" in table and "SUCCEEDED" in table
    # The job is its submitter's, not the controller's user's: a teammate's client
    # (another user: of the config) sees it with -u only, owner named.
    assert done["owner"] == "dana@laptop"
    _controller_config(jobs, user="erin@ci")
    assert queue(jobs) == []
    everyone = json.loads(jobs.ok("jobs", "queue", "--format", "json", "-u").stdout)["jobs"]
    assert [(j["name"], j["owner"]) for j in everyone] == [("ctl-train", "dana@laptop")]
    assert "dana@laptop" in jobs.ok("jobs", "queue", "-u").stdout
    _controller_config(jobs, user="dana@laptop")

    # The controller cluster is a regular cluster with a stack made for review.
    ws = jobs.workspace(name)
    stack = json.loads((ws / "main.tf.json").read_text())
    assert '"skyc-role": "jobs-controller"' in json.dumps(stack, sort_keys=True)
    status = json.loads(jobs.ok("status", "--format", "json").stdout)["clusters"]
    assert [c["name"] for c in status] == [name]
    # The controller ran the job here, under its own SKYC_HOME; the job's cluster is gone.
    home = _controller_home(jobs, name)
    assert (home / "state.db").exists()
    assert not (home / "clusters" / "skyc-job-1" / "cluster.json").exists()
    assert "jobs" not in yaml.safe_load((home / "config.yaml").read_text())
    assert _files_holding(tmp_path, SECRET) == []


def test_an_attached_launch_follows_the_job_on_the_controller_to_its_end(
        jobs: Skyc) -> None:
    _controller_config(jobs)
    jobs.write("fails.yaml", "name: fails\nresources:\n  infra: local\n"
                             "run: echo before-failing; exit 3\n")
    result = jobs("jobs", "launch", "fails.yaml", "-y", timeout=180)
    assert result.returncode == 1 and "Traceback" not in result.output, str(result)
    assert "before-failing" in result.stdout
    assert "managed job 1: FAILED" in result.stderr
    assert queue(jobs)[0]["status"] == "FAILED"


def test_cancel_is_forwarded_and_leaves_nothing_of_the_job(jobs: Skyc) -> None:
    _controller_config(jobs)
    jobs.write("long.yaml", "name: long\nresources:\n  infra: local\nrun: sleep 600\n")
    jobs.ok("jobs", "launch", "long.yaml", "-y", "-d")
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING", timeout=60)

    out = jobs.ok("jobs", "cancel", "1", timeout=120).stdout
    assert "managed job 1: CANCELLED" in out
    assert queue(jobs)[0]["status"] == "CANCELLED"
    home = _controller_home(jobs, _controller(jobs))
    assert not (home / "clusters" / "skyc-job-1" / "cluster.json").exists()


def test_destroying_the_controller_cluster_is_refused_while_it_supervises_a_job(
        jobs: Skyc) -> None:
    _controller_config(jobs)
    jobs.write("long.yaml", "name: long\nresources:\n  infra: local\nrun: sleep 600\n")
    jobs.ok("jobs", "launch", "long.yaml", "-y", "-d")
    wait_for(jobs, 1, lambda j: j["status"] == "RUNNING", timeout=60)
    name = _controller(jobs)

    refused = jobs("destroy", name, "--yes", timeout=120)
    assert refused.returncode == 1 and "Traceback" not in refused.output, str(refused)
    assert "managed-jobs controller and still supervises 1 unfinished job(s): 1 (RUNNING)" \
        in " ".join(refused.stderr.split()), refused.stderr
    assert "skyc jobs cancel --all" in refused.stderr
    assert name in jobs.clusters() and queue(jobs)[0]["status"] == "RUNNING"

    jobs.ok("jobs", "cancel", "--all", timeout=120)
    jobs.ok("destroy", name, "--yes", timeout=180)
    assert jobs.clusters() == []


def test_without_a_controller_section_no_controller_cluster_is_made(jobs: Skyc) -> None:
    jobs.write("quick.yaml", "name: quick\nresources:\n  infra: local\nrun: echo hi\n")
    jobs.ok("jobs", "launch", "quick.yaml", "-y", "-d")
    assert wait_for(jobs, 1, lambda j: j["status"] == "SUCCEEDED", timeout=60)
    assert not any(c.startswith("skyc-jobs-controller-") for c in jobs.clusters())


def test_a_misspelt_controller_resource_is_a_clear_error_and_creates_nothing(
        jobs: Skyc) -> None:
    _controller_config(jobs, resources={"cpuz": 4})
    jobs.write("quick.yaml", "name: quick\nresources:\n  infra: local\nrun: echo hi\n")
    result = jobs("jobs", "launch", "quick.yaml", "-y", "-d")
    assert result.returncode == 1, str(result)
    assert "Traceback" not in result.output
    assert "jobs.controller.resources.cpuz" in result.stderr, result.stderr
    assert "config.yaml" in result.stderr
    assert jobs.clusters() == []


def test_controller_resources_no_offer_has_are_a_clear_error(jobs: Skyc) -> None:
    _controller_config(jobs, resources={"cpus": "512+"})
    result = jobs("jobs", "controller-up")
    assert result.returncode == 1 and "Traceback" not in result.output, str(result)
    assert "config.yaml: jobs.controller: " in result.stderr
    assert "no feasible placement" in result.stderr
    assert jobs.clusters() == []


def test_a_cloud_job_from_a_controller_without_credentials_is_refused(jobs: Skyc) -> None:
    _controller_config(jobs)
    jobs.write("cloud.yaml", "name: cloud\nresources:\n  infra: aws\n  cpus: 2\n"
                             "run: echo hi\n")
    result = jobs("jobs", "launch", "cloud.yaml", "-y", "-d")
    assert result.returncode == 1, str(result)
    assert "Traceback" not in result.output
    name = _controller(jobs)
    assert f"jobs controller cluster {name} cannot provision aws" in result.stderr
    assert "instance role" in result.stderr
    assert queue(jobs) == []


def test_the_workdir_and_file_mounts_travel_with_the_job(jobs: Skyc) -> None:
    _controller_config(jobs)
    src = jobs.cwd / "src"
    (src / "out").mkdir(parents=True)
    (src / "train.sh").write_text("echo from-the-workdir\n")
    (src / "out" / "big.bin").write_text("ignored")
    (src / ".gitignore").write_text("out/\n")
    jobs.write("data/labels.txt", "cat,dog\n")
    jobs.write("wd.yaml", """\
name: wd
workdir: src
file_mounts:
  ~/labels.txt: data/labels.txt
resources:
  infra: local
run: |
  bash train.sh
  echo "labels: $(cat ~/labels.txt)"
  ls out 2>/dev/null || echo no-out-dir
""")
    jobs.ok("jobs", "launch", "wd.yaml", "-y", "-d")
    done = wait_for(jobs, 1, lambda j: j["status"] in TERMINAL, timeout=90)
    logs = jobs.ok("jobs", "logs", "1").stdout
    assert done["status"] == "SUCCEEDED", (done, logs)
    assert "from-the-workdir" in logs and "no-out-dir" in logs
    assert "labels: cat,dog" in logs
    shipped = _controller_home(jobs, _controller(jobs)).parent / "tasks"
    copies = list(shipped.glob("*/files/0/mount-0"))
    assert [c.read_text() for c in copies] == ["cat,dog\n"]
    assert not list(shipped.glob("*/files/0/workdir/out"))


def test_a_missing_workdir_is_refused_before_anything_is_made(jobs: Skyc) -> None:
    _controller_config(jobs)
    jobs.write("wd.yaml", "name: wd\nworkdir: nowhere\nresources:\n  infra: local\n"
                          "run: echo hi\n")
    result = jobs("jobs", "launch", "wd.yaml", "-y", "-d")
    assert result.returncode == 1 and "Traceback" not in result.output, str(result)
    assert "workdir: nowhere is not a directory" in result.stderr
    assert jobs.clusters() == []


def test_controller_up_brings_it_up_and_a_client_of_another_version_ships_its_own(
        jobs: Skyc) -> None:
    refused = jobs("jobs", "controller-up")
    assert refused.returncode == 1 and "Traceback" not in refused.output, str(refused)
    assert "no jobs.controller section" in refused.stderr
    _controller_config(jobs)
    assert queue(jobs) == []  # no controller cluster yet: nothing queued, nothing made
    assert jobs.clusters() == []

    name = jobs.ok("jobs", "controller-up").stdout.strip()
    assert name.startswith("skyc-jobs-controller-") and jobs.clusters() == [name]
    root = _controller_home(jobs, name).parent
    (pkg,) = root.glob("pkg-*")
    shutil.rmtree(pkg)  # as if the controller had another skyc version than this client
    assert queue(jobs) == []
    assert list(root.glob("pkg-*/.complete"))
