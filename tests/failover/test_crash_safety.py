"""Crash safety against moto with the real terraform + AWS provider: Ctrl-C of
`skyc apply` mid-apply says how to resume; after a SIGKILL mid-apply, `skyc apply`
again must converge on the same cluster (the engine's state is the truth) without
duplicate instances or leaked resources."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.failover.aws_env import AwsHome, leaks, live_instances, make_home, owned_ids
from tests.support.fault_proxy import FaultProxy
from tests.support.moto_server import start_moto
from tests.support.terraform import requires_aws_provider, requires_terraform

pytestmark = [pytest.mark.slow, pytest.mark.aws, requires_terraform, requires_aws_provider,
              pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsHome]:
    root = tmp_path_factory.mktemp("crash")
    with start_moto(root / "moto.log") as moto, FaultProxy(upstream=moto.url) as proxy:
        yield make_home(root, moto, proxy)


def _wait_for(proc: subprocess.Popen[str], text: str, timeout: float = 300) -> str:
    """Read the process's output until a line holds ``text``; returns what was read."""
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return "".join(seen)
        assert time.monotonic() < deadline, "".join(seen)
    raise AssertionError(f"exited ({proc.wait()}) before printing {text!r}:\n{''.join(seen)}")


def test_ctrl_c_mid_apply_stops_and_says_how_to_resume(aws: AwsHome) -> None:
    aws.moto.reset()
    task = aws.task("intr", "aws/us-east-1")
    first = aws.popen("apply", str(task), "--yes")
    _wait_for(first, "aws_key_pair.main create")  # the cluster's, after its network
    first.send_signal(signal.SIGINT)
    rest, _ = first.communicate(timeout=300)
    flat = " ".join(rest.split())
    assert first.returncode == 130, rest
    assert "provisioning of cluster intr was interrupted" in flat, rest
    assert "run `skyc apply` again to resume" in flat
    assert "`skyc destroy intr`" in flat
    assert "Traceback" not in rest
    [row] = aws.status("intr", "-v")
    assert row["status"] == "INIT"
    assert row["events"][-1]["kind"] == "interrupted"


def test_kill_mid_apply_then_rerun_converges(aws: AwsHome) -> None:
    aws.moto.reset()
    task = aws.task("crash", "aws/us-east-1")
    # SIGKILL while resources are being created: no chance to clean up at all.
    second = aws.popen("apply", str(task), "--yes")
    _wait_for(second, "✓ aws_")
    second.kill()
    second.wait(30)

    # Again: it must wait for the engine's state lock (the orphaned terraform may
    # still be applying), then converge on one cluster.
    out = aws.skyc("apply", str(task), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    [row] = aws.status("crash")
    assert row["status"] == "UP"
    instances = live_instances(aws.moto, "us-east-1")
    assert len(instances) == 1, instances
    owned = owned_ids(aws.home, "crash")
    assert instances[0]["InstanceId"] in owned
    assert leaks(aws.moto, owned) == {}

    out = aws.skyc("destroy", "crash", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert leaks(aws.moto, set()) == {}
