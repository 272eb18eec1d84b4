"""The ``format_version`` of each JSON document kind skyc prints, and its history.

Additions bump the minor; a field that changes type or meaning, or goes, bumps the
major. Each kind's version is a ``Literal`` type (a document model's ``format_version`` is
of that type) and the same as a string; kept apart from the models so that a
command stamps its version without importing them.
"""

from __future__ import annotations

from typing import Literal, get_args

# ``skyc plan --format json`` and ``skyc compile``'s plan.json: 1.1 added ``cost`` and
# ``policy``; 1.2 ``run_cost``; 2.0: for a pipeline whose steps run one after another,
# ``hourly_cost``, ``hourly_cost_total`` and ``cost.total.after`` are the peak (the
# dearest step), no longer the steps' sum; added ``peak_tasks``, ``objective``,
# ``cost.total.basis`` and ``at_once``. 2.1 added ``peak_accelerator_tasks`` (what GPU
# quotas count: a pipeline's largest step). 2.2 added ``notes.services`` (a service
# task's replicas and their cost range); 2.3 ``notes.buckets`` (the buckets the tasks
# mount: created, used again or read); 2.4 each bucket's ``region``, ``storage_price``
# (USD per GB-month of its store's standard class there) and its ``storage_price_basis``,
# and ``storage_gb`` / ``monthly_storage_cost`` for a bucket skyc creates whose size the
# task gives (``_metadata.skyc.reads``).
PlanVersion = Literal["2.4"]
PLAN: str = get_args(PlanVersion)[0]
# ``skyc status --format json``: 1.1 added ``orphans`` (cluster workspaces the state
# has no record of); 1.2 ``hourly_cost_total`` and ``hourly_cost_per_node`` per cluster;
# 1.3 ``owner`` per cluster and ``actor`` per event.
StatusVersion = Literal["1.4"]
STATUS: str = get_args(StatusVersion)[0]
# ``skyc queue --format json`` (the jobs of clusters): 2.0: ``id`` is an integer,
# ``nodes`` the count of nodes (``node_statuses`` each node's status), ``name`` null
# when the job has none, ``submitted_at`` epoch seconds in place of ``submitted``; 2.1
# added ``owner`` (who submitted the job).
QueueVersion = Literal["2.1"]
QUEUE: str = get_args(QueueVersion)[0]
# ``skyc jobs queue --format json`` (managed jobs): 1.1 added ``owner`` (who submitted
# the job).
JobsVersion = Literal["1.1"]
JOBS: str = get_args(JobsVersion)[0]
# The error document a ``--format json`` command prints on stdout instead of its own:
# 1.1 added ``document``, the kind of document the command prints when it succeeds.
ErrorVersion = Literal["1.1"]
ERROR: str = get_args(ErrorVersion)[0]
# ``skyc storage ls --format json``: the buckets skyc created.
StorageVersion = Literal["1.0"]
STORAGE: str = get_args(StorageVersion)[0]
