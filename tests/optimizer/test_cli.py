"""``skyc plan``, ``show-gpus``, ``check`` and ``catalog update`` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.optimizer.helpers import SMALL_CATALOG

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def skyc(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run skyc; ``plan`` runs without the engine diff (tests/plan_diff/ covers that)."""
    if args and args[0] == "plan":
        args = (*args, "--no-diff")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "AZURE_", "KUBECONFIG"))}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
               COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "skyc", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def task(tmp_path: Path, text: str) -> str:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return str(path)


def test_plan_json_document(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "name: train\nresources:\n  accelerators: A100:8\nrun: echo hi\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws",
             "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format_version"] == "2.4"
    [tp] = doc["tasks"]
    assert tp["name"] == "train"
    pl = tp["placement"]
    assert (pl["cloud"], pl["region"], pl["zone"], pl["instance_type"]) == (
        "aws", "us-west-2", "usw2-az2", "p4d.24xlarge")
    assert pl["accelerators"] == {"A100": 8.0} and pl["num_nodes"] == 1
    assert pl["use_spot"] is False and pl["candidate_index"] == 0
    assert doc["hourly_cost"] == pytest.approx(30.0)
    assert [a["region"] for a in tp["alternatives"]] == ["us-east-1"]
    assert doc["catalog"]["source"] == SMALL_CATALOG.name  # no path of this machine


def test_plan_table_and_pipeline(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, (
        "name: prep\noutputs:\n  s3://b/data: 1000\nrun: echo prep\n---\n"
        "name: train\nresources:\n  accelerators: A100:8\nrun: echo train\n"))
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws")
    assert r.returncode == 0, r.stderr
    assert "task prep" in r.stdout and "task train" in r.stdout
    assert "✔" in r.stdout and "p4d.24xlarge" in r.stdout
    assert "$/hr/node" in r.stdout and "$/hr total" in r.stdout
    assert "plan: prep: aws/" in r.stdout
    # steps that run one after another are priced each, not added up
    assert "one after another" in r.stdout and "together" not in r.stdout


def test_plan_spot_and_time(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "resources:\n  accelerators: {T4: 1, A100: 8}\n  use_spot: true\n"
                       "run: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws",
             "--optimize", "time", "--format", "json")
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout)["tasks"][0]["placement"]
    assert pl["accelerators"] == {"A100": 8.0} and pl["use_spot"] is True
    assert json.loads(r.stdout)["optimize"] == "time"


def test_plan_infeasible_is_a_clean_error(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "resources:\n  accelerators: H100:16\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws")
    assert r.returncode == 1
    assert "no instance has 16 H100 in one node; the largest has 8" in r.stderr
    assert "Traceback" not in r.stderr


def _untargeted() -> list[str]:
    from skyc.catalog import load_catalog
    from skyc.compiler import target_names

    return [c for c in load_catalog(SMALL_CATALOG).priced_clouds if c not in target_names()]


def test_plan_without_credentials_uses_local_for_cpus(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "resources:\n  cpus: 1+\nrun: echo\n")
    r = skyc(home, "plan", t, "--format", "json")
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout)["tasks"][0]["placement"]
    assert pl["cloud"] == "local" and pl["hourly_cost"] == 0.0


def test_plan_without_credentials_plans_over_every_target(tmp_path: Path, home: Path) -> None:
    from skyc.compiler import target_names

    t = task(tmp_path, "resources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0, r.stderr
    assert "planned over all; apply needs credentials" in r.stdout
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    tp = doc["tasks"][0]
    # never a placement on a target skyc cannot provision
    assert {p["cloud"] for p in [tp["placement"], *tp["alternatives"]]} <= set(target_names())
    assert doc["notes"]["plan_only"] and set(doc["notes"]["plan_only"]) <= set(target_names())
    assert doc["notes"].get("skipped", []) == _untargeted()
    if _untargeted():
        assert f"skipped {', '.join(_untargeted())}: skyc cannot provision there" in r.stderr


def test_naming_an_untargeted_cloud_is_refused(tmp_path: Path, home: Path) -> None:
    clouds = _untargeted()
    if not clouds:
        pytest.skip("every cloud of the catalog is a registered target")
    t = task(tmp_path, "resources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", clouds[0])
    assert r.returncode == 1
    assert f"skyc cannot provision on '{clouds[0]}' yet" in r.stderr
    assert "Traceback" not in r.stderr


def test_infra_twice_is_refused_and_names_are_case_insensitive(tmp_path: Path,
                                                               home: Path) -> None:
    t = task(tmp_path, "resources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws",
             "--infra", "local")
    assert r.returncode == 2 or r.returncode == 1
    assert "--infra given 2 times (aws, local): give it once" in r.stderr
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "AWS/us-east-1",
             "--format", "json")
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout)["tasks"][0]["placement"]
    assert (pl["cloud"], pl["region"]) == ("aws", "us-east-1")


def test_both_price_units_in_json(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "num_nodes: 2\nresources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws",
             "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    pl = doc["tasks"][0]["placement"]
    assert pl["hourly_cost_total"] == pl["hourly_cost"] == pytest.approx(60.0)
    assert pl["hourly_cost_per_node"] == pytest.approx(30.0)
    assert doc["hourly_cost_total"] == pytest.approx(60.0)


def test_plan_verdict_shows_both_units(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "num_nodes: 2\nresources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws")
    assert r.returncode == 0, r.stderr
    verdict = [line for line in r.stdout.splitlines() if line.startswith("plan:")]
    assert verdict == [line for line in verdict if "x2 at $30.0000/hr/node, $60.0000/hr total"
                       in line] and verdict


@pytest.mark.parametrize("columns", ["80", "100"])
def test_plan_table_fits_narrow_terminals(tmp_path: Path, home: Path, columns: str) -> None:
    t = task(tmp_path, "num_nodes: 2\nresources:\n  accelerators: A100:8\nrun: echo\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT),
               COLUMNS=columns)
    r = subprocess.run([sys.executable, "-m", "skyc", "plan", t, "--catalog",
                        str(SMALL_CATALOG), "--infra", "aws", "--no-diff"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    table = r.stdout.split("plan:")[0]
    assert all(len(line) <= int(columns) for line in table.splitlines())
    assert "…" not in table
    assert "p4d.24xlarge" in table and "30.0000" in table and "60.0000" in table
    assert "aws/us-west-2/usw2-az2" in table


def test_output_to_a_pipe_is_never_wrapped(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "num_nodes: 2\nresources:\n  accelerators: A100:8\nrun: echo\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "skyc", "plan", t, "--catalog",
                        str(SMALL_CATALOG), "--infra", "aws", "--no-diff"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    [verdict] = [line for line in r.stdout.splitlines() if line.startswith("plan:")]
    assert len(verdict) > 80 and verdict.rstrip().endswith(")")
    assert "memory" in r.stdout and "vCPUs" in r.stdout  # every column kept


def test_a_cheaper_disabled_cloud_is_named(tmp_path: Path) -> None:
    from skyc.apply.infra import PlanScope, catalog_for
    from skyc.apply.scope_notes import cheaper_elsewhere, cheaper_line
    from skyc.optimizer import optimize
    from skyc.settings.config import SkycConfig
    from skyc.task import load_tasks

    t = task(tmp_path, "resources:\n  accelerators: A100:8\nrun: echo\n")
    tasks = list(load_tasks(t).tasks)
    config = SkycConfig()
    here = PlanScope(names=frozenset({"aws"}), disabled=("azure",))
    plan = optimize(tasks, catalog_for(config, tasks, catalog_dir=SMALL_CATALOG, scope=here))
    found = cheaper_elsewhere(tasks, plan, here, config, infra=None, catalog_dir=SMALL_CATALOG,
                              target="cost", parallel=False)
    assert found is not None and found["clouds"] == ["azure"], (found, plan.hourly_cost)
    assert found["hourly_cost_total"] < plan.hourly_cost
    line = cheaper_line(found, plan)
    assert line.startswith("azure would be $") and "/hr total" in line and "enable it" in line
    none = cheaper_elsewhere(tasks, plan, PlanScope(names=frozenset({"aws"})), config,
                             infra=None, catalog_dir=SMALL_CATALOG, target="cost", parallel=False)
    assert none is None


def test_show_gpus(home: Path) -> None:
    r = skyc(home, "show-gpus", "a100", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0, r.stderr
    assert "p4d.24xlarge" in r.stdout and "a2-highgpu-8g" in r.stdout
    assert "Standard_ND96asr_v4" in r.stdout
    r = skyc(home, "show-gpus", "--catalog", str(SMALL_CATALOG), "--infra", "gcp",
             "--all-regions")
    assert r.returncode == 0, r.stderr
    assert "tpu-v5litepod-8" in r.stdout and "europe-west4" in r.stdout
    assert "p4d" not in r.stdout
    r = skyc(home, "show-gpus", "nonesuch", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 1 and "no accelerator named 'nonesuch'" in r.stderr


def test_show_gpus_count_summary_and_typos(home: Path) -> None:
    r = skyc(home, "show-gpus", "A100:8", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0, r.stderr
    assert "p4d.24xlarge" in r.stdout and "$/hr/node" in r.stdout
    rows = [line.split() for line in r.stdout.splitlines() if line.strip().startswith("A100 ")]
    assert rows and all(row[1] == "8" for row in rows)
    r = skyc(home, "show-gpus", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0, r.stderr
    summary = len(r.stdout.splitlines())
    assert "A100" in r.stdout and "-a lists every accelerator" in r.stdout
    r = skyc(home, "show-gpus", "-a", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0 and len(r.stdout.splitlines()) >= summary
    r = skyc(home, "show-gpus", "A10O", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 1 and "did you mean" in r.stderr
    assert len(r.stderr) < 400  # three names, not the whole catalog
    r = skyc(home, "show-gpus", "A100:x", "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 1 and "count after ':'" in r.stderr


def test_launch_is_apply_and_detach_has_a_short_flag(home: Path) -> None:
    r = skyc(home, "launch", "--help")
    assert r.returncode == 0 and "same command" in r.stdout and "-d, --detach" in r.stdout


def test_check(home: Path) -> None:
    r = skyc(home, "check")
    assert r.returncode == 0, r.stderr
    assert "aws" in r.stdout and "no credentials found" in r.stdout
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\n")
    r = skyc(home, "check")
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "enabled" in lines["aws"] and "~/.aws/credentials exists" in lines["aws"]
    assert "disabled" in lines["gcp"]


def test_catalog_update_then_plan_uses_it(tmp_path: Path, home: Path) -> None:
    r = skyc(home, "catalog", "update")
    assert r.returncode == 1 and "--from" in r.stderr
    r = skyc(home, "catalog", "update", "--from", SMALL_CATALOG.as_uri())
    assert r.returncode == 0, r.stderr
    assert (home / ".skyc" / "catalog" / "meta.json").is_file()
    t = task(tmp_path, "resources:\n  accelerators: H100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--infra", "aws", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["catalog"]["source"] == SMALL_CATALOG.as_uri()
    assert doc["tasks"][0]["placement"]["hourly_cost"] == pytest.approx(90.0)


@pytest.mark.parametrize(("resources", "want"), [
    ("  accelerators: [H100:8, A100:8]\n", ("us-east-2", "p5.48xlarge", 0, False)),
    ("  any_of:\n    - {accelerators: H100:8}\n    - {accelerators: A100:8, use_spot: true}\n",
     ("us-east-1", "p4d.24xlarge", 1, True)),
    ("  ordered:\n    - {accelerators: H100:8, infra: aws/us-east-1}\n"
     "    - {accelerators: A100:8}\n", ("us-east-1", "p5.48xlarge", 0, False)),
])
def test_plan_resource_forms(tmp_path: Path, home: Path, resources: str,
                             want: tuple[str, str, int, bool]) -> None:
    t = task(tmp_path, f"resources:\n{resources}run: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--infra", "aws",
             "--format", "json")
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout)["tasks"][0]["placement"]
    assert (pl["region"], pl["instance_type"], pl["candidate_index"], pl["use_spot"]) == want


@pytest.mark.parametrize("cmd", [["plan"], ["show-gpus"], ["check"], ["catalog", "update"]])
def test_help_renders(home: Path, cmd: list[str]) -> None:
    r = skyc(home, *cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert "Usage" in r.stdout and "Traceback" not in r.stderr


def test_a_task_name_with_escape_sequences_is_shown_escaped(tmp_path: Path, home: Path) -> None:
    path = task(tmp_path, 'name: "evil\\e[2J\\e]0;pwned\\a\\u202e"\nresources:\n'
                          "  infra: local\nrun: echo hi\n")
    out = skyc(home, "plan", path)
    assert out.returncode == 0, out.stderr
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out.stdout and raw not in out.stderr, repr(out.stdout)
    assert "task evil\\x1b[2J\\x1b]0;pwned" in out.stdout, out.stdout


def test_plan_says_which_engine_diff_runs(tmp_path: Path, home: Path) -> None:
    t = task(tmp_path, "name: hi\nresources:\n  infra: local\nrun: echo hi\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(home), SKYC_HOME=str(home / ".skyc"), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "skyc", "plan", t], capture_output=True,
                       text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "engine diff 1/1: terraform plan for stack hi" in r.stderr
    assert "engine diff done in" in r.stderr and "stack hi" in r.stdout


def test_a_cheaper_disabled_cloud_gets_one_line(tmp_path: Path, home: Path) -> None:
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\n")  # aws enabled, nothing else
    t = task(tmp_path, "resources:\n  accelerators: A100:8\nrun: echo\n")
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG))
    assert r.returncode == 0, r.stderr
    assert "planned over all" not in r.stdout
    [line] = [ln for ln in r.stdout.splitlines() if " would be $" in ln]
    assert line.startswith("gcp would be $26.4700/hr total") and "enable it" in line
    r = skyc(home, "plan", t, "--catalog", str(SMALL_CATALOG), "--format", "json")
    notes = json.loads(r.stdout)["notes"]
    assert notes["cheaper_elsewhere"]["clouds"] == ["gcp"]


def test_a_row_dearer_because_of_data_transfer_says_so(tmp_path: Path, home: Path) -> None:
    header = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
              "SpotPrice,Region,AvailabilityZone,Arch\n")
    rows = ["m9.xlarge,,,4.0,16.0,,0.1,,us-east-1,use1-az1,x86_64",
            "m9.xlarge,,,4.0,16.0,,0.5,,us-west-2,usw2-az1,x86_64",
            "p9.24xlarge,A100,8,96.0,1152.0,,30.5,,us-east-1,use1-az1,x86_64",
            "p9.24xlarge,A100,8,96.0,1152.0,,30.0,,us-west-2,usw2-az1,x86_64"]
    (tmp_path / "cat" / "aws").mkdir(parents=True)
    (tmp_path / "cat" / "aws" / "vms.csv").write_text(header + "\n".join(rows) + "\n")
    t = task(tmp_path, (
        "name: prep\nresources:\n  cpus: 4\noutputs:\n  s3://b/data: 1000\nrun: echo\n---\n"
        "name: train\nresources:\n  accelerators: A100:8\nrun: echo\n"))
    r = skyc(home, "plan", t, "--catalog", str(tmp_path / "cat"), "--infra", "aws")
    assert r.returncode == 0, r.stderr
    prep = r.stdout.split("task train")[0]
    [chosen] = [line for line in prep.splitlines() if "✔" in line]
    assert "aws/us-west-2" in chosen  # dearer than us-east-1, where train would pay more
    assert "chosen over cheaper rows to keep the pipeline's data transfer low" in prep


def test_a_long_pipeline_is_one_table_of_choices_and_json_keeps_the_alternatives(
        home: Path, tmp_path: Path) -> None:
    docs = ["name: long\n"] + [
        f"name: step{i}\nresources:\n  infra: aws\n  cpus: {4 if i % 2 else 8}+\nrun: echo\n"
        for i in range(20)]
    path = task(tmp_path, "---\n".join(docs))
    out = skyc(home, "plan", path)
    assert out.returncode == 0, out.stderr
    assert "20 tasks: the placement chosen for each" in out.stdout
    assert "task step0" not in out.stdout  # no table per task
    assert sum(line.lstrip().startswith("step") for line in out.stdout.splitlines()) >= 20
    assert "plan: 20 tasks as in the table" in out.stdout
    assert "no duration for step step0, step1, step2, step3, step4, step5, step6, step7 and " \
        "12 more" in out.stdout
    doc = json.loads(skyc(home, "plan", path, "--format", "json").stdout)
    assert len(doc["tasks"]) == 20 and all(t["alternatives"] for t in doc["tasks"])
    short = task(tmp_path, "---\n".join(docs[:4]))
    assert "task step0" in skyc(home, "plan", short).stdout  # a short one: a table each
