"""The node agent's modules (skyc/runtime/node_agent/) and the one file joined from them
that skyc ships to nodes (skyc/runtime/agent.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skyc.runtime import agent
from skyc.runtime.agent_bundle import AGENT_FILE, PACKAGE, build, bundle


def test_the_shipped_agent_is_joined_from_its_modules() -> None:
    assert Path(agent.__file__).resolve() == AGENT_FILE.resolve()
    assert build() == AGENT_FILE.read_text(encoding="utf-8"), (
        "skyc/runtime/agent.py is not current: run python -m skyc.runtime.agent_bundle")


def _isolated(script: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``python3 -I -S``: no site-packages, no PYTHONPATH, no user site, from a directory
    of its own: skyc cannot be imported, as on a node."""
    env = {"HOME": str(script.parent), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run([sys.executable, "-I", "-S", *args], input=stdin, env=env,
                          cwd=script.parent, capture_output=True, timeout=60, check=False)


def test_the_shipped_file_runs_where_skyc_cannot_be_imported(tmp_path: Path) -> None:
    script = tmp_path / "agent_1_abc.py"
    shutil.copyfile(AGENT_FILE, script)
    no_skyc = _isolated(script, "-c", "import skyc")
    assert no_skyc.returncode != 0 and b"No module named 'skyc'" in no_skyc.stderr
    version = _isolated(script, str(script), "version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.decode().strip() == agent.VERSION
    # as skyc starts it on a node: imported from ~/.skyc, main() called
    start = "import sys; sys.path[0] = sys.argv.pop(1); import agent_1_abc; " \
            "sys.exit(agent_1_abc.main())"
    facts = _isolated(script, "-c", start, str(tmp_path), "facts")
    assert facts.returncode == 0, facts.stderr
    assert json.loads(facts.stdout)["agent_version"] == agent.VERSION
    spec = agent.encode_run_spec('echo "ran $WHO"', {"WHO": "the job"}, "~")
    run = _isolated(script, "-c", start, str(tmp_path), "run", "1", "run", "--follow",
                    stdin=spec)
    assert run.stdout == b"ran the job\n"
    assert run.stderr.decode().endswith(f"{agent.EXIT_TRAILER} 0\n"), run.stderr
    for command in (("sync-manifest", "~/work"), ("autostop", "status"), ("status",)):
        out = _isolated(script, "-c", start, str(tmp_path), *command)
        assert out.returncode == 0 and json.loads(out.stdout) is not None, (command, out)
    usage = _isolated(script, str(script), "--help")
    assert usage.returncode == 2 and usage.stderr.startswith(b"skyc-agent: error: expected")


DOC = '"""A test agent."""'


def _module(body: str, imports: str = "") -> str:
    return f'"""A part."""\n\nfrom __future__ import annotations\n\n{imports}\n\n{body}'


def test_modules_are_joined_under_one_import_header_in_order() -> None:
    base = _module("GREETING = 'hello'\n\n\ndef stamp() -> float:\n    return time.time()\n",
                   "import time\n\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                   "    from typing import Any\n")
    cli = _module("# the command line\n\n\ndef main(who: Any) -> str:\n"
                  "    return f'{GREETING} {who} {stamp() > 0} {os.sep}'\n",
                  f"import os\n\nfrom {PACKAGE}.base import GREETING, stamp\n\n"
                  "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from typing import Any\n")
    text = bundle(DOC, [("base", base), ("cli", cli)])
    assert text.startswith(DOC + "\n")
    assert PACKAGE not in text and text.count("import os\n") == 1
    assert text.count("from typing import Any\n") == 1
    assert text.index("GREETING = 'hello'") < text.index("# the command line")
    names: dict[str, object] = {}
    exec(compile(text, "bundle.py", "exec"), names)
    assert names["main"]("node") == f"hello node True {os.sep}"  # type: ignore[operator]


@pytest.mark.parametrize(("sources", "message"), [
    ([("base", _module("X = 1\nimport os\n"))],
     "an import at the top after the code"),
    ([("base", _module("X = 1\n", "import json\n"))],
     "base line 5: import json where it is used"),
    ([("base", _module("X = 1\n", "from collections import deque\n"))],
     "import from collections where it is used"),
    ([("base", _module("def f() -> None:\n    from skyc.errors import SkycError\n"))],
     "imports skyc.errors, which a node does not have"),
    ([("base", _module("X = 1\n")), ("cli", _module("X = 2\n"))],
     f"{PACKAGE}.cli: defines X, which {PACKAGE}.base defines too"),
    ([("base", _module("Y = X\n", f"from {PACKAGE}.cli import X\n")),
      ("cli", _module("X = 1\n"))],
     "takes X from cli, which does not come before it in PARTS"),
    ([("base", _module("X = 1\n")),
      ("cli", _module("Y = Z\n", f"from {PACKAGE}.base import Z\n"))],
     "takes Z from base, which does not define it"),
])
def test_what_would_not_work_once_joined_is_refused(sources: list[tuple[str, str]],
                                                     message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bundle(DOC, sources)
