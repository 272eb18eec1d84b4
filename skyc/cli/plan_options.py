"""The options of ``skyc plan``, as typer declares them, and the command's help."""

from __future__ import annotations

import typer

from skyc.cli.options import INFRA_HELP

PLAN_HELP = """Pick where each task runs: the cheapest (or fastest) feasible offer.

CPU-only tasks that give no cpus, memory or instance type get 4+ vCPUs from
each cloud's general-purpose family (m6i, n2-standard, Standard_D<N>s_v5).
Ordered resources: an earlier entry wins over a cheaper later one. Ties break
on cloud, region, zone, instance type. Pipelines add the cost of the data a
task passes on (its outputs, GB) when the next task runs elsewhere.

Prices: $/hr/node for one node, $/hr total for all of a task's nodes. With no
cloud enabled (no credentials), the plan covers every cloud skyc can provision
and says it is plan-only; with some enabled, one line says when a disabled
cloud would be cheaper. Clouds skyc cannot provision are skipped, and said so.

Then, per cluster, the engine's diff against the cluster's current state: all
creates for a new cluster, only what changes for an existing one (a cluster
that is up keeps its region, as in `skyc apply`). When the diff cannot be
computed (no terraform, providers missing) the placement is still printed,
with a warning per stack. --format json adds "stacks": per cluster its
resource_changes with terraform-style actions (["create"], ["update"],
["delete"], ["no-op"], ["read"], and ["delete", "create"] for a replacement).
"""

_OPTIMIZE_HELP = (
    "cost: cheapest hourly price x num_nodes (spot price when use_spot). "
    "time: fastest by the time model, hours = 1 / (relative accelerator throughput "
    "(H100 = 1) x count x num_nodes); CPU-only nodes all count alike, so cost breaks ties. "
    "When every task has _metadata.skyc.duration: the whole run (cost: $/hr total x its "
    "hours there; time: those hours), data transfer included."
)

_DIFF_HELP = (
    "Show each stack's engine diff against the cluster's current state (the default; "
    "runs `terraform init/plan` in $SKYC_HOME/clusters/<name>/, changing no resources). "
    "--no-diff: placement only."
)

TASKS = typer.Argument(
    ..., metavar="TASK",
    help="Task YAML (one task or a pipeline); several, or a directory of them, make "
    "one plan of independent tasks.")
INFRA = typer.Option([], "--infra", metavar="INFRA", help=INFRA_HELP)
CATALOG = typer.Option(None, "--catalog", metavar="DIR",
                            help="Catalog dir (<cloud>/vms.csv).")
OPTIMIZE = typer.Option("cost", "--optimize", metavar="cost|time", help=_OPTIMIZE_HELP)
FORMAT = typer.Option("table", "--format", metavar="table|json|markdown",
                           help="table, json, or markdown (a pull-request comment).")
ENV = typer.Option([], "--env", metavar="KEY[=VAL]",
                        help="KEY=VAL (or KEY, from this environment).")
SECRET = typer.Option([], "--secret", metavar="KEY[=VAL]",
                           help="KEY=VAL, or KEY from this environment.")
CLUSTER = typer.Option(
    None, "-c", "--cluster", metavar="CLUSTER",
    help="Cluster name for a one-task file (default: the task's).")
DIFF = typer.Option(True, "--diff/--no-diff", help=_DIFF_HELP)
ENGINE = typer.Option(
    None, "--engine", metavar="terraform|pulumi",
    help="terraform or pulumi (default: the config's, else the target's first).")
OUT = typer.Option(
    None, "-o", "--out", metavar="FILE",
    help="Save the plan (tasks without secret values, placements, stacks, engine "
    "plans, input digests) for `skyc apply FILE`.")
POLICY = typer.Option(
    None, "--policy", metavar="FILE",
    help="Policy file (default: skyc-policy.yaml beside the task, else the config's "
    "policy:). A violation makes plan exit 1.")
DETAILED_EXITCODE = typer.Option(
    False, "--detailed-exitcode",
    help="Exit 0 when no stack changes, 2 when some do, 1 on an error or a policy "
    "violation (usage errors exit 2 too: check stderr).")
HOURS = typer.Option(
    None, "--hours", metavar="N", min=0,
    help="A one-shot run's length: cost adds its total for N hours.")
