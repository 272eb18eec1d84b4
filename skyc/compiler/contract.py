"""What a target is: every fact of one cloud (or kind of machine), and the parts that
act on them.

A target is a folder (``skyc/compiler/<name>/`` for the built-in ones; any package for
one registered with :func:`skyc.compiler.register`) whose ``target`` module holds
``TARGET``, an instance of a :class:`Target` subclass. The record says what the target
can do (:class:`Capabilities`) and which engines apply its stacks; its methods hand out
its parts, each a module of the folder that mypy checks against the part's protocol:

- required: ``lowering`` (placement -> Stack), ``errors`` (engine diagnostics ->
  capacity, quota, credential errors), ``outputs`` (stack outputs -> nodes),
  ``credentials`` (cheap local checks);
- optional, each declared by every target (``None`` where it has none): ``power``
  (which refreshed resources are stopped nodes; required by ``stop_start``),
  ``own_offers`` (offers learned elsewhere than a price catalog), ``ssh_proxy`` (a
  proxy command the config routes SSH through).

This module is light on purpose: a target's record is read by every plan, its parts
only when a stack is built or applied.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from skyc.catalog.offer import Offer
    from skyc.compiler.base import BuildRequest
    from skyc.errors import ProvisionError
    from skyc.model.diagnostics import Diagnostic
    from skyc.model.nodes import Node
    from skyc.model.plan import Placement
    from skyc.model.stack import Stack
    from skyc.settings.config import SkycConfig


class Capabilities(NamedTuple):
    """What a target can do. The compiler and failover read this, never a cloud name.
    A record declared in code, so a named tuple: an unknown field is a TypeError and
    mypy checks the types (a pydantic model's validator would be built on every plan)."""

    cloud: str
    spot: bool = False
    multi_node: bool = True
    placement_groups: bool = False
    open_ports: bool = False
    # Nodes can be stopped (disks kept) and started by re-applying the stack; the
    # target's ``power`` part reads stopped nodes back.
    stop_start: bool = False
    disk_gb_month: float = 0.0         # USD per GB-month a stopped node's disk still costs
    custom_images: bool = False
    creates_resources: bool = True     # False: the nodes exist already (ssh pools)
    needs_providers: bool = False      # the stack needs provider plugins (terraform init)
    # The most nodes one cluster may have on this target. Checked before anything
    # runs, so a typo such as ``num_nodes: 100000`` never reaches the engine.
    max_nodes: int = 1
    # How the nodes of a managed-jobs controller cluster on this target get credentials
    # to provision this target's clusters: "instance-role" (a role attached to the
    # nodes, scoped to what skyc's stacks need). None: skyc gives them none yet.
    controller_credentials: str | None = None
    # The nodes mount a task's volumes (Kubernetes PersistentVolumeClaims).
    volumes: bool = False


class CredentialCheck(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def hint(self) -> str | None: ...


class Lowering(Protocol):
    def build(self, request: BuildRequest) -> Stack: ...

    def workspace_values(self, stack: Stack, workspace: Path) -> dict[str, Any]: ...


class Outputs(Protocol):
    def nodes(
        self, cluster: str, outputs: dict[str, Any], *, config: SkycConfig, workspace: Path,
    ) -> list[Node]: ...


class Errors(Protocol):
    def classify(
        self, diagnostics: Sequence[Diagnostic], placement: Placement | None
    ) -> ProvisionError | None: ...


class CredentialsModule(Protocol):
    def credentials(
        self, env: Mapping[str, str], home: Path, config: SkycConfig | None = None
    ) -> CredentialCheck: ...


class Power(Protocol):
    """Reads a refreshed resource: one of the target's nodes, stopped (True) or running
    (False), or not a node (None)."""

    def stopped(self, resource_type: str, values: dict[str, Any]) -> bool | None: ...


class OwnOffers(Protocol):
    """The offers of a target whose offers come from somewhere other than a price
    catalog (a cluster's nodes, the config). ``EMPTY_HINT`` says how to get some when
    there are none."""

    EMPTY_HINT: str

    def offers_for(self, config: SkycConfig) -> list[Offer]: ...

    def describe(self, config: SkycConfig, env: Mapping[str, str], home: Path
                 ) -> list[str]: ...


class SshProxy(Protocol):
    def ssh_proxy_command(self, config: SkycConfig, region: str | None) -> str | None: ...


class Storage(Protocol):
    """The store a target's nodes reach natively (``STORE``: s3, gcs, ...) and the stack
    of a bucket skyc creates there (``use``: a :class:`skyc.storage.BucketUse`), in its
    region when the task is on this target, else in ``DEFAULT_REGION``. ``account``: the
    account that holds a bucket skyc creates, where the store has accounts ("" else)."""

    STORE: str
    DEFAULT_REGION: str
    # Other stores whose buckets this target's stacks create (their API is its
    # provider's: R2 through AWS's); their region is their own.
    ALSO_CREATES: tuple[str, ...]

    def account(self, bucket: str) -> str: ...

    def bucket_stack(self, use: Any, region: str, labels: dict[str, str],
                     config: SkycConfig) -> Stack: ...


class Target(ABC):
    """A target's record and its parts. Subclasses give every method: a part a target
    does not have is an explicit ``None``, never a missing file or attribute.

    ``bought``: the target is bought from a provider (it needs credentials, and its
    offers come from a price catalog or its own ``own_offers``; `skyc check` lists it);
    False for machines skyc is given (this machine, SSH pools).
    """

    def __init__(self, name: str, capabilities: Capabilities, engines: tuple[str, ...],
                 *, bought: bool = True) -> None:
        self.name = name
        self.capabilities = capabilities
        self.engines = engines
        self.bought = bought

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, engines={self.engines!r})"

    @abstractmethod
    def lowering(self) -> Lowering: ...

    @abstractmethod
    def errors(self) -> Errors: ...

    @abstractmethod
    def outputs(self) -> Outputs: ...

    @abstractmethod
    def credentials(self) -> CredentialsModule: ...

    @abstractmethod
    def power(self) -> Power | None: ...

    @abstractmethod
    def own_offers(self) -> OwnOffers | None: ...

    @abstractmethod
    def ssh_proxy(self) -> SshProxy | None: ...

    @abstractmethod
    def storage(self) -> Storage | None: ...

    def problems(self, *, parts: bool = True) -> list[str]:
        """Where the record and its parts disagree: a record whose capabilities name
        another target, an empty engine list and (``parts``: this loads the parts
        that carry a capability out) a capability declared without its part."""
        out = []
        if self.capabilities.cloud != self.name:
            out.append(f"capabilities.cloud is {self.capabilities.cloud!r}, not {self.name!r}")
        if not self.engines:
            out.append("no engine applies its stacks")
        if parts and self.capabilities.stop_start and self.power() is None:
            out.append("declares stop_start but has no power part to read stopped nodes")
        return out
