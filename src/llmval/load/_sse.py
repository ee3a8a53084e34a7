"""Server-sent events, split incrementally: the same messages whatever the byte chunking.

The OpenAI streaming APIs send `data: <json>` messages separated by a blank line. A network read
may end anywhere (inside a UTF-8 character, a line, or between the two newlines), so the splitter
keeps a buffer and an incremental decoder and yields a message only once its blank line arrived.
"""

from __future__ import annotations

import codecs
import re

# A message ends at a blank line; servers may use \n, \r\n or \r line ends (SSE spec §9.2.6).
_MESSAGE_END_RE = re.compile(r"\r\n\r\n|\n\n|\r\r")


class SseSplitter:
    """Feed bytes with `feed`; get back the `data` payloads of the messages completed so far.

    >>> s = SseSplitter()
    >>> s.feed(b'data: {"a": 1}\\n'), s.feed(b'\\ndata: [DO'), s.feed(b'NE]\\n\\n')
    ([], ['{"a": 1}'], ['[DONE]'])
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += self._decoder.decode(chunk)
        payloads: list[str] = []
        while match := _MESSAGE_END_RE.search(self._buffer):
            message, self._buffer = self._buffer[: match.start()], self._buffer[match.end():]
            if (data := message_data(message)) is not None:
                payloads.append(data)
        return payloads

    def close(self) -> list[str]:
        """Payload of a last message that ended without its blank line (the stream closed)."""
        self._buffer += self._decoder.decode(b"", final=True)
        rest, self._buffer = self._buffer, ""
        data = message_data(rest) if rest.strip() else None
        return [data] if data is not None else []


def message_data(message: str) -> str | None:
    """The `data` field of one SSE message (multi-line data joined by newlines); None for comments."""
    lines = [line.removeprefix("data:").removeprefix(" ")
             for line in re.split(r"\r\n|\n|\r", message) if line.startswith("data:")]
    return "\n".join(lines) if lines else None
