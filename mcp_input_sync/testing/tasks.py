"""Modern-era tasks: a ``task=True`` tool answers its call with a task, whose input requests
``tasks/get`` serves and ``tasks/update`` answers.

Each ``tasks/get`` runs the tool again from the start with the answers
collected so far (the same replay as an ``input_required`` call). Import
the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from .call import Host, ToolCall, outcome
from .recorder import Recorder
from .registry import Tool
from .shared import Closed, Exchange, JsonDict, NeedInput, now
from .wire import Wire


@dataclass
class Task:
    task_id: str
    tool: Tool
    params: JsonDict
    created: str
    updated: str
    responses: JsonDict = field(default_factory=dict)
    emitted: int = 0
    final: Optional[JsonDict] = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Tasks:
    """The fake's tasks, and its answers to ``tasks/get``, ``tasks/update`` and ``tasks/cancel``."""

    METHODS = ("tasks/get", "tasks/update", "tasks/cancel")

    def __init__(self, host: Host, lock: threading.Lock, wire: Wire, recorder: Recorder) -> None:
        self._host = host
        self._lock = lock
        self._wire = wire
        self._recorder = recorder
        self._tasks: dict[str, Task] = {}

    def start(self, task_id: str, tool: Tool, request_id: Any, params: JsonDict) -> None:
        """Answer a call of a task tool with a new working task."""
        stamp = now()
        clean = {k: v for k, v in params.items() if k != "_meta"}
        task = Task(task_id, tool, clean, stamp, stamp)
        with self._lock:
            self._tasks[task_id] = task
        self._wire.reply(request_id, {"resultType": "task", **self._view(task, "working")})

    def handle(self, request_id: Any, method: str, params: JsonDict) -> None:
        """Answer one of :attr:`METHODS`."""
        task = self._find(request_id, params)
        if task is None:
            return
        if method == "tasks/get":
            self._wire.spawn(self._get, task, request_id)
        elif method == "tasks/update":
            responses = params.get("inputResponses")
            if isinstance(responses, dict):
                self._recorder.note_responses(task.task_id, responses)
                with task.lock:
                    task.responses.update(responses)
                    task.updated = now()
            self._wire.reply(request_id, {"resultType": "complete"})
        else:  # tasks/cancel
            with task.lock:
                if task.final is None:
                    task.final = {"status": "cancelled"}
                    task.updated = now()
            self._wire.reply(request_id, {"resultType": "complete"})

    def _get(self, task: Task, request_id: Any) -> None:
        with task.lock:
            if task.final is None:
                call = ToolCall(self._host, task.tool.name, task.params, chain=task.task_id, responses=task.responses, emitted_before=task.emitted)
                try:
                    reply, error = outcome(task.tool.fn, call)
                except NeedInput as need:
                    self._recorder.add_exchange_once(Exchange(need.request["method"], need.request.get("params"), need.key, chain=task.task_id))
                    task.emitted = call._emitted
                    view = self._view(task, "input_required")
                    view["inputRequests"] = {need.key: need.request}
                    self._wire.reply(request_id, {"resultType": "complete", **view})
                    return
                except Closed:
                    return
                task.emitted = call._emitted
                task.updated = now()
                if error is not None:
                    task.final = {"status": "failed", "error": error}
                else:
                    assert reply is not None
                    reply.setdefault("resultType", "complete")
                    task.final = {"status": "completed", "result": reply}
            final = dict(task.final)
            view = self._view(task, str(final.pop("status")))
        self._wire.reply(request_id, {"resultType": "complete", **view, **final})

    def _view(self, task: Task, status: str) -> JsonDict:
        return {
            "taskId": task.task_id,
            "status": status,
            "createdAt": task.created,
            "lastUpdatedAt": task.updated,
            "ttlMs": 60000,
            "pollIntervalMs": 10,
        }

    def _find(self, request_id: Any, params: JsonDict) -> Optional[Task]:
        with self._lock:
            task = self._tasks.get(str(params.get("taskId")))
        if task is None:
            self._wire.reply(request_id, error={"code": -32602, "message": "Unknown task"})
        return task
