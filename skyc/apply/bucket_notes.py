"""What a plan says of its tasks' buckets: each one created, used again (skyc created it
before) or read as it is, where it is mounted and how, and what a GB kept in it costs a
month (:mod:`skyc.catalog.storage_prices`). Read from the task files, the placements and
the state: nothing is asked of a store at plan time.

A bucket's region: the one skyc creates it in (:func:`skyc.apply.buckets.bucket_region`),
the one the state recorded for a bucket skyc created before, else not known (a bucket
read as it is), which is priced at its store's default. A monthly estimate is given for
a bucket skyc creates only, and only when the task says how much it reads from it
(``_metadata.skyc.reads``): no size is guessed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from skyc.catalog.storage_prices import StoragePrice, price_text, storage_price
from skyc.errors import StorageError
from skyc.settings.config import SkycConfig


@dataclass(frozen=True)
class BucketNote:
    task: str
    cluster: str
    target: str
    url: str
    store: str
    mode: str
    action: Literal["create", "reuse", "read"]
    persistent: bool
    region: str | None = None  # where the bucket is, or is created; None: not known
    price: StoragePrice | None = None  # per GB-month there; None: not in the catalog
    size_gb: float | None = None  # what the task reads from a bucket skyc creates

    @property
    def monthly_cost(self) -> float | None:
        """USD a month for ``size_gb`` at ``price``; None without both."""
        if self.price is None or self.size_gb is None:
            return None
        return self.price.monthly(self.size_gb)

    def document(self) -> dict[str, Any]:
        price = self.price
        return {"task": self.task, "cluster": self.cluster, "target": self.target,
                "url": self.url, "store": self.store, "mode": self.mode,
                "action": self.action, "persistent": self.persistent,
                "region": self.region,
                "storage_price": price.usd_per_gb_month if price else None,
                "storage_price_basis": price.basis if price else None,
                "storage_gb": self.size_gb, "monthly_storage_cost": self.monthly_cost}

    def line(self) -> str:
        what = {"create": "created", "reuse": "used again (skyc created it)",
                "read": "read as it is"}[self.action]
        if self.action != "read":
            what += ", persistent" if self.persistent else f", destroyed with {self.cluster}"
        line = (f"bucket {self.url}: {what}; mounted at {self.target} ({self.mode}) on "
                f"cluster {self.cluster}")
        return line + (f"; {self.price_words()}" if self.price is not None else "")

    def price_words(self) -> str:
        """``storage $0.023/GB-month (S3 Standard, us-east-1)``, with the monthly
        estimate when the size is known."""
        price = self.price
        if price is None:
            return ""
        where = {"region": price.region or "",
                 "default": f"the store's default: region {self.region} not listed"
                 if self.region else "the store's default: region not known",
                 "global": "one price everywhere"}[price.basis]
        words = (f"storage {price_text(price.usd_per_gb_month)}/GB-month ({price.title}, "
                 f"{where})")
        monthly = self.monthly_cost
        if monthly is not None and self.size_gb is not None:
            words += (f", about ${monthly:,.2f}/month for the {self.size_gb:,.6g} GB the task "
                      "reads from it")
        return words


def bucket_notes(tasks: Sequence[Any], clouds: Sequence[str], clusters: Sequence[str],
                 config: SkycConfig,
                 regions: Sequence[str | None] | None = None) -> list[BucketNote]:
    """One note per bucket mount of each task, placed on ``clouds[i]`` (in
    ``regions[i]``, None: not known) as ``clusters[i]``. A task whose buckets cannot be
    used as written gets none (apply refuses it)."""
    from skyc.apply.buckets import bucket_region, task_uses
    from skyc.apply.data_sources import task_reads
    from skyc.state.database import StateDB
    from skyc.state.storage import get_storage

    placed_in = list(regions) if regions is not None else [None] * len(tasks)
    notes = []
    with StateDB() as db:
        for task, cloud, cluster, placed in zip(tasks, clouds, clusters, placed_in,
                                                strict=True):
            try:
                uses = task_uses(task, cloud, config)
            except StorageError:
                continue
            reads = task_reads(task)
            for use in uses:
                record = get_storage(db, use.bucket)
                known = (record.region if record is not None and record.store == use.store
                         else None)
                action: Literal["create", "reuse", "read"] = "read"
                region = known
                if use.created:
                    action = "reuse" if record is not None else "create"
                    region = known or bucket_region(use, cloud, placed)
                size = _read_gb(reads, use.store, use.bucket) if action == "create" else None
                notes.append(BucketNote(task.name or "task", cluster, use.target, use.url,
                                        use.store, use.mode, action, use.persistent,
                                        region, storage_price(use.store, region), size))
    return notes


def _read_gb(reads: Mapping[str, float], store: str, bucket: str) -> float | None:
    """The GB the task says it reads from ``bucket`` (every prefix of it named); None
    when it names none."""
    from skyc.task.buckets import bucket_of_url

    sizes = [gb for url, gb in reads.items() if bucket_of_url(url) == (store, bucket)]
    return sum(sizes) if sizes else None
