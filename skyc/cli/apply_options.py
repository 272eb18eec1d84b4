"""The options of ``skyc apply`` (and ``skyc launch``), as typer declares them."""

from __future__ import annotations

import typer

from skyc.cli import params
from skyc.cli.options import INFRA_HELP

TASK = typer.Argument(
    ..., metavar="TASK|COMMAND",
    help="Task YAML, a plan file saved by `skyc plan -o FILE`, or a command in quotes "
    "('python train.py', run as the task's run section).")
CLUSTER = typer.Option(
    None, "-c", "--cluster", metavar="CLUSTER",
    help="Cluster name (default: the task's name)."
)
YES = typer.Option(False, "-y", "--yes", help="Apply without asking.")
INFRA = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP)
CATALOG = typer.Option(None, "--catalog", metavar="DIR",
                       help="Catalog dir (<cloud>/vms.csv).")
OPTIMIZE = typer.Option("cost", "--optimize", metavar="cost|time",
                        help="cost (cheapest) or time (fastest).")
ENV = typer.Option([], "--env", metavar="KEY[=VAL]",
                   help="KEY=VAL (or KEY, from this environment).")
SECRET = typer.Option([], "--secret", metavar="KEY[=VAL]",
                      help="KEY=VAL, or KEY from this environment.")
DOWN = typer.Option(False, "--down", help="Destroy the cluster after the job "
                    "(with -i: once it has been idle that long).")
IDLE_MINUTES = typer.Option(
    None, "-i", "--idle-minutes-to-autostop", metavar="MINUTES", parser=params.IDLE_MINUTES,
    help="Autostop: stop (with --down: tear down) the cluster after N idle minutes; "
    "decided on the head node.")
DETACH = typer.Option(False, "-d", "--detach",
                      help="Return once the job has started.")
SETUP = typer.Option(False, "--setup", help="Run setup again even if unchanged.")
RETRY_UNTIL_UP = typer.Option(
    False, "--retry-until-up", help="Keep cycling through placements (with backoff)."
)
MAX_ATTEMPTS = typer.Option(
    8, "--max-attempts", metavar="N", parser=params.ATTEMPTS,
    help="Failover attempt limit (1-1000)."
)
TIMEOUT = typer.Option(
    3600.0, "--timeout", metavar="SECONDS", parser=params.TIMEOUT,
    help="Provisioning time limit, seconds (more than 0).",
)
LOCK_TIMEOUT = typer.Option(
    600.0, "--lock-timeout", metavar="SECONDS", parser=params.LOCK_TIMEOUT,
    help="Seconds to wait for another skyc on this cluster (0: do not wait).",
)
ANY_REGION = typer.Option(
    False, "--any-region", help="Let an existing cluster move out of its region."
)
ALLOW_RESHAPE = typer.Option(
    False, "--allow-reshape", help="Remove nodes of an existing cluster even while "
    "jobs run there (those jobs are stopped first).")
ENGINE = typer.Option(
    None, "--engine", metavar="terraform|pulumi",
    help="terraform or pulumi (default: the config's, else the "
    "target's first).")
POLICY = typer.Option(
    None, "--policy", metavar="FILE",
    help="Policy file (default: skyc-policy.yaml beside the task, else the config's "
    "policy:); checked before every attempt.")
ALLOW_POLICY_VIOLATIONS = typer.Option(
    False, "--allow-policy-violations",
    help="Apply even when the policy is violated (recorded in the cluster's events).")
