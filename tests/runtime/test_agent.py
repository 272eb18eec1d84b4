"""The node agent on its own, as skyc runs it on a node: a subprocess with HOME set to the
node's directory, on this Python and (when installed) on the oldest supported one, 3.8."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyc.runtime import agent


def _python38() -> list[str]:
    """A working Python 3.8 (the oldest a node may have), if this machine has one."""
    pyenv = Path("/root/.pyenv/versions")
    found = [shutil.which("python3.8"), *map(str, pyenv.glob("3.8*/bin/python3.8"))]
    check = "import sys; assert sys.version_info[:2] == (3, 8)"
    for exe in found:
        if exe and subprocess.run([exe, "-c", check], capture_output=True,
                                  check=False).returncode == 0:
            return [exe]
    return []


PYTHONS = [sys.executable, *_python38()]


def run_agent(python: str, home: Path, *args: str, stdin: str = "",
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-S", agent.__file__, *args], input=stdin, text=True,
                          capture_output=True, env={**os.environ, "HOME": str(home)},
                          timeout=timeout, check=False)


def trailer(out: subprocess.CompletedProcess[str]) -> int:
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(agent.EXIT_TRAILER), out.stderr
    return int(last.split()[1])


@pytest.mark.parametrize("python", PYTHONS)
def test_run_follow_env_from_stdin_and_exit_code(python: str, tmp_path: Path) -> None:
    payload = {"command": 'echo "value=$SECRET_VALUE"; echo to-stderr >&2; exit 4',
               "env": {"SECRET_VALUE": "kept-in-memory"}}
    out = run_agent(python, tmp_path, "run", "1", "run", "--follow", stdin=json.dumps(payload))
    assert trailer(out) == 4
    assert out.stdout.splitlines() == ["value=kept-in-memory", "to-stderr"]
    job = tmp_path / ".skyc" / "jobs" / "1"
    assert (job / "run.exit").read_text() == "4"
    assert b"kept-in-memory" not in b"".join(
        p.read_bytes() for p in job.iterdir() if p.name != "run.log")
    status = json.loads(run_agent(python, tmp_path, "status").stdout)
    assert status[0]["status"] == "FAILED" and status[0]["exit_code"] == 4


@pytest.mark.parametrize("python", PYTHONS)
def test_cancel_kills_the_whole_process_tree(python: str, tmp_path: Path) -> None:
    # the job starts a child and a grandchild; cancel must take them all
    payload = {"command": "(sleep 300 & echo $! > child.pid; wait) & sleep 300"}
    out = run_agent(python, tmp_path, "run", "7", "run", stdin=json.dumps(payload))
    assert trailer(out) == 0
    job = tmp_path / ".skyc" / "jobs" / "7"
    deadline = time.monotonic() + 10
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int((tmp_path / "child.pid").read_text())
    pgid = int((job / "run.pgid").read_text())
    assert os.getpgid(child) == pgid
    assert json.loads(run_agent(python, tmp_path, "status").stdout)[0]["status"] == "RUNNING"
    run_agent(python, tmp_path, "cancel", "7")
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    deadline = time.monotonic() + 10
    while not (job / "run.exit").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert int((job / "run.exit").read_text()) in (143, 137)
    assert json.loads(run_agent(python, tmp_path, "status").stdout)[0]["status"] == "CANCELLED"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_phase_starts_as_a_shell_would_start_it(python: str, tmp_path: Path) -> None:
    # The supervisor forks and execs bash itself (no subprocess): the phase must still
    # lead its own session, start in the spec's directory with stdin from /dev/null, get
    # the default SIGPIPE (Python ignores it; `yes | head` then ends yes by the signal,
    # 141, not by a write error) and inherit no descriptor but 0, 1 and 2 (and bash's
    # own 255 on its script).
    (tmp_path / "work").mkdir()
    command = "\n".join([
        'echo "sid=$(ps -o sid= -p $$ | tr -d \' \') pid=$$"',
        'echo "cwd=$PWD"',
        'echo "stdin=$(readlink /proc/$$/fd/0)"',
        'yes | head -n 1 >/dev/null; echo "yes=${PIPESTATUS[0]}"',
        'ls /proc/$$/fd > ../fds.txt',  # not in $(...): its pipe would be one more
    ])
    payload = {"command": command, "cwd": str(tmp_path / "work")}
    out = run_agent(python, tmp_path, "run", "3", "run", "--follow",
                    stdin=json.dumps(payload))
    assert trailer(out) == 0, out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.split("\n") if "=" in line)
    sid, pid = (part.split("=")[1] for part in out.stdout.splitlines()[0].split())
    assert sid == pid
    assert lines["cwd"] == str(tmp_path / "work")
    assert lines["stdin"] == "/dev/null"
    assert lines["yes"] == "141"
    fds = sorted(int(fd) for fd in (tmp_path / "fds.txt").read_text().split())
    assert fds == [0, 1, 2, 255]


@pytest.mark.parametrize("python", PYTHONS)
def test_a_phase_ended_by_a_signal_and_one_that_cannot_start(python: str,
                                                             tmp_path: Path) -> None:
    out = run_agent(python, tmp_path, "run", "4", "run", "--follow",
                    stdin=json.dumps({"command": "echo started; kill -TERM $$"}))
    assert trailer(out) == 143
    assert out.stdout == "started\n"
    # one environment value over the kernel's limit: execve fails with E2BIG, and the
    # phase fails with 126 and says why in its log
    payload = {"command": "echo never", "env": {"BIG": "x" * (agent.MAX_ARG_STRLEN + 1)}}
    out = run_agent(python, tmp_path, "run", "5", "run", "--follow", stdin=json.dumps(payload))
    assert trailer(out) == 126
    assert "skyc: cannot start run: [Errno 7] Argument list too long: 'bash'" in out.stdout
    assert "never" not in out.stdout
    status = json.loads(run_agent(python, tmp_path, "status", "--job", "5").stdout)
    assert status[0]["status"] == "FAILED" and status[0]["exit_code"] == 126


@pytest.mark.parametrize("python", PYTHONS)
def test_the_phase_s_bash_is_found_on_the_job_s_own_path(python: str, tmp_path: Path) -> None:
    # As execvpe looks: the job's PATH (a task may set it), in order, past a directory
    # named bash and a bash that cannot be run; and nowhere, a phase that cannot start.
    first, second, third = (tmp_path / d for d in ("dir", "plain", "wrapped"))
    (first / "bash").mkdir(parents=True)
    second.mkdir()
    (second / "bash").write_text("#!/bin/sh\necho not-executable\n")
    third.mkdir()
    (third / "bash").write_text('#!/bin/sh\necho "wrapped $*"\nexec /bin/bash "$@"\n')
    (third / "bash").chmod(0o755)
    path = os.pathsep.join(map(str, (first, second, third, "/usr/bin", "/bin")))
    spec = {"command": "echo ran", "env": {"PATH": path}}
    out = run_agent(python, tmp_path, "run", "1", "run", "--follow", stdin=json.dumps(spec))
    assert trailer(out) == 0, out.stderr
    script = tmp_path / ".skyc" / "jobs" / "1" / "run.sh"
    assert out.stdout == f"wrapped {script}\nran\n"
    spec = {"command": "echo never", "env": {"PATH": str(first)}}
    out = run_agent(python, tmp_path, "run", "2", "run", "--follow", stdin=json.dumps(spec))
    assert trailer(out) == 126
    assert out.stdout == "skyc: cannot start run: [Errno 2] No such file or directory: 'bash'\n"


_WITHOUT = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in sys.argv[1].split(","):
            raise ImportError("the agent imported " + name)
sys.meta_path.insert(0, Refuse())
sys.path.insert(0, sys.argv[2])
import agent
sys.exit(agent.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("python", PYTHONS)
def test_a_phase_starts_without_the_modules_only_other_commands_use(python: str,
                                                                    tmp_path: Path) -> None:
    # What keeps a phase's start short: a process that cannot import these (the
    # supervisor is a fork of it, so it cannot either) still runs the phase, with the
    # spec the client sends. The supervisor turns an ImportError into exit 255.
    refused = ("subprocess,argparse,shutil,tarfile,uuid,typing,json,re,enum,signal,"
               "contextlib,functools,collections,warnings")
    spec = agent.encode_run_spec('echo "ran $NAME $SKYC_JOB_MARK"', {"NAME": "one"}, "~")

    def run(job: str, refuse: str) -> str:
        out = subprocess.run(
            [python, "-S", "-c", _WITHOUT, refuse, str(Path(agent.__file__).parent),
             "run", job, "run", "--follow"], input=spec, capture_output=True,
            env={**os.environ, "HOME": str(tmp_path)}, timeout=60, check=False)
        assert out.stderr.decode().endswith(f"{agent.EXIT_TRAILER} 0\n"), out.stderr
        return out.stdout.decode()

    first = run("1", refused)  # the node's token is computed once, with hashlib
    saved = (tmp_path / ".skyc" / "token").read_text().split("\n")
    assert saved[0] == str((tmp_path / ".skyc").resolve()) and len(saved[1]) == 16
    assert first == f"ran one {saved[1]}/1\n"
    # and read back from ~/.skyc/token after that
    assert run("2", refused + ",hashlib") == f"ran one {saved[1]}/2\n"


@pytest.mark.parametrize("fields", [
    ("echo hi", {}, "~"),
    ("printf '%s\\n' \"$A\"\nexit 3", {"A": "multi\nline: 12:34", "EMPTY": "",
                                      "UNI": "\u00e9\u6f22", "ODD": "\udcff"}, "/tmp/x y"),
])
def test_the_run_spec_reads_back_what_the_client_wrote(
        fields: tuple[str, dict[str, str], str]) -> None:
    command, env, cwd = fields
    spec = agent.decode_run_spec(agent.encode_run_spec(command, env, cwd))
    assert spec == {"command": command, "env": env, "cwd": cwd}


@pytest.mark.parametrize(("data", "message"), [
    (b"", "0 fields"),
    (b"1:~", "1 fields"),
    (b"1:~4:echo1:A", "3 fields"),
    (b"1:~9:echo", "the field at byte 3 is cut short"),
    (b"1:~x:echo", "no field length at byte 3"),
    (b"1:~4echo", "no field length at byte 3"),
    (b'{"cwd": "~"}', "the JSON spec has no command"),
])
@pytest.mark.parametrize("python", PYTHONS)
def test_a_run_spec_it_cannot_read_is_refused(python: str, tmp_path: Path, data: bytes,
                                               message: str) -> None:
    with pytest.raises(ValueError, match=message):
        agent.decode_run_spec(data)
    out = subprocess.run([python, "-S", agent.__file__, "run", "1", "run", "--follow"],
                         input=data, capture_output=True, check=False, timeout=60,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr.decode().startswith(f"skyc-agent: error: run: stdin: {message}")
    assert not (tmp_path / ".skyc" / "jobs").exists()  # nothing was started


def test_setup_skipped_when_hash_recorded(tmp_path: Path) -> None:
    payload = json.dumps({"command": "echo setting-up"})
    first = run_agent(sys.executable, tmp_path, "run", "1", "setup", "--follow",
                      "--setup-hash", "abc", stdin=payload)
    assert first.stdout.strip() == "setting-up" and trailer(first) == 0
    again = run_agent(sys.executable, tmp_path, "run", "2", "setup", "--follow",
                      "--setup-hash", "abc", stdin=payload)
    assert "skipped" in again.stdout and trailer(again) == 0
    forced = run_agent(sys.executable, tmp_path, "run", "3", "setup", "--follow",
                       "--setup-hash", "abc", "--force", stdin=payload)
    assert forced.stdout.strip() == "setting-up"


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize(("argv", "message"), [
    ((), "expected a command: version, facts, run"),
    (("launch",), "expected a command"),
    (("run", "x", "run"), "job: 'x' is not a valid int"),
    (("run", "1", "teardown"), "phase: 'teardown' is not one of setup, run"),
    (("run", "1"), "run: expected JOB PHASE, got 1 argument(s)"),
    (("run", "1", "run", "--loud"), "run: unknown option --loud"),
    (("run", "1", "run", "--setup-hash"), "--setup-hash needs a value"),
    (("run", "1", "run", "--follow=yes"), "--follow takes no value"),
    (("tail", "1", "--phase=all", "extra"), "tail: expected JOB, got 2 argument(s)"),
])
def test_a_command_line_it_does_not_understand_is_refused(
        python: str, tmp_path: Path, argv: tuple[str, ...], message: str) -> None:
    out = run_agent(python, tmp_path, *argv)
    assert out.returncode == 2
    assert out.stderr.startswith("skyc-agent: error: ") and message in out.stderr, out.stderr
    assert not (tmp_path / ".skyc").exists()  # nothing was started or written


@pytest.mark.parametrize("python", PYTHONS)
def test_options_take_their_value_after_a_space_or_an_equals_sign(python: str,
                                                                  tmp_path: Path) -> None:
    payload = json.dumps({"command": "echo one"})
    assert trailer(run_agent(python, tmp_path, "run", "1", "run", "--follow",
                             "--setup-hash=abc", stdin=payload)) == 0
    for args in (("status", "--job", "1"), ("status", "--job=1")):
        jobs = json.loads(run_agent(python, tmp_path, *args).stdout)
        assert [j["job_id"] for j in jobs] == [1] and jobs[0]["status"] == "SUCCEEDED"
    tail = run_agent(python, tmp_path, "tail", "1", "--phase=run")
    assert tail.stdout == "one\n" and trailer(tail) == 0
    assert run_agent(python, tmp_path, "version").stdout.strip() == agent.VERSION
