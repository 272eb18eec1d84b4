"""A service's controller: the replicas' lifecycle, autoscaling and the endpoint.

One asyncio loop runs the load balancer (:mod:`skyc.serve.balancer`) and, every
``SKYC_SERVE_POLL_S``, a round that probes the replicas, lets the autoscaler decide
and launches or removes replicas to meet its target. Provisioning, starting, checking
and tearing down a replica are blocking calls (:mod:`skyc.serve.replicas`) run in
threads, one at a time per replica, so the endpoint keeps answering meanwhile.

A replica's life::

    PROVISIONING -> STARTING --probe passes--> READY <--probe passes-- NOT_READY
         |             |                         |  probe fails (or a request is   ^
         |             |                         +--refused by it) ----------------+
         v             v                                                          |
    FAILED_PROVISION   FAILED (setup failed, or its run ended),     FAILED (its run ended),
                       FAILED_INITIAL_DELAY (not ready in time)      FAILED_PROBING (failing
                                                                     for SKYC_SERVE_FAIL_AFTER_S)

A failed replica's log is kept, its cluster torn down, and another launched in its
place; after ``MAX_LAUNCH_FAILURES`` launches in a row that never became ready the
service is FAILED and launches stop (the task is broken: retrying will not mend it).
Once a launch has failed, no more launches are in flight than may still fail.
Scaling down takes the replicas out of rotation, lets their requests finish, then
tears them down.

``skyc serve update`` records a new version of the service in the store; the next
round takes it up (its task, its config) and moves the replicas to it, rolling or
blue-green (:mod:`skyc.serve.rollout`): every replica launched from then on is of the
new version, and the old ones are retired as the new ones become ready.

Everything is written through to the store, so a controller started again (after a
crash, or a reboot of this machine's processes) adopts the replicas as they are:
ready ones serve again at once, none is launched again, and an update under way
goes on where it was.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import TextIO

import aiohttp

from skyc.errors import SkycError
from skyc.serve import knobs, replicas, rollout
from skyc.serve.autoscaler import Autoscaler
from skyc.serve.balancer import Balancer, Upstream
from skyc.serve.names import HOST, REPLICA_PORTS, endpoint, free_port, replica_cluster
from skyc.serve.policies import policy
from skyc.serve.readiness import ProbeResult, probe
from skyc.serve.records import Replica, Service
from skyc.serve.spec import Readiness, ServiceConfig, tls_context
from skyc.serve.store import ServeStore

PROBED = ("STARTING", "READY", "NOT_READY")
# A replica whose port stays closed (a server still loading its model) has its run
# checked on its node at most this often: each check starts the node's agent.
CHECK_EVERY_S = 10.0


class Controller:
    def __init__(self, service: Service, store: ServeStore, log: TextIO) -> None:
        self.name = service.name
        self.service = service
        self.store = store
        self.log = log
        self.config = ServiceConfig.load(service.config)
        self.work: replicas.ReplicaTask | None = None
        self.replicas = {r.id: r for r in store.replicas(service.name)}
        self.autoscaler = Autoscaler(self.config.scaling, service.target, knobs.qps_window_s())
        self.balancer = Balancer(policy(self.config.policy), self.on_failure, service.name)
        self.busy: dict[int, asyncio.Task[None]] = {}   # replica id -> its work in flight
        self.fail_since: dict[int, float] = {}
        self.checked: dict[int, float] = {}   # replica id -> no run check before then
        # replica id -> (forget it once torn down, not before this time)
        self.to_tear: dict[int, tuple[bool, float]] = {}
        self.launch_failures = 0
        self.stopping = False
        self.version = service.version
        self.tls: ssl.SSLContext | None = None
        self.old_readiness: dict[int, Readiness] = {}   # older versions' probes

    def say(self, text: str) -> None:
        self.log.write(f"{time.strftime('%H:%M:%S')} {self.name}: {text}\n")
        self.log.flush()

    # -- the loop -------------------------------------------------------------

    async def run(self) -> None:
        self.work = await asyncio.to_thread(replicas.load_replica_task, self.service)
        tls = self.config.tls
        self.tls = None if tls is None else tls_context(tls)
        await self.balancer.start(HOST, self.service.port, self.tls)
        self.say(f"endpoint {endpoint(self.service.port, tls is not None)} "
                 f"({self.config.policy}), version {self.version}")
        self.adopt()
        async with aiohttp.ClientSession() as session:
            while (current := self.store.service(self.name)) is not None \
                    and not current.down_requested:
                try:
                    await self.round(session, current)
                except Exception as exc:  # one bad round must not end the service
                    self.say(f"round failed: {type(exc).__name__}: {exc}\n"
                             f"{traceback.format_exc()}")
                await asyncio.sleep(knobs.poll_s())
        await self.shut_down()

    async def round(self, session: aiohttp.ClientSession, current: Service) -> None:
        if current.version != self.version:
            await self.take_version(current)
        await self.probe_all(session)
        self.autoscale()
        self.reconcile()
        self.publish()

    async def take_version(self, current: Service) -> None:
        """``serve update`` recorded a new version: launch its task from now on, with
        its config; the replicas move to it as its update mode says."""
        work = await asyncio.to_thread(replicas.load_replica_task, current)
        config = ServiceConfig.load(current.config)
        scaling = config.scaling
        target = min(scaling.max_replicas, max(scaling.min_replicas, self.autoscaler.target))
        self.work, self.config, self.version = work, config, current.version
        self.service.config, self.service.task_file = current.config, current.task_file
        self.service.update_mode = current.update_mode
        self.autoscaler = Autoscaler(scaling, target, knobs.qps_window_s())
        self.balancer.policy = policy(config.policy)
        self.launch_failures = 0
        self.store.update_service(self.name, target=target)
        self.say(f"version {self.version}: {current.update_mode or rollout.DEFAULT_MODE} "
                 f"update to {scaling.describe()}, {config.policy} load balancing")
        if self.tls is not None and config.tls is not None:
            try:   # new connections get the version's key and certificate, once they load
                tls_context(config.tls)
                tls_context(config.tls, self.tls)
            except OSError as exc:
                self.say(f"version {self.version}: kept the endpoint's certificate: {exc}")

    def adopt(self) -> None:
        """Take the replicas a controller before this one left, as they are."""
        for r in list(self.replicas.values()):
            interrupted = r.status == "PROVISIONING" or (r.status == "STARTING"
                                                         and r.job_id is None)
            if interrupted or r.status == "SHUTTING_DOWN":
                self.say(f"replica {r.id}: its launch or removal was interrupted; removing it")
                self.set(r, "SHUTTING_DOWN")
                self.to_tear[r.id] = (True, 0.0)
            elif not r.live and replicas.cluster_left(r.cluster):
                self.to_tear[r.id] = (False, 0.0)
        self.publish()

    # -- probing --------------------------------------------------------------

    async def probe_all(self, session: aiohttp.ClientSession) -> None:
        due = [r for r in self.replicas.values() if r.status in PROBED and r.id not in self.busy]
        results = await asyncio.gather(*(
            probe(session, endpoint(r.port), self.readiness(r.version)) for r in due))
        now = time.time()
        for r, result in zip(due, results, strict=True):
            if r.status in PROBED:   # not failed meanwhile by a request's refusal
                self.judge(r, result, now)

    def readiness(self, version: int) -> Readiness:
        """How a replica of ``version`` is probed: as its own version says (an update
        may change the probe, which the old replicas may not pass)."""
        if version == self.version:
            return self.config.readiness
        if version not in self.old_readiness:
            doc = self.store.version_config(self.name, version)
            self.old_readiness[version] = (self.config.readiness if doc is None
                                           else ServiceConfig.load(doc).readiness)
        return self.old_readiness[version]

    def judge(self, r: Replica, result: ProbeResult, now: float) -> None:
        if result.ok:
            self.fail_since.pop(r.id, None)
            if r.status != "READY":
                self.launch_failures = 0
                r.ready_at = r.ready_at or now
                self.set(r, "READY", None)
            return
        if r.status == "STARTING":
            delay = self.readiness(r.version).initial_delay_s
            if now - (r.started_at or now) >= delay:
                self.fail(r, "FAILED_INITIAL_DELAY", f"not ready within initial_delay_seconds "
                          f"({delay:g} s): {result.why}", launch=True)
            elif result.refused:
                self.check_run(r, launch=True)
            return
        if r.status == "READY":
            self.not_ready(r, result.why, now)
        if now - self.fail_since.get(r.id, now) >= knobs.fail_after_s():
            self.fail(r, "FAILED_PROBING", f"failing its readiness probe for "
                      f"{now - self.fail_since[r.id]:.0f} s: {result.why}")
        elif result.refused:
            self.check_run(r)

    def not_ready(self, r: Replica, why: str, now: float) -> None:
        self.fail_since.setdefault(r.id, now)
        self.balancer.drop(r.id)
        self.set(r, "NOT_READY", why)

    def on_failure(self, replica: int, why: str) -> None:
        """A request found the replica's port closed: out of rotation now."""
        r = self.replicas.get(replica)
        if r is not None and r.status == "READY":
            self.not_ready(r, f"a request was refused: {why}", time.time())
            self.check_run(r)

    def check_run(self, r: Replica, *, launch: bool = False) -> None:
        """Ask the replica's node whether its run still goes (at most every
        ``CHECK_EVERY_S`` while its port stays closed); fail it when not."""
        now = time.monotonic()
        if r.id in self.busy or r.job_id is None or now < self.checked.get(r.id, 0.0):
            return
        self.checked[r.id] = now + CHECK_EVERY_S
        cluster, job_id = r.cluster, r.job_id

        async def check() -> None:
            ended = await asyncio.to_thread(replicas.run_ended, cluster, job_id)
            if ended is not None and r.status in PROBED:
                self.fail(r, "FAILED", f"its run ended: {ended}", launch=launch)

        self.spawn(r.id, check())

    # -- replicas -------------------------------------------------------------

    def set(self, r: Replica, status: str, why: str | None = None) -> None:
        if status != r.status or why != r.why:
            self.say(f"replica {r.id}: {status}" + (f" ({why})" if why else ""))
        r.status, r.why = status, why
        self.store.put_replica(r)

    def fail(self, r: Replica, status: str, why: str, *, launch: bool = False) -> None:
        self.balancer.drop(r.id)
        self.fail_since.pop(r.id, None)
        self.set(r, status, why)
        self.to_tear[r.id] = (False, 0.0)
        if launch:
            self.launch_failures += 1

    def spawn(self, replica: int, work: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except Exception as exc:
                self.say(f"replica {replica}: {type(exc).__name__}: {exc}\n"
                         f"{traceback.format_exc()}")
                self.busy.pop(replica, None)
                self.crashed(replica, _why(exc))
            finally:
                self.busy.pop(replica, None)

        self.busy[replica] = asyncio.ensure_future(guarded())

    def crashed(self, replica: int, why: str) -> None:
        """Work on a replica raised: a launch fails the replica; a teardown is tried
        again later."""
        r = self.replicas.get(replica)
        if r is None:
            return
        if r.status == "PROVISIONING" or (r.status == "STARTING" and r.job_id is None):
            self.fail(r, "FAILED_PROVISION" if r.status == "PROVISIONING" else "FAILED",
                      why, launch=True)
        elif not r.live and replicas.cluster_left(r.cluster):
            self.to_tear[r.id] = (r.status == "SHUTTING_DOWN", time.time() + knobs.retry_tear_s())

    def new_replica(self) -> None:
        rid = self.store.take_replica_id(self.name)
        cluster = replica_cluster(self.name, rid)
        if replicas.cluster_left(cluster):  # a cluster of that name exists: not ours
            self.say(f"replica {rid}: cluster {cluster} exists already; skipping the id")
            return
        taken = {x.port for x in self.store.all_replicas()}
        taken |= {s.port for s in self.store.services()}
        port = free_port(REPLICA_PORTS, taken)
        r = Replica(self.name, rid, cluster, port, "PROVISIONING", time.time(),
                    version=self.version)
        self.replicas[rid] = r
        self.set(r, "PROVISIONING", f"version {self.version}, port {port}")
        self.spawn(rid, self.launch(r))

    async def launch(self, r: Replica) -> None:
        assert self.work is not None
        work = self.work
        info = await asyncio.to_thread(replicas.provision, work, self.name, r.id, r.cluster)
        if self.stopping:
            return
        self.set(r, "STARTING", None)
        result = await asyncio.to_thread(replicas.start, info, work, self.name, r.id, r.port)
        r.job_id, r.started_at = result.job_id, time.time()
        if result.status != "RUNNING":
            self.fail(r, "FAILED", result.describe_failure(), launch=True)
        else:
            self.set(r, "STARTING", f"job {result.job_id}")

    async def tear(self, r: Replica, forget: bool) -> None:
        """Keep a failed replica's log, then destroy its cluster; a replica scaled down
        (``forget``) gives its requests in flight up to ``DRAIN_S`` first."""
        deadline = time.monotonic() + knobs.DRAIN_S
        while forget and self.balancer.inflight[r.id] and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if not forget:
            r.log_tail = await asyncio.to_thread(replicas.keep_log, self.name, r.id,
                                                 r.cluster, r.job_id)
            self.store.put_replica(r)
        await asyncio.to_thread(replicas.teardown, self.name, r.id, r.cluster)
        if forget:
            self.replicas.pop(r.id, None)
            self.store.remove_replica(self.name, r.id)
            self.say(f"replica {r.id}: removed")

    # -- scaling --------------------------------------------------------------

    def autoscale(self) -> None:
        qps = self.balancer.qps(self.autoscaler.window_s)
        decision = self.autoscaler.decide(time.time(), qps)
        if decision is not None:
            self.say(f"autoscaler: {decision.before} -> {decision.after}: {decision.reason}")
            self.store.add_decision(self.name, decision)
            self.store.update_service(self.name, target=decision.after)

    @property
    def want(self) -> int:
        return self.autoscaler.target + self.config.scaling.overprovision

    def reconcile(self) -> None:
        now = time.time()
        for rid, (forget, after) in list(self.to_tear.items()):
            if rid not in self.busy and rid in self.replicas and now >= after:
                del self.to_tear[rid]
                self.spawn(rid, self.tear(self.replicas[rid], forget))
        live = [r for r in self.replicas.values() if r.live]
        moves = rollout.plan(live, self.version, self.want, self.service.update_mode,
                             self.busy)
        missing = moves.launch
        if self.launch_failures:   # launches fail: no more in flight than may fail
            pending = sum(r.status in rollout.PENDING for r in live)
            missing = min(missing, knobs.MAX_LAUNCH_FAILURES - self.launch_failures - pending)
        for _ in range(missing):
            self.new_replica()
        for r in moves.surplus:
            self.retire(r, "scaled down")
        for r in moves.retire:
            self.retire(r, f"replaced by version {self.version}")
        if not moves.updating and self.service.update_mode is not None:
            self.service.update_mode = None
            if self.store.finish_update(self.name, self.version):
                self.say(f"version {self.version}: update done")

    def retire(self, r: Replica, why: str) -> None:
        self.balancer.drop(r.id)
        self.set(r, "SHUTTING_DOWN", why)
        self.to_tear[r.id] = (True, 0.0)

    def publish(self) -> None:
        ready = [r for r in self.replicas.values() if r.status == "READY"]
        serving = rollout.serving(ready, self.version, self.want, self.service.update_mode)
        self.balancer.set_upstreams([Upstream(r.id, endpoint(r.port)) for r in serving])
        status = self.status(len(ready))
        if status != self.service.status:
            self.say(f"service: {status}")
            self.service.status = status
            failure = None if status != "FAILED" else (
                f"{self.launch_failures} launches in a row never became ready; see "
                f"`skyc serve status {self.name}` and the replicas' logs")
            self.store.update_service(self.name, status=status, failure=failure)

    def status(self, ready: int) -> str:
        if ready:
            return "READY"
        if self.launch_failures >= knobs.MAX_LAUNCH_FAILURES:
            return "FAILED"
        if self.autoscaler.target == 0 and not any(r.live for r in self.replicas.values()):
            return "NO_REPLICA"
        return "REPLICA_INIT"

    # -- the end --------------------------------------------------------------

    async def shut_down(self) -> None:
        """``serve down``: close the endpoint, let launches in flight end, tear every
        replica down, forget the service."""
        self.stopping = True
        self.say("taking the service down")
        await self.balancer.stop()
        await asyncio.gather(*self.busy.values(), return_exceptions=True)
        for r in self.replicas.values():
            if r.live:
                self.set(r, "SHUTTING_DOWN", "the service is taken down")
        await asyncio.gather(*(
            _quietly(self.say, asyncio.to_thread(replicas.teardown, self.name, r.id, r.cluster))
            for r in self.replicas.values()))
        left = [r.cluster for r in self.replicas.values() if replicas.cluster_left(r.cluster)]
        if left:
            self.say(f"clusters left: {', '.join(left)}")
            return
        self.store.remove_service(self.name)
        self.say("down")


async def _quietly(say: Callable[[str], None], work: Awaitable[None]) -> None:
    try:
        await work
    except Exception as exc:
        say(f"teardown failed: {type(exc).__name__}: {exc}")


def _why(exc: Exception) -> str:
    if isinstance(exc, SkycError):
        return exc.message + (f" ({exc.hint})" if exc.hint else "")
    return f"{type(exc).__name__}: {exc}"

