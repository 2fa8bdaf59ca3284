"""The one error the service's rules raise: a request that cannot be honoured, with the HTTP
status that says why (the API answers it as {"error": message}; commands print the message)."""

from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, status: int, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s  # a 429's wait: the API's Retry-After header
