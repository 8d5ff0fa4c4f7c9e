"""GETs from the agent's HTTP API, cheaply when there is no agent.

A request waits at most 0.5 s. After a failure the agent is not asked again for 30 s, then 60 s, ...
up to 10 minutes, so a node without an agent pays for one refused connection, not one per call. The
agent is on the same node: proxies from the environment ($http_proxy) are not used.
"""

from __future__ import annotations

import json
import os
import time
from urllib.parse import urlencode
from typing import Any, Callable, Iterable, Optional, Tuple

DEFAULT_URL = "http://127.0.0.1:9400"
REQUEST_TIMEOUT_S = 0.5
FIRST_BACKOFF_S = 30.0
MAX_BACKOFF_S = 600.0
_MAX_BODY_BYTES = 4 * 1024 * 1024  # a summary of many GPUs is a few KiB; anything larger is not ours


def agent_url(explicit: Optional[str] = None) -> str:
    return (explicit or os.environ.get("GPUSCOPE_URL") or DEFAULT_URL).rstrip("/")


class AgentHttp:
    def __init__(
        self,
        url: Optional[str] = None,
        timeout_s: float = REQUEST_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = agent_url(url)
        self._timeout_s = timeout_s
        self._clock = clock
        self._retry_at = 0.0
        self._backoff_s = 0.0
        self._opener: Any = None  # urllib.request is imported on first use: `import gpuscope` stays cheap
        self.failures = 0

    def available(self) -> bool:
        """False while backing off after a failure."""
        return self._clock() >= self._retry_at

    def get(self, path: str, params: Iterable[Tuple[str, Any]] = ()) -> Optional[dict]:
        """The `data` object of the answer (or the whole object, when it has no `data`); None when the
        agent did not answer with one, or is being backed off from. Never raises."""
        if not self.available():
            return None
        try:
            import urllib.error
            import urllib.request

            if self._opener is None:
                self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            query = urlencode(list(params))
            target = f"{self.url}{path}" + (f"?{query}" if query else "")
            try:
                with self._opener.open(target, timeout=self._timeout_s) as response:
                    body = response.read(_MAX_BODY_BYTES)
            except urllib.error.HTTPError as error:
                # An answer all the same (the check may answer unhealthy with a status of its own).
                body = error.read(_MAX_BODY_BYTES)
                error.close()
            document = json.loads(body)
        except Exception:
            self._failed()
            return None
        if not isinstance(document, dict):
            self._failed()
            return None
        data = document.get("data", document)
        if document.get("status") == "error" or not isinstance(data, dict):
            self._failed()
            return None
        self._backoff_s = 0.0
        return data

    def _failed(self) -> None:
        self.failures += 1
        self._backoff_s = min(MAX_BACKOFF_S, self._backoff_s * 2) if self._backoff_s else FIRST_BACKOFF_S
        self._retry_at = self._clock() + self._backoff_s
