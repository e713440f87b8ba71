"""The host's own LLM: sampling handlers over the official provider SDKs.

``OpenAISampler`` (any OpenAI-compatible chat completions endpoint, the
``openai`` extra) and ``AnthropicSampler`` (the messages API, the
``anthropic`` extra) answer a server's ``sampling/createMessage`` as the
specification says: the model chosen from the host's allow-list by the
server's hints and priorities, the messages, system prompt, limits and
tools mapped both ways, a ``stopReason`` always, hooks to approve the
request and review the answer, and provider failures as refusals a server
can read without the provider's text. Importing this package needs neither
SDK; making a sampler whose SDK is missing raises ``ImportError`` naming
the extra. ``Tools`` hands a server's tools to the host's model, and
``chat_openai`` / ``chat_anthropic`` run the blocking tool loop. See docs/llm.md.
"""

from ._anthropic import AnthropicSampler
from ._common import ModelInfo, Sampler, choose_model
from ._loop import ChatResult, Step, ToolCall, chat_anthropic, chat_openai
from ._openai import OpenAISampler
from ._tools import Tools, provider_name

__all__ = [
    "AnthropicSampler", "ChatResult", "ModelInfo", "OpenAISampler", "Sampler", "Step", "ToolCall", "Tools",
    "chat_anthropic", "chat_openai", "choose_model", "provider_name",
]
