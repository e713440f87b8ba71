"""Stand-in LLM provider endpoints on 127.0.0.1 for the real ``openai`` and ``anthropic`` packages.

:class:`ProviderStandIn` answers ``POST /v1/chat/completions`` (OpenAI) and
``POST /v1/messages`` (Anthropic) from a script of replies, and keeps every
request it got (``requests``: path, headers, JSON body). A reply is a JSON
document (sent with 200) or a ``(status, document)`` pair. The shapes
checked here are the providers' documented request bodies: ``check_openai``
and ``check_anthropic`` assert the fields a well-formed request has.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

JsonDict = dict[str, Any]
Reply = Union[JsonDict, tuple[int, JsonDict]]


class ProviderStandIn:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.replies: list[Reply] = []
        self.requests: list[tuple[str, dict[str, str], JsonDict]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with stand_in.lock:
                    stand_in.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    reply = stand_in.replies.pop(0) if stand_in.replies else (500, {"error": {"message": "no reply scripted"}})
                status, document = reply if isinstance(reply, tuple) else (200, reply)
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-stand-in", daemon=True)
        self.thread.start()

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def bodies(self, path: str) -> list[JsonDict]:
        with self.lock:
            return [body for seen, _, body in self.requests if seen == path]

    def openai(self) -> Any:
        import openai

        return openai.OpenAI(base_url=self.origin + "/v1", api_key="sk-test-not-a-real-key", max_retries=0, timeout=10.0)

    def anthropic(self) -> Any:
        import anthropic

        return anthropic.Anthropic(base_url=self.origin, api_key="sk-ant-test-not-a-real-key", max_retries=0, timeout=10.0)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def completion(text: str = "Hello!", *, finish: str = "stop", model: str = "gpt-test-2026", tool_calls: Any = None) -> JsonDict:
    """An OpenAI chat completion, as the API documents it."""
    message: JsonDict = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def message(*blocks: JsonDict, stop: str = "end_turn", model: str = "claude-test-2026") -> JsonDict:
    """An Anthropic message, as the API documents it."""
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model,
        "content": list(blocks) or [{"type": "text", "text": "Hello!"}], "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 3},
    }


def check_openai(body: JsonDict) -> None:
    """What every chat completions request has: a model, messages with roles, and only documented fields."""
    assert isinstance(body["model"], str) and body["messages"], body
    for entry in body["messages"]:
        assert entry["role"] in ("system", "user", "assistant", "tool"), entry
        if entry["role"] == "tool":
            assert isinstance(entry["tool_call_id"], str) and isinstance(entry["content"], str), entry
    known = {"model", "messages", "max_completion_tokens", "max_tokens", "temperature", "stop", "tools", "tool_choice", "top_p", "parallel_tool_calls"}
    assert set(body) <= known, set(body) - known


def check_anthropic(body: JsonDict) -> None:
    """What every messages request has: a model, max_tokens, alternating user/assistant messages."""
    assert isinstance(body["model"], str) and isinstance(body["max_tokens"], int) and body["messages"], body
    for entry in body["messages"]:
        assert entry["role"] in ("user", "assistant") and isinstance(entry["content"], (str, list)), entry
    known = {"model", "max_tokens", "messages", "system", "temperature", "stop_sequences", "tools", "tool_choice", "top_p"}
    assert set(body) <= known, set(body) - known
