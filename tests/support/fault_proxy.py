"""A fault-injecting HTTP proxy for the EC2 Query API, for tests.

It sits between an AWS client (boto3, the terraform AWS provider) and a moto
server on loopback. Requests that match a :class:`FaultRule` get a real EC2
error response (the XML body and HTTP status EC2 uses); everything else is
forwarded verbatim to the upstream server.

HTTP statuses follow the EC2 API reference ("Error codes for the Amazon EC2
API"): server errors such as ``InsufficientInstanceCapacity`` and
``InsufficientHostCapacity`` come with HTTP 500, ``AuthFailure`` with 401, the
other client errors with 400.

The moto server behind it comes from ``tests.support.moto_server.start_moto``.

A client's retry of a request the proxy has already forwarded and answered with a
2xx (the same ``amz-sdk-invocation-id``, at ``amz-sdk-request: attempt=2`` or later)
gets that answer again instead of reaching moto a second time: the client retried
because the first answer did not reach it, and a second ImportKeyPair,
AttachInternetGateway or CreateRoute would fail with EC2's Duplicate and
AlreadyAssociated errors (seen under load: a terraform apply failed so). Each replay
is listed in ``proxy.replayed`` and noted on stderr.
"""

from __future__ import annotations

import http.client
import re
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

# HTTP status EC2 returns with each error code; codes not listed get 400.
EC2_ERROR_STATUS: dict[str, int] = {
    "InsufficientInstanceCapacity": 500,
    "InsufficientHostCapacity": 500,
    "InsufficientAddressCapacity": 500,
    "InsufficientReservedInstanceCapacity": 500,
    "InternalError": 500,
    "Unavailable": 503,
    "AuthFailure": 401,
}

DEFAULT_MESSAGES: dict[str, str] = {
    "InsufficientInstanceCapacity": (
        "We currently do not have sufficient {instance_type} capacity in the Availability "
        "Zone you requested ({zone}). Our system will be working on provisioning additional "
        "capacity."
    ),
    "InsufficientHostCapacity": (
        "There is not enough capacity to fulfill your Dedicated Host request."
    ),
    "VcpuLimitExceeded": (
        "You have requested more vCPU capacity than your current vCPU limit of 0 allows for "
        "the instance bucket that the specified instance type belongs to."
    ),
    "Unsupported": (
        "Your requested instance type ({instance_type}) is not supported in your requested "
        "Availability Zone ({zone})."
    ),
    "InstanceLimitExceeded": (
        "You have requested more instances (1) than your current instance limit of 0 allows "
        "for the specified instance type."
    ),
    "MaxSpotInstanceCountExceeded": "Max spot instance count exceeded",
    "SpotMaxPriceTooLow": (
        "Your Spot request price of 0.001 is lower than the minimum required Spot request "
        "fulfillment price of 0.0104."
    ),
    "AuthFailure": "AWS was not able to validate the provided access credentials",
    "InvalidParameterValue": "Invalid value '{instance_type}' for InstanceType.",
}

_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
    "te", "trailers", "transfer-encoding", "upgrade",
}


@dataclass
class FaultRule:
    """Answer matching requests with an EC2 error. ``None`` fields match anything.

    ``times``: how many requests to fault before the rule stops matching
    (``None``: forever).

    ``limit``: a quota, as EC2 keeps it: the request is faulted only while the region
    already holds ``limit`` live resources of the kind it creates (counted on the
    upstream at each request, see :data:`LIVE_COUNTS`: deleting one frees room).
    """

    action: str = "RunInstances"
    code: str = "InsufficientInstanceCapacity"
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    message: str | None = None
    times: int | None = None
    status: int | None = None
    limit: int | None = None

    def http_status(self) -> int:
        return self.status or EC2_ERROR_STATUS.get(self.code, 400)

    def render_message(self, request: Ec2Request) -> str:
        template = self.message or DEFAULT_MESSAGES.get(self.code, self.code)
        return template.format(
            instance_type=request.instance_type or "", zone=request.zone or ""
        )

    def matches(self, request: Ec2Request) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        return (
            request.action == self.action
            and (self.region is None or request.region == self.region)
            and (self.zone is None or self.zone in (request.zone, request.zone_id))
            and (self.instance_type is None or request.instance_type == self.instance_type)
        )


# What a ``limit`` rule counts, by the action that creates one more.
LIVE_COUNTS: dict[str, Any] = {
    "CreateVpc": lambda ec2: sum(
        1 for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")),
    "AllocateAddress": lambda ec2: len(ec2.describe_addresses()["Addresses"]),
}


@dataclass(frozen=True)
class Ec2Request:
    """What the proxy understood of one EC2 Query API request."""

    action: str
    region: str | None
    zone: str | None
    instance_type: str | None
    params: dict[str, str] = field(default_factory=dict, repr=False)
    zone_id: str | None = None  # e.g. use1-az1, known when the zone came from a subnet


@dataclass(frozen=True)
class Hit:
    """One request that a rule answered with an error."""

    rule: FaultRule
    request: Ec2Request
    status: int


def error_body(code: str, message: str, request_id: str) -> bytes:
    """EC2's XML error document."""
    from xml.sax.saxutils import escape

    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{escape(code)}</Code>"
        f"<Message>{escape(message)}</Message></Error></Errors>"
        f"<RequestID>{request_id}</RequestID></Response>"
    ).encode()


def region_and_service(authorization: str | None) -> tuple[str | None, str | None]:
    """Region and service from a SigV4 ``Authorization`` header's credential scope."""
    match = _CREDENTIAL_SCOPE.search(authorization or "")
    if not match:
        return None, None
    return match.group(1).lower(), match.group(2)


class FaultProxy:
    """``with FaultProxy(upstream, rules) as proxy: ... proxy.url ...``.

    ``rules`` may be replaced or mutated while the proxy runs (guarded by
    ``proxy.lock``); ``proxy.hits`` lists every faulted request.
    """

    def __init__(self, upstream: str, rules: Iterable[FaultRule] = ()) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"upstream must be an http:// URL, got {upstream!r}")
        self.upstream = upstream
        self._upstream_host = parsed.hostname
        self._upstream_port = parsed.port or 80
        self.rules: list[FaultRule] = list(rules)
        self.hits: list[Hit] = []
        self.forwarded: list[Ec2Request | None] = []
        self.replayed: list[tuple[str, int, Ec2Request | None]] = []  # (id, attempt, ...)
        # invocation id -> (status, reason, headers, body) of its answered attempt
        self._answers: dict[str, tuple[int, str, list[tuple[str, str]], bytes]] = {}
        self.lock = threading.Lock()
        self._subnet_zones: dict[tuple[str | None, str], tuple[str | None, str | None]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def set_rules(self, rules: Iterable[FaultRule]) -> None:
        with self.lock:
            self.rules = list(rules)

    def start(self) -> FaultProxy:
        handler = _make_handler(self)
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # request handling ------------------------------------------------------

    def parse(self, headers: Any, body: bytes) -> Ec2Request | None:
        """Parse an EC2 Query API request; ``None`` for anything else."""
        region, service = region_and_service(headers.get("Authorization"))
        if service not in (None, "ec2"):
            return None
        ctype = headers.get("Content-Type") or ""
        if "x-www-form-urlencoded" not in ctype:
            return None
        text = body.decode("utf-8", "replace")
        params = dict(urllib.parse.parse_qsl(text, keep_blank_values=True))
        action = params.get("Action")
        if not action:
            return None
        # The AWS provider sends an empty Placement.AvailabilityZone with a subnet.
        zone = params.get("Placement.AvailabilityZone") or None
        zone_id = None
        subnet = params.get("SubnetId") or params.get("NetworkInterface.1.SubnetId")
        if zone is None and subnet:
            zone, zone_id = self._subnet_zone(region, subnet, headers)
        return Ec2Request(
            action=action,
            region=region,
            zone=zone,
            zone_id=zone_id,
            instance_type=params.get("InstanceType"),
            params=params,
        )

    def answered(self, headers: Any, request: Ec2Request | None
                 ) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
        """The answer already given to this retried request (see the module's doc)."""
        invocation = headers.get("amz-sdk-invocation-id")
        match = re.search(r"attempt=(\d+)", headers.get("amz-sdk-request") or "")
        if not invocation or not match or int(match.group(1)) < 2:
            return None
        with self.lock:
            answer = self._answers.get(invocation)
            if answer is not None:
                self.replayed.append((invocation, int(match.group(1)), request))
        if answer is not None:
            what = request.action if request else "request"
            print(f"fault proxy: {what} {invocation} attempt {match.group(1)} answered "
                  "again, not sent to moto twice", file=sys.stderr)
        return answer

    def remember(self, headers: Any, answer: tuple[int, str, list[tuple[str, str]], bytes]
                 ) -> None:
        invocation = headers.get("amz-sdk-invocation-id")
        if invocation and 200 <= answer[0] < 300:
            with self.lock:
                self._answers[invocation] = answer
                while len(self._answers) > 2000:  # the oldest first
                    del self._answers[next(iter(self._answers))]

    def live(self, action: str, region: str | None) -> int:
        """How many resources of the kind ``action`` creates the upstream holds in
        ``region`` (the user's: the default VPC is left out, as the quota tests count)."""
        import boto3

        client = boto3.client("ec2", region_name=region or "us-east-1",
                              endpoint_url=self.upstream, aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        return LIVE_COUNTS[action](client)

    def decide(self, request: Ec2Request | None) -> Hit | None:
        if request is None:
            return None
        with self.lock:
            for rule in self.rules:
                if rule.matches(request) and (
                        rule.limit is None
                        or self.live(rule.action, request.region) >= rule.limit):
                    if rule.times is not None:
                        rule.times -= 1
                    hit = Hit(rule=rule, request=request, status=rule.http_status())
                    self.hits.append(hit)
                    return hit
            self.forwarded.append(request)
        return None

    def _subnet_zone(
        self, region: str | None, subnet: str, headers: Any
    ) -> tuple[str | None, str | None]:
        """The subnet's zone name and zone ID (asked of the upstream, then cached)."""
        key = (region, subnet)
        if key in self._subnet_zones:
            return self._subnet_zones[key]
        import boto3

        client = boto3.client(
            "ec2",
            region_name=region or "us-east-1",
            endpoint_url=self.upstream,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        try:
            subnets = client.describe_subnets(SubnetIds=[subnet])["Subnets"]
            found = subnets[0] if subnets else {}
            zone = (found.get("AvailabilityZone"), found.get("AvailabilityZoneId"))
        except Exception:
            zone = (None, None)
        self._subnet_zones[key] = zone
        return zone


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: a terraform apply opens tens of connections
    # at once, and those the kernel drops wait a second or more for their retransmission.
    request_queue_size = 128


def _make_handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = proxy.parse(self.headers, body)
            answer = proxy.answered(self.headers, request)
            if answer is not None:
                self._reply(*answer)
                return
            hit = proxy.decide(request)
            if hit is not None:
                self._reply_error(hit)
            else:
                self._forward(body)

        def _reply(self, status: int, reason: str, headers: list[tuple[str, str]],
                   payload: bytes) -> None:
            self.send_response(status, reason)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _reply_error(self, hit: Hit) -> None:
            request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"skyc-fault/{hit.rule.code}"))
            payload = error_body(hit.rule.code, hit.rule.render_message(hit.request), request_id)
            self.send_response(hit.status)
            self.send_header("Content-Type", "text/xml;charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("x-amzn-RequestId", request_id)
            self.end_headers()
            self.wfile.write(payload)

        def _forward(self, body: bytes) -> None:
            conn = http.client.HTTPConnection(
                proxy._upstream_host, proxy._upstream_port, timeout=120
            )
            try:
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP
                }
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                kept = [(k, v) for k, v in resp.getheaders()
                        if k.lower() not in _HOP_BY_HOP
                        and k.lower() not in ("content-length", "date", "server")]
                answer = (resp.status, resp.reason, kept, payload)
                proxy.remember(self.headers, answer)
                self._reply(*answer)
            finally:
                conn.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    return Handler
