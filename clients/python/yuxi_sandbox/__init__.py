# SPDX-License-Identifier: MIT
"""yuxi-sandbox: the Python client of the yuxi-sandbox service.

``Client`` covers the HTTP API (threads, execute, background processes
and terminals, sessions, files); ``yuxi_sandbox.errors`` has its exceptions;
``yuxi_sandbox.deepagents.YuxiSandbox`` is a deepagents sandbox backend
(needs the optional ``deepagents`` package). Standard library only.
See docs/python.md.
"""

from . import errors, types
from ._execute import ExecStream
from .client import Client
from .errors import (APIError, AuthenticationError, BadRequestError, ConflictError,
                     GatewayTimeoutError, InsufficientStorageError, InternalServerError,
                     MethodNotAllowedError, NotFoundError, PayloadTooLargeError,
                     PermissionDeniedError, RateLimitError, ServiceUnavailableError,
                     SessionBusyError, SessionLimitError, SessionNotFoundError,
                     StreamError, TransportError, YuxiSandboxError)

__version__ = "0.1.0"

__all__ = [
    "Client", "ExecStream", "errors", "types", "__version__",
    "YuxiSandboxError", "TransportError", "APIError", "StreamError",
    "BadRequestError", "AuthenticationError", "PermissionDeniedError", "NotFoundError",
    "MethodNotAllowedError", "ConflictError", "PayloadTooLargeError", "RateLimitError",
    "InternalServerError", "ServiceUnavailableError", "GatewayTimeoutError",
    "InsufficientStorageError", "SessionNotFoundError", "SessionBusyError",
    "SessionLimitError",
]
