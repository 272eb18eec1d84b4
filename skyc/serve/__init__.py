"""Services: a task's ``service:`` section served behind one endpoint (SkyServe's YAML).

    prepare(task_path, name, envs) -> Prepared / up(prepared) -> Service   (skyc serve up)
    skyc.serve.service.update(name, prepared, mode) -> version  (skyc serve update)
    down(name, progress)                                                  (skyc serve down)
    status_document(names)                                                (skyc serve status)
    skyc.serve.daemon.serve(name)     the controller process of one service
    skyc.state.service_claims         which service a cluster is a replica of

In this version replicas run on ``local``: each is a cluster of this machine, its
processes listening on their own port (``$SKYC_SERVE_PORT``). Each service's
controller and load balancer are one background process on this machine
(:mod:`skyc.serve.controller`); its state is in ``$SKYC_HOME/serve/services.db``,
so a controller started again carries on with the replicas as they are (and with an
update under way: each replica keeps its version, :mod:`skyc.serve.rollout` moves
them to the latest). With ``service: tls`` the endpoint is HTTPS. The load balancer
needs aiohttp, imported by the controller process only.
"""

from __future__ import annotations

from skyc.serve.documents import status_document
from skyc.serve.service import Prepared, down, prepare, up

__all__ = ["Prepared", "down", "prepare", "status_document", "up"]
