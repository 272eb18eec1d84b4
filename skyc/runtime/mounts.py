"""A job's buckets on its nodes: each node's agent copies or mounts them (``mounts
apply``), with the buckets' settings and credentials on its stdin, never on its command
line."""

from __future__ import annotations

import asyncio
import json

from skyc.errors import RuntimeAgentError, SkycError, StorageError
from skyc.runtime.remote import NodeAgent
from skyc.runtime.spec import JobSpec

BUCKET_EXIT = 3  # the agent's exit code when a bucket cannot be used as written
MOUNT_HINT = "install rclone and fuse3 on the node (Debian/Ubuntu: apt-get install rclone fuse3)"


def mounts_document(spec: JobSpec, node: str) -> bytes:
    """What ``mounts apply`` reads on one node's stdin."""
    return json.dumps({
        "node": node,
        "mounts": [m.model_dump() for m in spec.buckets],
        "env": {k: v.get_secret_value() for k, v in spec.bucket_env.items()},
    }).encode()


def _scrub(text: str, spec: JobSpec) -> str:
    for value in sorted((v.get_secret_value() for v in spec.bucket_env.values()), key=len,
                        reverse=True):
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


async def _apply_on(agent: NodeAgent, spec: JobSpec, job_id: int | None) -> None:
    args = "mounts apply" + (f" --job {job_id}" if job_id is not None else "")
    res = await agent.call(args, stdin=mounts_document(spec, agent.name))
    if res.exit_code == 0:
        return
    lines = [ln for ln in res.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    detail = _scrub(lines[-1] if lines else f"mounts apply exited {res.exit_code}", spec)
    message = f"node {agent.name}: {detail}"
    if res.exit_code == BUCKET_EXIT:
        raise StorageError(message, hint="check the bucket's name, path and credentials")
    raise RuntimeAgentError(message, hint=MOUNT_HINT if "install" in detail else None)


async def apply_mounts(agents: list[NodeAgent], spec: JobSpec,
                       job_id: int | None = None) -> None:
    """Copy or mount ``spec.buckets`` on every node, all at once; the first node's
    error (by rank) names the node, the bucket and the target. A mount a node has
    already (from an earlier job) is kept. With ``job_id``, that job's run on each node
    ends only once its writes through the mounts have reached the buckets, and fails
    when one of its mounts is gone by then."""
    if not spec.buckets:
        return
    results = await asyncio.gather(*(_apply_on(a, spec, job_id) for a in agents),
                                   return_exceptions=True)
    for result in results:
        if isinstance(result, SkycError):
            raise result
    for result in results:
        if isinstance(result, BaseException):
            raise result
