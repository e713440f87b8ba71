"""JSON with comments (``//``, ``/* */``) and trailing commas, as VS Code writes its configuration files.

Pure and stdlib-only: the configuration reader (``mcp_input_sync.config``) uses it and imports nothing else
of the package.
"""

from __future__ import annotations

__all__ = ["strip_jsonc"]


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as VS Code writes it, made plain JSON.

    Strings are copied as they are; a comment becomes a space (``1/**/2`` stays two tokens);
    a comma followed only by space and comments before ``}`` or ``]`` is dropped.
    """
    out: list[str] = []
    pending_comma = -1  # where a comma was written, while only space has followed it
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            pending_comma = -1
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            out.append(" ")
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = n if end < 0 else end + 2
        else:
            if char in "}]" and pending_comma >= 0:
                out[pending_comma] = " "
            if char == ",":
                pending_comma = len(out)
            elif not char.isspace():
                pending_comma = -1
            out.append(char)
            i += 1
    return "".join(out)
