"""HTTP errors raised by RAPI handlers, sent as Ganeti's ``{code, message, explain}``."""

from __future__ import annotations

from http import HTTPStatus


class HttpError(Exception):
    """An HTTP error response; ``message`` defaults to the status phrase."""

    code = 500

    def __init__(self, message: str | None = None, headers: dict[str, str] | None = None) -> None:
        status = HTTPStatus(self.code)
        self.message = message if message is not None else status.phrase
        self.explain = status.description
        self.headers = headers or {}
        super().__init__(self.message)

    def to_dict(self) -> dict[str, object]:
        """The JSON body Ganeti's RAPI client expects."""
        return {"code": self.code, "message": self.message, "explain": self.explain}


class HttpBadRequest(HttpError):
    code = 400


class HttpUnauthorized(HttpError):
    code = 401


class HttpForbidden(HttpError):
    code = 403


class HttpNotFound(HttpError):
    code = 404


class HttpMethodNotAllowed(HttpError):
    code = 405


class HttpRequestEntityTooLarge(HttpError):
    code = 413


class HttpUnsupportedMediaType(HttpError):
    code = 415


class HttpTooManyRequests(HttpError):
    code = 429


class HttpInternalServerError(HttpError):
    code = 500


class HttpNotImplemented(HttpError):
    code = 501


class HttpBadGateway(HttpError):
    code = 502


class HttpServiceUnavailable(HttpError):
    code = 503


class HttpGatewayTimeout(HttpError):
    code = 504
