"""Errors name the real cause, with the same did-you-mean wherever a name is given:
a GPU no enabled cloud offers, a misspelt cloud in --infra, a region that does not
exist, a GPU that does not exist (the real CLI, no credentials)."""

from __future__ import annotations

from pathlib import Path

from tests.plan_diff.test_plan_diff import home, skyc

__all__ = ["home"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _error(home: Path, *args: str) -> str:
    out = skyc(home, *args)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    return out.stderr


def test_a_gpu_only_disabled_clouds_offer(home: Path) -> None:
    """No cloud has credentials (apply considers only what is enabled): the error says
    which clouds would have the GPU."""
    err = _error(home, "apply", str(EXAMPLES / "serve-l4.yaml"), "--yes")
    assert "L4 is offered by aws, gcp, none of which is enabled here" in err, err
    assert "known: -" not in err


def test_a_misspelt_cloud_in_infra_gets_the_task_formats_did_you_mean(home: Path) -> None:
    err = _error(home, "plan", str(EXAMPLES / "hello.yaml"), "--infra", "awz", "--no-diff")
    assert "--infra awz: unknown cloud 'awz' (did you mean 'aws'?)" in err, err


def test_an_unknown_region_names_the_nearest(home: Path) -> None:
    err = _error(home, "plan", str(EXAMPLES / "train-a100.yaml"), "--infra",
                 "aws/us-east-9", "--no-diff")
    assert "unknown region 'us-east-9' for aws (did you mean us-east-" in err, err


def test_an_unknown_gpu_gets_did_you_mean_not_the_whole_list(home: Path) -> None:
    err = _error(home, "plan", str(EXAMPLES / "train-a100.yaml"), "--gpus", "H1000",
                 "--no-diff")
    assert "no accelerator named 'H1000' in the catalog (did you mean H100" in err, err
    assert "Trainium" not in err
