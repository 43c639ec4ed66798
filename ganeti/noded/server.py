"""The HTTP side of ganeti-noded: one resource built from the call table.

``PUT /<call>`` with a JSON list body.  Answers: 200 with ``[true, result]``
or ``[false, message]`` (the call ran and failed); 400 with
``[false, message]`` for a body that is not JSON (or nests deeper than
:data:`ganeti.core.serializer.MAX_JSON_DEPTH`) or arguments that do not
match the table; 404 for an unknown call; 405 for any method but PUT; 413
for a body over the limit.  A body over the limit is not buffered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, resource, server

from ganeti.core import rpcdefs
from ganeti.noded.backend.context import Handler, NodeContext, RPCFail

DEFAULT_MAX_BODY = 64 * 1024 * 1024  # a config.data upload is the largest body

log = Logger()


class NodeRequest(server.Request):
    """A request that stops buffering its body once it exceeds ``max_body``."""

    max_body = DEFAULT_MAX_BODY
    body_too_large = False
    _received = 0

    def handleContentChunk(self, data: bytes) -> None:
        self._received += len(data)
        if self._received > self.max_body:
            self.body_too_large = True
            return
        super().handleContentChunk(data)


def _reply(request: server.Request, code: int, success: bool, payload: Any) -> bytes:
    request.setResponseCode(code)
    request.setHeader(b"content-type", b"application/json")
    return rpcdefs.encode_reply(success, payload)


class NodeRpcResource(resource.Resource):
    """Dispatch ``/<call>`` to the backend handler declared for it."""

    isLeaf = True

    def __init__(self, ctx: NodeContext, handlers: dict[str, Handler],
                 calls: Mapping[str, rpcdefs.RpcCall] | None = None,
                 streams: Mapping[str, resource.IResource] | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        # path prefix -> resource that takes the request over (the console WebSocket)
        self.streams = dict(streams or {})
        table = rpcdefs.CALLS if calls is None else calls
        self.calls = {name: (table[name], h) for name, h in handlers.items() if name in table}

    def render(self, request: server.Request) -> bytes | int:  # type: ignore[override]
        path = (request.path or b"").decode("utf-8", "replace")
        for prefix, stream in self.streams.items():
            if path.startswith(prefix) and request.method == b"GET":
                return stream.render(request)  # type: ignore[no-any-return]
        entry = self.calls.get(path[1:]) if path.startswith("/") else None
        if entry is None:
            return _reply(request, http.NOT_FOUND, False, f"unknown RPC call {path!r}")
        if request.method != b"PUT":
            request.setHeader(b"allow", b"PUT")
            return _reply(request, http.NOT_ALLOWED, False,
                          f"method {request.method.decode('ascii', 'replace')} not allowed; "
                          "node RPC calls use PUT")
        if getattr(request, "body_too_large", False):
            limit = getattr(request, "max_body", DEFAULT_MAX_BODY)
            return _reply(request, http.REQUEST_ENTITY_TOO_LARGE, False,
                          f"request body exceeds the limit of {limit} bytes")
        call, handler = entry
        body = request.content.read() if request.content is not None else b""
        try:
            args = rpcdefs.decode_request(call, body)
        except rpcdefs.RpcArgumentError as err:
            return _reply(request, http.BAD_REQUEST, False, f"bad request: {err}")
        d = defer.maybeDeferred(handler, self.ctx, *args)
        d.addCallbacks(lambda result: self._finish(request, call.name, True, result),
                       lambda f: self._failed(request, call.name, f))
        # The master went away (it cancelled the call, or its timeout passed):
        # cancel the handler, which ends any child process it started
        # (ganeti/noded/procs.py).
        request.notifyFinish().addErrback(lambda _: d.cancel())
        return server.NOT_DONE_YET

    def _failed(self, request: server.Request, name: str, failure: Failure) -> None:
        if failure.check(defer.CancelledError):
            return
        if failure.check(RPCFail):
            message = str(failure.value)
        else:
            log.failure("RPC call {call} failed", failure, call=name)
            message = f"Error while executing backend function {name}: {failure.value}"
        self._finish(request, name, False, message)

    def _finish(self, request: server.Request, name: str, success: bool, payload: Any) -> None:
        if request._disconnected or request.finished:
            return
        try:
            body = _reply(request, http.OK, success, payload)
        except (TypeError, ValueError) as err:
            body = _reply(request, http.OK, False, f"{name}: result is not JSON: {err}")
        request.write(body)
        request.finish()


def make_site(ctx: NodeContext, handlers: dict[str, Handler],
              max_body: int = DEFAULT_MAX_BODY, reactor: Any = None,
              calls: Mapping[str, rpcdefs.RpcCall] | None = None,
              streams: Mapping[str, resource.IResource] | None = None) -> server.Site:
    """The noded site: the RPC resource, requests with a body limit, no access log.

    ``reactor`` runs the HTTP idle timeouts (default: ``ctx.clock``); ``calls``
    is the table (default :data:`ganeti.core.rpcdefs.CALLS`; tests add calls);
    ``streams`` maps path prefixes to resources served for GET (the serial
    console WebSocket, :mod:`ganeti.noded.console`).
    """
    site = server.Site(NodeRpcResource(ctx, handlers, calls, streams),
                       reactor=reactor if reactor is not None else ctx.clock)
    limit = max_body

    class SizedNodeRequest(NodeRequest):
        max_body = limit

    site.requestFactory = SizedNodeRequest
    site.displayTracebacks = False
    site.log = lambda request: None  # type: ignore[method-assign]
    return site
