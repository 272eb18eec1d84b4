"""What the serve commands import at start-up: aiohttp (the load balancer's library)
only in the controller process, never in ``skyc serve status``; and no other command
loads the serve package (each run imports its own command's module only)."""

from __future__ import annotations

from pathlib import Path

from tests.test_lazy_startup import HEAVY, _loaded, _modules

SERVE_HEAVY = ("aiohttp", "skyc.serve.balancer", "skyc.serve.controller", "skyc.apply")


def test_serve_status_imports_no_load_balancer(tmp_path: Path) -> None:
    names = _modules(tmp_path, "serve", "status", "--format", "json")
    assert "skyc.serve.documents" in names   # it did read the services
    assert _loaded(names, SERVE_HEAVY) == []
    assert _loaded(names, HEAVY) == []


def test_other_commands_do_not_load_serve(tmp_path: Path) -> None:
    names = _modules(tmp_path, "status", "--format", "json")
    assert _loaded(names, ("skyc.serve", "skyc.cli.cmd_serve", "aiohttp")) == []
