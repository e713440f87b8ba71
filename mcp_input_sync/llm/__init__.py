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
the extra. See docs/llm.md.
"""

from ._anthropic import AnthropicSampler
from ._common import ModelInfo, Sampler, choose_model
from ._openai import OpenAISampler

__all__ = ["AnthropicSampler", "ModelInfo", "OpenAISampler", "Sampler", "choose_model"]
