# SPDX-License-Identifier: MIT
"""The exceptions of the yuxi-sandbox client.

Every error answer of the service has one shape (docs/api.md,
"Responses"): ``{"error": {"code", "message", "request_id"}}`` with an HTTP
status. :func:`error_from_answer` turns it into an :class:`APIError` of the
class that matches the status (``NotFoundError`` for 404, ...), carrying
the API's ``code``, the ``status``, the ``request_id`` (also in the
``X-Request-Id`` header) and, when the answer had one, ``retry_after``.
Three codes of sessions have classes of their own, subclasses of their
status's class (so ``except NotFoundError`` still catches
:class:`SessionNotFoundError`): ``session_not_found``, ``session_busy``,
``session_limit``.
Answers nginx makes itself (an HTML ``403`` for a file it may not read, a
``502``) have no code: ``code`` is ``""`` and ``message`` says
``HTTP <status>``.

A request that got no usable answer at all (connection refused, TLS,
timeout, a broken stream) raises :class:`TransportError`. Arguments the
client can tell are wrong raise ``TypeError`` or ``ValueError`` before
any request is sent.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "YuxiSandboxError", "TransportError", "APIError", "StreamError",
    "BadRequestError", "AuthenticationError", "PermissionDeniedError",
    "NotFoundError", "MethodNotAllowedError", "ConflictError",
    "PayloadTooLargeError", "RateLimitError", "InternalServerError",
    "ServiceUnavailableError", "GatewayTimeoutError",
    "InsufficientStorageError", "SessionNotFoundError", "SessionBusyError",
    "SessionLimitError", "error_from_answer",
]


class YuxiSandboxError(Exception):
    """Base class of every exception this package raises on purpose."""


class TransportError(YuxiSandboxError):
    """No usable answer: the connection, TLS, a timeout or the answer's
    framing failed. ``method`` and ``path`` name the request."""

    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.path = path


class APIError(YuxiSandboxError):
    """The service answered with an error.

    Attributes: ``status`` (HTTP status), ``code`` (the API's error code,
    docs/api.md "Error index"; ``""`` for an answer of nginx itself),
    ``message`` (for people), ``request_id`` (``None`` when the answer had
    none), ``retry_after`` (seconds from ``Retry-After``, or ``None``) and
    ``body`` (the raw answer).
    """

    def __init__(self, status: int, code: str, message: str, *,
                 request_id: str | None = None, retry_after: float | None = None,
                 body: bytes = b"", method: str = "", path: str = "") -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = body
        self.method = method
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        what = "%d %s: %s" % (self.status, self.code or "(no code)", self.message)
        if self.request_id:
            what += " (request %s)" % self.request_id
        return what


class BadRequestError(APIError):
    """400: ``bad_request``, ``invalid_path``, ``invalid_thread_id``,
    ``binary_file``, ``is_directory``, ``invalid_metadata``."""


class AuthenticationError(APIError):
    """401 ``unauthenticated``: no identity (a wrong or missing token)."""


class PermissionDeniedError(APIError):
    """403: ``path_not_allowed``, ``read_only``, ``forbidden``; or nginx
    refusing to send a file it may not read (``code`` ``""``)."""


class NotFoundError(APIError):
    """404: ``not_found`` (thread, process, route), ``file_not_found``,
    ``session_not_found`` (as :class:`SessionNotFoundError`)."""


class SessionNotFoundError(NotFoundError):
    """404 ``session_not_found``: no such session in the thread, or its
    shell ended (a command ended it, ``YUXI_SESSION_IDLE`` passed, it was
    deleted) or its keeper is gone (the sandbox was recreated or reaped).
    Nothing ran; ``message`` says why."""


class MethodNotAllowedError(APIError):
    """405 ``method_not_allowed``."""


class ConflictError(APIError):
    """409: ``file_exists``, ``string_not_found``, ``ambiguous_match``,
    ``thread_exists``, ``process_limit``, ``not_running``, ``session_busy``
    (as :class:`SessionBusyError`)."""


class SessionBusyError(ConflictError):
    """409 ``session_busy``: another command of the session runs now (one
    at a time per session); nothing ran."""


class PayloadTooLargeError(APIError):
    """413 ``payload_too_large``."""


class RateLimitError(APIError):
    """429: ``thread_limit``, ``sandbox_limit``, ``rate_limited``,
    ``session_limit`` (as :class:`SessionLimitError`)."""


class SessionLimitError(RateLimitError):
    """429 ``session_limit``: the thread has ``YUXI_SESSION_MAX`` open
    sessions, or the user ``YUXI_SESSION_USER_MAX`` across their threads.
    Not retried: it changes only when a session ends or is deleted."""


class InternalServerError(APIError):
    """500 ``internal``, and any other 5xx without a class of its own."""


class ServiceUnavailableError(APIError):
    """503: ``capacity``, ``backend_unavailable``, ``agent_unavailable``."""


class GatewayTimeoutError(APIError):
    """504 ``timeout``."""


class InsufficientStorageError(APIError):
    """507: ``quota_exceeded``, ``insufficient_storage``."""


class StreamError(APIError):
    """A streamed execute that failed after its ``200`` had started: the
    stream's last event was ``{"type": "error", ...}``. ``status`` is the
    status the same error has as a plain answer (503 for
    ``backend_unavailable``)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 405: MethodNotAllowedError, 409: ConflictError,
    413: PayloadTooLargeError, 429: RateLimitError, 500: InternalServerError,
    503: ServiceUnavailableError, 504: GatewayTimeoutError,
    507: InsufficientStorageError,
}

# Codes with a class of their own (a subclass of their status's class).
_BY_CODE: dict[str, type[APIError]] = {
    "session_not_found": SessionNotFoundError, "session_busy": SessionBusyError,
    "session_limit": SessionLimitError,
}

# The status each code has (include/yuxi/error.h), for stream errors.
_CODE_STATUS: dict[str, int] = {
    "bad_request": 400, "invalid_path": 400, "invalid_thread_id": 400,
    "binary_file": 400, "is_directory": 400, "invalid_metadata": 400,
    "invalid_env": 400, "cwd_not_found": 400, "unauthenticated": 401,
    "path_not_allowed": 403, "read_only": 403, "forbidden": 403,
    "not_found": 404, "file_not_found": 404, "method_not_allowed": 405,
    "file_exists": 409, "string_not_found": 409, "ambiguous_match": 409,
    "thread_exists": 409, "process_limit": 409, "not_running": 409,
    "payload_too_large": 413, "thread_limit": 429, "sandbox_limit": 429,
    "rate_limited": 429, "internal": 500, "capacity": 503,
    "backend_unavailable": 503, "agent_unavailable": 503, "timeout": 504,
    "quota_exceeded": 507, "insufficient_storage": 507,
    "session_not_found": 404, "session_busy": 409, "session_limit": 429,
}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header in its delay-seconds form, or
    ``None`` (absent, a date, or not a number)."""
    if value is None:
        return None
    try:
        secs = float(value.strip())
    except ValueError:
        return None
    return secs if secs >= 0 else None


def error_from_answer(status: int, body: bytes, *, request_id: str | None = None,
                      retry_after: str | None = None, method: str = "",
                      path: str = "") -> APIError:
    """The :class:`APIError` for an error answer: its class by code when the
    code has one of its own (a session's), else by status; code and message
    from the JSON error object when there is one."""
    code, message = "", "HTTP %d" % status
    try:
        err: Any = json.loads(body.decode("utf-8")).get("error")
    except (ValueError, UnicodeDecodeError, AttributeError):
        err = None
    if isinstance(err, dict):
        code = str(err.get("code") or "")
        message = str(err.get("message") or message)
        request_id = str(err.get("request_id") or "") or request_id
    cls = _BY_CODE.get(code) if _CODE_STATUS.get(code) == status else None
    if cls is None:
        cls = _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else APIError
    return cls(status, code, message, request_id=request_id,
               retry_after=parse_retry_after(retry_after), body=body,
               method=method, path=path)


def stream_error(err: Any, *, method: str = "", path: str = "") -> StreamError:
    """The :class:`StreamError` of a stream's error event's ``error`` object."""
    if not isinstance(err, dict):
        err = {}
    code = str(err.get("code") or "")
    return StreamError(_CODE_STATUS.get(code, 500), code,
                       str(err.get("message") or "the stream ended with an error"),
                       request_id=str(err.get("request_id") or "") or None,
                       method=method, path=path)
