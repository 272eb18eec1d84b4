"""``skyc validate`` and ``skyc schema`` as a user runs them: real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.task.fixtures import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SECRET = "s3cr3t-cli-value"


def skyc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, timeout=60,
        cwd=ROOT, env=env,
    )


def test_examples_are_valid() -> None:
    assert len(EXAMPLES) >= 5
    out = skyc("validate", *map(str, EXAMPLES))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": valid (") == len(EXAMPLES)
    assert "Traceback" not in out.stderr


def test_invalid_file_exit_1_and_every_error_printed() -> None:
    bad = FIXTURES / "invalid" / "misspelt-keys.yaml"
    good = FIXTURES / "valid" / "minimal.yaml"
    out = skyc("validate", str(good), str(bad))
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 5
    assert f"error: {bad}:4: resources.acelerators: unknown field 'acelerators' " \
        "(did you mean 'accelerators'?)" in out.stderr
    assert f"{good}: valid (1 task)" in out.stdout


def test_missing_and_malformed_files() -> None:
    out = skyc("validate", "no/such/file.yaml", str(FIXTURES / "invalid" / "malformed.yaml"))
    assert out.returncode == 1
    assert "error: no/such/file.yaml: file not found" in out.stderr
    assert "malformed.yaml:4: invalid YAML" in out.stderr
    assert "Traceback" not in out.stderr


def test_warnings_and_flags() -> None:
    path = str(FIXTURES / "valid" / "null-values.yaml")
    out = skyc("validate", path)
    assert out.returncode == 0
    assert "warning:" in out.stderr and "--env NEEDS_VALUE=VALUE" in out.stderr
    out = skyc("validate", path, "--env", "NEEDS_VALUE=1", "--secret", f"API_KEY={SECRET}")
    assert out.returncode == 0
    assert "warning" not in out.stderr
    bad = skyc("validate", path, "--env", "bad-name=1")
    assert bad.returncode == 1 and "invalid name" in bad.stderr and "Traceback" not in bad.stderr


def test_json_output_is_normalized_without_secrets() -> None:
    path = str(FIXTURES / "valid" / "null-values.yaml")
    out = skyc("validate", path, "--format", "json", "--secret", f"API_KEY={SECRET}",
               "--env", "NEEDS_VALUE=x")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data[0]["path"] == path
    assert data[0]["tasks"][0]["secrets"] == {"API_KEY": None}
    assert data[0]["tasks"][0]["envs"]["NEEDS_VALUE"] == "x"
    assert SECRET not in out.stdout + out.stderr


def test_schema() -> None:
    out = skyc("schema", "task")
    assert out.returncode == 0
    schema = json.loads(out.stdout)
    assert "resources" in schema["properties"]
    assert schema["$defs"]["Task"]["additionalProperties"] is False
    resources = schema["$defs"]["Resources"]["properties"]
    assert {"accelerators", "infra", "any_of", "gpus", "cloud"} <= set(resources)


def test_control_characters_in_a_file_are_escaped_in_problems(tmp_path: Path) -> None:
    path = tmp_path / "esc.yaml"
    path.write_text('"bad\\e[2J\\e]0;title\\a": 1\nname: "x\\e[31m"\nenvs: 3\n')
    out = skyc("validate", str(path))
    assert out.returncode == 1
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr, repr(out.stderr)
    assert "unknown field 'bad\\x1b[2J\\x1b]0;title\\x07'" in out.stderr, out.stderr


def test_a_name_that_reads_like_an_emoji_code_is_shown_as_written(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text('name: "x:thumbs_up:y"\nresources:\n  accelerators: A100:8\nrun: t\n')
    out = skyc("plan", str(path), "--no-diff")
    assert out.returncode == 0, out.stderr
    assert "task x:thumbs_up:y" in out.stdout and "plan: x:thumbs_up:y:" in out.stdout
    assert "\N{THUMBS UP SIGN}" not in out.stdout + out.stderr


def test_output_helpers_escape_controls_and_keep_newlines() -> None:
    from skyc.cli.output import safe

    assert safe("a\x1b[2Jb\r\x00\x9b\u202e\nc\td") == "a\\x1b[2Jb\\x0d\\x00\\x9b\\u202e\nc\td"
    assert safe("plain 日本") == "plain 日本"
