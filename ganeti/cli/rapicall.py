"""One blocking RAPI request over HTTPS, for tools and the virtual-cluster demo.

The RAPI certificate (``DATA_DIR/rapi.pem``) is self-signed for the cluster
name, so it is its own trust anchor: the server is verified against it, and
the host name checked is the cluster name (the address connected to may be
any of the master's).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from typing import Any

from ganeti.core import serializer


def read_credentials(path: str) -> tuple[str, str]:
    """``(user, password)`` from a ``user password`` line (the vcluster's rapi-credentials)."""
    with open(path, encoding="utf-8") as f:
        fields = f.read().split()
    if len(fields) != 2:
        raise ValueError(f"{path} does not hold 'user password'")
    return fields[0], fields[1]


def tls_context(cafile: str) -> ssl.SSLContext:
    """A client context that trusts only the certificate in ``cafile``."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def request(address: str, port: int, method: str, path: str, *,
            context: ssl.SSLContext | None, server_hostname: str | None = None,
            credentials: tuple[str, str] | None = None, body: Any = None,
            timeout: float = 10.0) -> tuple[int, Any]:
    """Send one request; returns (status, decoded JSON body or None).

    ``context`` None means plain HTTP.  ``server_hostname`` is the name the
    certificate must carry (default: ``address``).
    """
    sock = socket.create_connection((address, port), timeout=timeout)
    try:
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname=server_hostname or address)
        conn = http.client.HTTPConnection(address, port, timeout=timeout)
        conn.sock = sock
        headers = {"Accept": "application/json"}
        data = None
        if credentials is not None:
            token = base64.b64encode(":".join(credentials).encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            value = serializer.load_json(raw) if raw else None
        except ValueError:
            value = raw.decode("utf-8", "replace")
        return response.status, value
    finally:
        sock.close()
