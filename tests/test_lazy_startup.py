"""What ``skyc plan --no-diff``, ``skyc validate`` and ``skyc exec`` import: none of the
heavy parts the command does not use (the IaC engines and SDKs, the SSH library, the
other stages of the pipeline). Not a timing test: ``benchmarks/bench_startup.py`` times
these commands.

Each command runs in its own Python process, which writes the names in
``sys.modules`` when it exits: unlike ``python -X importtime``, that also sees
modules loaded with ``importlib.import_module`` (the targets' and engines' registries).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_DRIVER = """
import atexit, os, sys
out = os.environ["SKYC_TEST_MODULES_OUT"]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["skyc", *sys.argv[1:]]
from skyc.cli import main
main()
"""

# Never on these paths: engines and cloud SDKs, the SSH library, Kubernetes' client, the
# ILP solver and the template engine. Only these and skyc's own modules are named here:
# which standard-library modules a dependency imports is that dependency's business (and
# changes between its releases); how long start-up takes is bench_startup.py's.
HEAVY = ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_kubernetes",
         "asyncssh", "boto3", "botocore", "kubernetes", "google", "azure", "pulp", "jinja2",
         "psycopg", "aiohttp")
# The parts of each target that lower, classify and read outputs: compile and apply only.
TARGET_PARTS = tuple(f"skyc.compiler.{t}.{m}"
                     for t in ("aws", "azure", "gcp", "kubernetes", "local", "ssh")
                     for m in ("lowering", "errors", "outputs", "images"))
# Stages of apply that plan, validate and exec do not run.
STAGES = ("skyc.apply.launch", "skyc.apply.failover", "skyc.apply.provision", "skyc.apply.power",
          "skyc.stacks.engine", "skyc.model.stack", "skyc.stacks.terraform",
          "skyc.stacks.pulumi_engine", "skyc.stacks.pulumi_program", "skyc.jobs",
          "skyc.apply.reconcile")


def _modules(tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKYC_HOME": str(tmp_path / "home"),
           "HOME": str(tmp_path), "SKYC_TEST_MODULES_OUT": str(out)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)  # as a user's shell has it
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = set(out.read_text().split())
    assert "skyc.cli" in names and "typer" in names  # the list is the whole process's
    return names


def _loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.fixture()
def task(tmp_path: Path) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text("name: train\nresources:\n  accelerators: A100:8\nrun: python train.py\n")
    return path


def test_plan_no_diff_imports_only_planning(tmp_path: Path, task: Path) -> None:
    names = _modules(tmp_path, "plan", str(task), "--no-diff", "--format", "json")
    assert {"skyc.optimizer.core", "skyc.catalog.table"} <= names  # it did plan
    assert _loaded(names, HEAVY) == []
    assert _loaded(names, TARGET_PARTS) == []
    assert _loaded(names, STAGES) == []
    # A plan that is neither saved nor diffed reads no plan file; with no policy file it
    # builds no policy models.
    assert _loaded(names, ("skyc.review.planfile", "skyc.review.policy")) == []
    # Only the command that runs is imported, not every command's module.
    assert _loaded(names, ("skyc.cli.cmd_apply", "skyc.cli.cmd_task",
                           "skyc.cli.cmd_status", "skyc.cli.cmd_managed")) == []


def test_validate_imports_neither_optimizer_nor_compiler(tmp_path: Path, task: Path) -> None:
    names = _modules(tmp_path, "validate", str(task))
    assert "skyc.task.spec" in names  # it did validate
    assert _loaded(names, HEAVY) == []
    assert _loaded(names, ("skyc.compiler", "skyc.optimizer", "skyc.catalog", "skyc.stacks",
                           "skyc.settings.config")) == []
    assert _loaded(names, STAGES) == []


def test_command_table_names_each_commands_module() -> None:
    """``skyc.cli.COMMAND_MODULES`` (how a run finds its one module) is what the
    modules register: every command, in the module that registers it."""
    import importlib

    import typer

    import skyc.cli as cli

    registered: dict[str, str] = {}
    for module in cli._modules():
        app = typer.Typer()
        importlib.import_module(f"skyc.cli.{module}").register(app)
        names = [cli._command_name(c) for c in app.registered_commands]
        names += [str(g.name) for g in app.registered_groups]
        registered.update(dict.fromkeys(names, module))
    assert registered == cli.COMMAND_MODULES


def test_a_stale_command_table_still_finds_the_command(tmp_path: Path) -> None:
    code = ("import sys; import skyc.cli as c; c.COMMAND_MODULES['validate'] = 'cmd_gpus'; "
            "c._register_for(sys.argv[1:]); print('validate' in c._registered_names())")
    out = subprocess.run([sys.executable, "-c", code, "validate", "x.yaml"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_exec_imports_no_optimizer_catalog_or_engine(tmp_path: Path) -> None:
    from skyc.model.nodes import ClusterInfo, Node

    home = tmp_path / "home"
    workspace = home / "clusters" / "c1"
    workspace.mkdir(parents=True)
    info = ClusterInfo(name="c1", cloud="local", workspace=str(workspace), nodes=[
        Node(name="head", rank=0, transport="local", ip="127.0.0.1",
             node_dir=str(tmp_path / "node0"))])
    (workspace / "cluster.json").write_text(info.model_dump_json())
    task = tmp_path / "task.yaml"
    task.write_text("run: echo started\n")
    names = _modules(tmp_path, "exec", "c1", str(task))
    assert "skyc.runtime.run" in names  # it did run the job
    assert _loaded(names, HEAVY) == []
    assert _loaded(names, TARGET_PARTS) == []
    assert _loaded(names, STAGES) == []  # its job is recorded without the launch stages
    assert _loaded(names, ("skyc.optimizer.core", "skyc.optimizer.chain", "skyc.catalog")) == []
    # The state, locks, logs and workspace need skyc's directory, not the config's models.
    assert _loaded(names, ("skyc.settings.config", "skyc.compiler")) == []


def test_no_config_file_builds_no_config_validator(tmp_path: Path) -> None:
    """Without a config file the defaults are made without validating them (no
    validator is built); they equal a validated empty config."""
    code = (
        "import sys; from pathlib import Path\n"
        "from skyc.settings.config import SkycConfig, load_config\n"
        "from skyc.compiler.kubernetes.config import KubernetesConfig\n"
        "config = load_config(Path(sys.argv[1]))\n"
        "print(SkycConfig.__pydantic_complete__, KubernetesConfig.__pydantic_complete__)\n"
        "print(config.model_dump() == SkycConfig.model_validate({}).model_dump())\n"
        "print(config.kubernetes.pending_timeout, config.aws.profile, config.ssh_pools)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none.yaml")], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["False False", "True", "600 None {}"]


def test_the_compiler_package_still_exports_the_record_types() -> None:
    from skyc.compiler import Capabilities, Target, target
    from skyc.compiler.base import Capabilities as BaseCapabilities

    assert Capabilities is BaseCapabilities
    assert isinstance(target("azure"), Target) and target("gcp").capabilities.spot


@pytest.mark.parametrize("setting", ["1", ""])
def test_pydantic_plugins_stay_pydantic_s_own_unless_disabled(setting: str) -> None:
    """The CLI's stand-in plugin loader: only when plugins are disabled, it finds none,
    and anything else asked of it comes from pydantic's real loader."""
    code = ("import os, sys; os.environ['PYDANTIC_DISABLE_PLUGINS'] = sys.argv[1]\n"
            "import skyc.cli as cli; cli._no_plugin_search()\n"
            "from pydantic import BaseModel\n"
            "class Model(BaseModel):\n"
            "    x: int\n"
            "assert Model(x=1).x == 1\n"  # pydantic asked its loader for plugins
            "print('importlib.metadata' in sys.modules)\n"
            "from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP, get_plugins\n"
            "print(PYDANTIC_ENTRY_POINT_GROUP, list(get_plugins()))\n")
    out = subprocess.run([sys.executable, "-c", code, setting], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(setting != "1"), "pydantic", "[]"]


_TYPER_APP = """
import json, sys
from pathlib import Path
import typer
from typer import _adapters
if sys.argv[1] == "with-skyc":
    import skyc.cli  # noqa: F401
built = []
real = _adapters.try_build_adapter
def counting(annotation, parameter_info):
    built.append(annotation)
    return real(annotation, parameter_info)
_adapters.try_build_adapter = counting
app = typer.Typer()
@app.command()
def cmd(name: str = typer.Argument(...), count: int | None = typer.Option(None),
        tags: list[str] = typer.Option([]), more: list[str] | None = typer.Option(None),
        label: str | None = typer.Option(None), flag: bool = False,
        checked: str | None = typer.Option(None, callback=lambda v: f"cb:{v}"),
        path: Path | None = typer.Option(None), paths: list[Path] = typer.Option([]),
        there: Path | None = typer.Option(None, exists=True, dir_okay=False),
        real: Path | None = typer.Option(None, resolve_path=True)) -> None:
    shown = [str(p) if isinstance(p, Path) else p for p in (path, there, real)]
    kinds = [type(p).__name__ for p in (path, there, real, *paths)]
    print(json.dumps([[name, count, tags, more, label, flag, checked,
                       [str(p) for p in paths], *shown, kinds], len(built)]))
app(sys.argv[2:])
"""


@pytest.mark.parametrize("argv", [
    ["x", "--count", "3", "--tags", "a", "--more", "b", "--label", "l", "--checked", "c"],
    ["x"],
    [],
    ["x", "--count", "many"],
    ["x", "--tags", " spaced ", "--tags", "", "--label", "é"],
    ["x", "--path", "a//b/", "--paths", "p1", "--paths", "./p2", "--there", "pyproject.toml",
     "--real", "skyc/../skyc"],
    ["x", "--there", "no-such-file"],
    ["x", "--there", "skyc"],
])
def test_an_absent_option_gets_its_value_without_a_converter(argv: list[str]) -> None:
    """skyc's CLI has typer settle an absent value (None), a str, a Path and a list of
    either without building a pydantic converter: every parameter gets the value plain
    typer gives it, and a missing argument, a bad value or a path that breaks typer's
    rules (exists, dir_okay) is refused as typer refuses it."""
    def run(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _TYPER_APP, mode, *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"})

    plain, skyc = run("plain"), run("with-skyc")
    # skyc writes a required argument on the usage line as click does (name, not
    # {name}); the refusal itself is typer's own.
    assert (skyc.returncode, skyc.stderr) == (
        plain.returncode, plain.stderr.replace("[OPTIONS] {name}", "[OPTIONS] name"))
    if plain.returncode:
        assert ("Missing argument 'name'" if not argv else "Invalid value for '--"
                ) in plain.stderr
        return
    (values, built_plain), (same, built_skyc) = (json.loads(plain.stdout),
                                                 json.loads(skyc.stdout))
    assert same == values
    # a converter only for the int given; plain typer builds one for every parameter
    assert built_skyc == (values[1] is not None) < built_plain
