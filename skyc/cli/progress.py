"""Rendering a launch's progress on the terminal (stages, engine events, failover, logs)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from skyc.cli.output import console, err_console

if TYPE_CHECKING:
    from skyc.apply.failover import Attempt
    from skyc.model.plan import Placement, Plan
    from skyc.stacks.engine import ProgressEvent


class ConsoleReporter:
    """Prints each stage, every engine resource event, failover attempts and job logs.

    Progress goes to stderr; job output goes to stdout, so ``skyc apply ... > out``
    captures exactly what the job printed (with node prefixes).
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def stage(self, name: str, detail: str = "") -> None:
        if not self.quiet:
            text = f"[bold cyan]==>[/] {escape(name)}"
            if detail:
                text += f" [dim]{escape(detail)}[/]"
            err_console.print(text)

    def plan(self, plan: Plan) -> None:
        if self.quiet:
            return
        for tp in plan.tasks:
            p = tp.placement
            acc = ", ".join(f"{k}:{v:g}" for k, v in sorted((p.accelerators or {}).items()))
            what = " ".join(x for x in (p.instance_type, acc and f"[{acc}]") if x)
            nodes = f" x{p.num_nodes}" if p.num_nodes > 1 else ""
            spot = " spot" if p.use_spot else ""
            shape = " ".join(x for x in (p.infra, what) if x)
            per_node = p.hourly_cost / max(p.num_nodes, 1)
            err_console.print(
                f"    {escape(tp.name)}: {escape(shape)}{nodes}{spot} at "
                f"${per_node:.4f}/hr/node, ${p.hourly_cost:.4f}/hr total"
            )

    def attempt(self, attempt: Attempt, next_placement: Placement | None) -> None:
        from skyc.apply.failover import describe_attempt

        if attempt.error is None:
            return
        text = f"{describe_attempt(attempt.placement)}: {attempt.error}"
        if next_placement is attempt.placement:
            text += " (transient) -> trying it again"
        elif next_placement is not None:
            where = describe_attempt(next_placement).split(" ", 1)[-1]
            text += f" -> trying {where}"
        err_console.print(f"[yellow]failover:[/] {escape(text)}")

    def engine_event(self, event: ProgressEvent | Any) -> None:
        if self.quiet:
            return
        kind = getattr(event, "kind", "")
        address = getattr(event, "address", None) or ""
        action = getattr(event, "action", None) or ""
        elapsed = getattr(event, "elapsed_s", None)
        took = f" ({elapsed:.0f}s)" if elapsed is not None else ""
        if kind == "complete":
            err_console.print(f"    [green]✓[/] {escape(address)} {escape(action)}{took}")
        elif kind == "errored":
            err_console.print(f"    [red]✗[/] {escape(address)} {escape(action)}{took}")
        elif kind == "start" and console.is_terminal:
            err_console.print(f"    [dim]… {escape(address)} {escape(action)}[/]")
        elif kind == "summary" and getattr(event, "message", ""):
            err_console.print(f"    [dim]{escape(event.message)}[/]")

    def log_line(self, node: str, line: str) -> None:
        sys.stdout.write(f"{node} {line}\n")
        sys.stdout.flush()

    def log_bytes(self, data: bytes) -> None:
        """Job output, already prefixed by node, as it came (the fast path)."""
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
