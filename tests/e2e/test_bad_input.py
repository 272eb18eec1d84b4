"""``skyc apply`` on bad input: a clear error, a non-zero exit, no traceback, nothing left."""

from __future__ import annotations

from tests.e2e.conftest import REPO, Result, Skyc


def _refused(result: Result) -> str:
    assert result.returncode != 0, str(result)
    assert "Traceback" not in result.output, str(result)
    assert result.stdout.strip() == "", str(result)
    return result.stderr


def _no_clusters_left(skyc: Skyc) -> None:
    clusters = skyc.home / "clusters"
    assert not clusters.exists() or list(clusters.iterdir()) == [], list(clusters.iterdir())
    assert skyc.clusters() == []


def test_missing_task_file(skyc: Skyc) -> None:
    err = _refused(skyc("apply", "nope.yaml", "--yes"))
    assert "nope.yaml" in err and "not found" in err
    _no_clusters_left(skyc)


def test_invalid_task_names_every_problem(skyc: Skyc) -> None:
    skyc.write("bad.yaml", "name: bad\nnum_nodes: 0\nrun: echo hi\nbogus: 1\n")
    err = _refused(skyc("apply", "bad.yaml", "--yes"))
    assert "bad.yaml:2" in err and "num_nodes" in err, err
    assert "bad.yaml:4" in err and "bogus" in err, err
    _no_clusters_left(skyc)


def test_aws_without_credentials_says_what_to_set(skyc: Skyc) -> None:
    skyc.write("aws.yaml", "name: awsjob\nresources:\n  infra: aws\n  cpus: 2\nrun: echo hi\n")
    err = _refused(skyc("apply", "aws.yaml", "--yes"))
    error = err[err.find("error:"):]
    assert "AWS_ACCESS_KEY_ID" in error, err
    assert "state database" not in err, err
    _no_clusters_left(skyc)


def test_apply_without_yes_and_without_a_tty_is_refused(skyc: Skyc) -> None:
    skyc.write("loc.yaml", "name: loc\nresources:\n  infra: local\nrun: echo hi\n")
    err = _refused(skyc("apply", "loc.yaml"))
    assert "--yes" in err and "not a terminal" in err, err
    _no_clusters_left(skyc)


def _no_engine_ran(skyc: Skyc) -> None:
    """No workspace (stack, engine state) and no cluster record: nothing was created."""
    _no_clusters_left(skyc)
    assert not (skyc.home / "clusters").exists(), list((skyc.home / "clusters").iterdir())


def test_bad_bucket_mounts_and_missing_paths_are_refused_before_provisioning(
        skyc: Skyc) -> None:
    skyc.write("mounts.yaml", """\
name: mounts
resources:
  infra: local
workdir: ./no-such-dir
file_mounts:
  /data: s3://My_Bucket/data
  /local: ./missing.txt
run: echo hi
""")
    err = _refused(skyc("apply", "mounts.yaml", "--yes"))
    assert "task 'mounts' cannot run, nothing was created" in err, err
    for reason in ("workdir: ./no-such-dir is not a directory",
                   "file_mounts./data.source: 'My_Bucket' is not a valid S3 bucket name",
                   "file_mounts./local: ./missing.txt does not exist"):
        assert reason in err, err
    _no_engine_ran(skyc)


def test_more_nodes_than_the_target_allows_is_refused_by_plan_and_apply(skyc: Skyc) -> None:
    skyc.write("many.yaml", "name: many\nnum_nodes: 65\nresources:\n  infra: local\n"
                            "run: echo hi\n")
    for args in (("plan", "many.yaml", "--no-diff"), ("apply", "many.yaml", "--yes")):
        err = _refused(skyc(*args))
        assert "num_nodes: 65 is more than local supports in one cluster (64)" in err, err
    _no_engine_ran(skyc)


def test_an_image_the_target_cannot_use_is_refused_before_provisioning(skyc: Skyc) -> None:
    skyc.write("img.yaml", "name: img\nresources:\n  infra: local\n  image_id: docker:ubuntu\n"
                           "run: echo hi\n")
    err = _refused(skyc("apply", "img.yaml", "--yes"))
    assert "image_id: local does not use machine images" in err, err
    _no_engine_ran(skyc)


def test_a_target_skyc_cannot_provision_is_refused_before_provisioning(skyc: Skyc) -> None:
    # A cloud of SkyPilot's that has offers (a catalog of its own) but no skyc target.
    skyc.write("cat/lambda/vms.csv", "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,"
               "MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch\n"
               "gpu_1x_a10,A10,1,30.0,200.0,,0.75,,us-east-1,,x86_64\n")
    skyc.write("lam.yaml", "name: lam\nresources:\n  infra: lambda\n  accelerators: A10:1\n"
               "run: echo hi\n")
    err = _refused(skyc("apply", "lam.yaml", "--yes", "--catalog", "cat"))
    assert "skyc cannot provision on 'lambda' yet" in err, err
    _no_engine_ran(skyc)


def test_a_secret_without_a_value_is_refused(skyc: Skyc) -> None:
    skyc.write("sec.yaml", "name: sec\nresources:\n  infra: local\nsecrets:\n  TOKEN: null\n"
                           "run: echo hi\n")
    err = _refused(skyc("apply", "sec.yaml", "--yes"))
    assert "secrets.TOKEN" in err and "--secret TOKEN" in err, err
    _no_engine_ran(skyc)


def test_autostop_and_job_recovery_are_acted_on_not_warned_about(skyc: Skyc) -> None:
    skyc.write("auto.yaml", "name: auto\nresources:\n  infra: local\n  autostop: 10m\n"
                            "  job_recovery: FAILOVER\n")
    for args in (("validate", "auto.yaml"), ("plan", "auto.yaml", "--no-diff")):
        result = skyc.ok(*args)
        assert "autostop" not in result.stderr and "job_recovery" not in result.stderr, result
    # --down makes the task's autostop a teardown once idle (local nodes cannot stop).
    result = skyc.ok("apply", "auto.yaml", "--yes", "--down")
    assert "autostop after 10 idle minute(s), down" in result.stderr, str(result)


def test_alias_bombs_get_a_clean_verdict_in_every_command(skyc: Skyc) -> None:
    bomb = REPO / "tests" / "fixtures" / "task" / "hostile" / "bomb-config.yaml"
    for args in (("validate", str(bomb)), ("plan", str(bomb), "--no-diff"),
                 ("compile", str(bomb), "-o", "out"), ("apply", str(bomb), "--yes")):
        result = skyc(*args, timeout=30)
        err = _refused(result)
        assert "config.f: expands to more than 500,000 values" in err, err
        assert result.seconds < 10, str(result)
    _no_engine_ran(skyc)


def test_two_task_names_with_one_cluster_name_are_refused(skyc: Skyc) -> None:
    skyc.write("pipe.yaml", "name: 日本\nrun: echo 1\n---\nname: 中文\nrun: echo 2\n")
    err = _refused(skyc("plan", "pipe.yaml"))
    assert "tasks '日本' and '中文' would share cluster 'skyc-cluster'" in err, err
    assert "-c NAME" in err, err


def test_a_cluster_named_after_another_task_is_not_reused_silently(skyc: Skyc) -> None:
    skyc.write("a.yaml", "name: 日本\nresources:\n  infra: local\nrun: echo one\n")
    skyc.write("b.yaml", "name: 中文\nresources:\n  infra: local\nrun: echo two\n")
    skyc.ok("apply", "a.yaml", "--yes")
    err = _refused(skyc("apply", "b.yaml", "--yes"))
    assert "tasks '中文' and '日本' would share cluster 'skyc-cluster'" in err, err
    assert "-c skyc-cluster" in err and "-c NAME" in err, err
    assert skyc("logs", "skyc-cluster").stdout.count("two") == 0
    skyc.ok("apply", "b.yaml", "--yes", "-c", "skyc-cluster")
    skyc.ok("destroy", "skyc-cluster", "--yes")


def test_exec_judges_the_task_file_before_looking_up_the_cluster(skyc: Skyc) -> None:
    bomb = REPO / "tests" / "fixtures" / "task" / "hostile" / "bomb-config.yaml"
    # No such cluster: the verdict is still about the task file, not the lookup.
    result = skyc("exec", "no-such-cluster", str(bomb), timeout=30)
    err = _refused(result)
    assert "config.f: expands to more than 500,000 values" in err, err
    assert "no-such-cluster" not in err, err
    skyc.write("bad.yaml", "num_nodes: 0\nrun: echo hi\n")
    err = _refused(skyc("exec", "no-such-cluster", "bad.yaml"))
    assert "bad.yaml:1" in err and "num_nodes" in err, err
    skyc.write("mount.yaml", "run: echo hi\nfile_mounts:\n  /data: s3://Bad_Bucket/x\n")
    err = _refused(skyc("exec", "no-such-cluster", "mount.yaml"))
    assert "file_mounts./data" in err and "no-such-cluster" not in err, err


def test_a_failover_placement_gets_the_same_preflight_as_the_first(skyc: Skyc) -> None:
    # aws first (no credentials here: that attempt fails before its engine runs), then
    # local, whose target refuses an image_id: that attempt must create nothing either.
    skyc.write("fo.yaml", """\
name: fo
resources:
  ordered:
    - infra: aws
      cpus: 2
    - infra: local
      image_id: ubuntu:22.04
run: echo hi
""")
    err = _refused(skyc("apply", "fo.yaml", "--yes"))
    assert "NoCredentials" in err, err
    assert "Refused: task 'fo' cannot run on local: image_id: local does not use" in err, err
    assert "provision local" not in err, err
    _no_engine_ran(skyc)
