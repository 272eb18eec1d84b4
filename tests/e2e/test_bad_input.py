"""``skyc apply`` on bad input: a clear error, a non-zero exit, no traceback, nothing left."""

from __future__ import annotations

from tests.e2e.conftest import Result, Skyc


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
