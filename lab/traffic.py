"""A paced client for measuring what a change does to a running app: one call at a time, every `interval_s` (or as
soon as the last one ends), each answer recorded with its send time; and the arithmetic the records are judged by.

Shared by lab/serve_update_cpu.py (GETs to a stand-in app on CPU), lab/smoke/update.py (chat completions to the
stack's endpoint) and lab/head_restart_cpu.py (GETs to a worker node's Serve proxy while the head is away).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

# One call: (ok, what served it, the error). What served it is free text the caller's records compare.
Call = Callable[[], tuple[bool, str, str]]


@dataclass(frozen=True)
class Answer:
    t_s: float  # sent, seconds after the traffic's `start`
    ok: bool
    latency_s: float
    served: str = ""  # which version or replica answered, as the call reports it
    error: str = ""


class Traffic:
    """`call` once at a time, every `interval_s` (or as soon as the last one ends), each answer recorded in
    `answers` with its send time relative to `start` (time.monotonic())."""

    def __init__(self, call: Call, start: float, interval_s: float, name: str = "traffic") -> None:
        self.call, self.start, self.interval_s = call, start, interval_s
        self.answers: list[Answer] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            sent = time.monotonic()
            ok, served, error = self.call()
            latency = time.monotonic() - sent
            self.answers.append(Answer(round(sent - self.start, 2), ok, round(latency, 3), served, error))
            due = max(due + self.interval_s, time.monotonic())
            self._stop.wait(due - time.monotonic())


def get_json(url: str, timeout_s: float, served: Callable[[dict[str, str]], str]) -> tuple[bool, str, str]:
    """GET `url` once: (ok, `served` of its JSON body, the error)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.loads(response.read())
        return True, served(body), ""
    except urllib.error.HTTPError as error:
        return False, "", f"HTTP {error.code}: {error.read().decode(errors='replace')[-200:]}"
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        return False, "", f"{type(error).__name__}: {str(error)[-200:]}"


def longest_outage(answers: list[Answer], end_s: float) -> tuple[float, bool]:
    """(the longest run of failed requests, from the first one's send to the next success's send or `end_s`;
    whether requests still failed at the end)."""
    longest, failing_since = 0.0, None
    for answer in answers:
        if not answer.ok and failing_since is None:
            failing_since = answer.t_s
        elif answer.ok and failing_since is not None:
            longest, failing_since = max(longest, answer.t_s - failing_since), None
    if failing_since is not None:
        return max(longest, end_s - failing_since), True
    return longest, False


def longest_gap(answers: list[Answer], end_s: float, begin_s: float = 0.0) -> float:
    """The longest time without a successful answer: between `begin_s`, each success's arrival and `end_s`."""
    arrivals = [begin_s, *(a.t_s + a.latency_s for a in answers if a.ok), end_s]
    return max(later - earlier for earlier, later in itertools.pairwise(arrivals))
