"""``--secret`` values reach the job's environment and no file, log or output of skyc."""

from __future__ import annotations

from tests.e2e.conftest import Skyc, files_containing

SECRET = "abc123"


def test_secret_reaches_the_job_env_and_nothing_on_disk_or_in_output(skyc: Skyc) -> None:
    skyc.write("secret.yaml", """\
name: secretive
num_nodes: 2
resources:
  infra: local
secrets:
  TOKEN: null
setup: echo "setup sees ${#TOKEN} chars"
run: echo "run sees ${#TOKEN} chars"
""")
    result = skyc.ok("apply", "secret.yaml", "--yes", "--secret", f"TOKEN={SECRET}")

    for prefix in ("(head, rank=0)", "(worker1, rank=1, ip=127.0.0.1)"):
        assert f"{prefix} setup sees {len(SECRET)} chars" in result.stdout, str(result)
        assert f"{prefix} run sees {len(SECRET)} chars" in result.stdout, str(result)
    assert SECRET not in result.stdout and SECRET not in result.stderr
    # The node dirs live in the cluster's workspace, under SKYC_HOME; the task
    # file itself names the secret without its value.
    node_dirs = list((skyc.workspace("secretive") / "nodes").iterdir())
    assert len(node_dirs) == 2 and all((d / ".skyc").is_dir() for d in node_dirs)
    assert files_containing(skyc.home, SECRET.encode()) == []
    assert files_containing(skyc.cwd, SECRET.encode()) == []

    # Replaying and listing jobs shows the lengths, never the value.
    for args in (("logs", "secretive", "1"), ("queue", "secretive"), ("status", "-v")):
        shown = skyc.ok(*args)
        assert SECRET not in shown.output, str(shown)

    skyc.ok("destroy", "secretive", "--yes")
    assert files_containing(skyc.home, SECRET.encode()) == []
