"""ganeti-rapi: Ganeti's remote API v2 over HTTPS, and the web dashboard."""

__all__ = [
    "accesslog",
    "auth",
    "coalesce",
    "errors",
    "limits",
    "openapi",
    "output",
    "resources",
    "routes",
    "routing",
    "server",
    "service",
    "staticfiles",
    "tap",
    "web",
]
