"""The two HTTP exchanges a grid needs: count prompt tokens with the server's tokenizer (tools included), and ask.

The engine's adapter class says how its `POST /tokenize` counts (`tokenize_form`): "chat" (vLLM: it
accepts chat `messages` and applies the served chat template, so its count is exactly the prompt the
model sees) or "prompt" (SGLang: a prompt only; the chat template's overhead is measured once with one
1-token chat request and added to the content's count). A `/tokenize` that is there but broken (`TokenizeFailed`:
an HTTP error or no token ids; SGLang 0.5.17 answers 500 for a tokenizer whose model_max_length overflows its JSON
encoder) is not asked again: each prompt is then counted with the `usage.prompt_tokens` of a 1-token chat
completion of the same messages and tools (what the model sees, template included), and the counter says so.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable

import httpx

from ..core.contract import excerpt
from ..core.errors import EndpointError, EndpointUnreachable, TokenizeFailed
from ..engines import ADAPTERS, EngineAdapter
from ..io.answers import ChatCompletion, checked
from ..io.http import get_json, httpx_errors, json_of

PROBE_CONTENT = "Reply with OK."


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the server answered to one chat request."""

    content: str
    prompt_tokens: int | None
    finish_reason: str | None
    elapsed_s: float
    completion_tokens: int | None = None
    """usage.completion_tokens as the server claims it (judged by `llmval.grid.retrieval`, never trusted)."""
    reasoning: str = ""
    """Reasoning text the answer carried (thinking is asked off; what came is still generated text)."""

    @property
    def generated(self) -> str:
        """Every text the model produced for this answer (what `not_a_retrieval` counts)."""
        return f"{self.reasoning}\n{self.content}" if self.reasoning else self.content


def _count(data: object, endpoint: str, path: str) -> int:
    if isinstance(data, dict):
        if isinstance(data.get("count"), int):
            return data["count"]
        if isinstance(data.get("tokens"), list):
            return len(data["tokens"])
    raise TokenizeFailed(f"[{endpoint}] POST {path}: no token count in the answer: {str(data)[:200]!r}")


class ServerTokenCounter:
    """Counts a chat prompt's tokens with the endpoint's own tokenizer (a `TokenCounter`)."""

    def __init__(self, client: httpx.Client, *, endpoint: str, engine: type[EngineAdapter], model: str,
                 say: Callable[[str], None] = lambda line: None):
        if engine.tokenize_form is None:
            valid = sorted(kind for kind, cls in ADAPTERS.items() if cls.tokenize_form is not None)
            raise EndpointError(f"[{endpoint}] engine '{engine.kind}' has no /tokenize to calibrate NIAH lengths "
                                f"with; valid: {valid}")
        self._client, self._endpoint, self._engine, self._model, self._say = client, endpoint, engine, model, say
        self._overhead: int | None = None
        self.calls = 0
        self.tokenize_failed: str | None = None
        self._fresh_failure = False  # /tokenize just failed: the server may have closed that connection
        """Why /tokenize is no longer asked (its first failure, in its own words); None while it answers."""

    @property
    def source(self) -> str:
        """How prompts are counted now."""
        if self.tokenize_failed is None:
            return "POST /tokenize"
        return f"usage.prompt_tokens of a 1-token chat completion (POST /tokenize failed: {self.tokenize_failed})"

    def _tokenize(self, body: dict) -> int:
        self.calls += 1
        with httpx_errors(f"[{self._endpoint}] POST {self._client.base_url}/tokenize"):
            response = self._client.post("/tokenize", json=body)
        if response.status_code >= 400:  # it answered, but not with tokens: the server itself still serves
            raise TokenizeFailed(f"[{self._endpoint}] POST /tokenize: HTTP {response.status_code}: "
                                 f"{excerpt(response.text)}")
        try:
            data = json_of(response, endpoint=self._endpoint, method="POST", path="/tokenize")
        except EndpointError as error:  # not JSON
            raise TokenizeFailed(str(error)) from None
        return _count(data, self._endpoint, "/tokenize")

    def _by_usage(self, messages: list[dict], tools: list[dict] | None) -> int:
        """`usage.prompt_tokens` of a 1-token chat completion of `messages` (and `tools`). A prompt the server refuses
        for its length counts what the refusal names (more than the context: the fit then asks for less)."""
        self.calls += 1
        body = chat_body(self._engine, self._model, messages, 1, tools)
        what = f"[{self._endpoint}] POST /v1/chat/completions (counting a prompt)"
        for attempt in (1, 2):
            try:
                with httpx_errors(what):
                    response = self._client.post("/v1/chat/completions", json=body)
                break
            except EndpointUnreachable:
                # A server whose /tokenize raised may close that connection after its 500 (SGLang 0.5.17's uvicorn
                # did: the next request on it was reset 1.6 ms in): the first count after the failure is sent
                # again, once, on a new connection.
                if attempt == 2 or not self._fresh_failure:
                    raise
            finally:
                self._fresh_failure = False
        if response.status_code == 400 and (refused := self._engine.refused_prompt_tokens(response.text)):
            return refused
        data = json_of(response, endpoint=self._endpoint, method="POST", path="/v1/chat/completions")
        count = (data.get("usage") or {}).get("prompt_tokens") if isinstance(data, dict) else None
        if not isinstance(count, int) or isinstance(count, bool):
            raise EndpointError(f"{what}: no usage.prompt_tokens to count the prompt with: {excerpt(str(data))}")
        return count

    def chat_overhead(self) -> int:
        """Tokens the chat template adds around the content (SGLang only; measured once)."""
        if self._overhead is None:
            messages = [{"role": "user", "content": PROBE_CONTENT}]
            answer = ask(self._client, endpoint=self._endpoint, engine=self._engine, model=self._model,
                         messages=messages, max_tokens=1)
            if answer.prompt_tokens is None:
                raise EndpointError(f"[{self._endpoint}] chat completion has no usage.prompt_tokens")
            self._overhead = answer.prompt_tokens - self._tokenize({"model": self._model, "prompt": PROBE_CONTENT})
        return self._overhead

    def __call__(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        """The prompt's tokens; `tools` (a chat request's tool list) counts as the template renders it."""
        if self.tokenize_failed is None:
            try:
                return self._by_tokenize(messages, tools)
            except TokenizeFailed as error:
                self.tokenize_failed, self._fresh_failure = str(error), True
                self._say(f"[{self._endpoint}] prompts are counted by {self.source}")
        return self._by_usage(messages, tools)

    def _by_tokenize(self, messages: list[dict], tools: list[dict] | None) -> int:
        if self._engine.tokenize_form == "chat":
            body: dict = {"model": self._model, "messages": messages, "add_generation_prompt": True}
            if tools:
                body["tools"] = tools
            return self._tokenize(body)
        # A prompt-only /tokenize (SGLang): the contents, prior calls' arguments and tool schemas as JSON
        # approximate what the template renders (usage.prompt_tokens shows how close; see the tolerance check).
        content = "".join(str(m["content"]) for m in messages)
        content += "".join(json.dumps(m["tool_calls"]) for m in messages if m.get("tool_calls"))
        content += json.dumps(tools) if tools else ""
        return self._tokenize({"model": self._model, "prompt": content}) + self.chat_overhead()


def chat_body(engine: type[EngineAdapter], model: str, messages: list[dict], max_tokens: int,
              tools: list[dict] | None = None) -> dict:
    """A chat request at temperature 0 with thinking off (as the engine turns it off); `tools`: its tool list (the
    chat template renders it into the prompt)."""
    body: dict = {"model": model, "messages": messages, "temperature": 0, "max_tokens": max_tokens,
                  **engine.thinking_off}
    if tools:
        body["tools"] = tools
    return body


def ask(client: httpx.Client, *, endpoint: str, engine: type[EngineAdapter], model: str, messages: list[dict],
        max_tokens: int) -> Answer:
    """One chat completion (`chat_body`); text and usage."""
    body = chat_body(engine, model, messages, max_tokens)
    started = time.monotonic()
    data = get_json(client, "/v1/chat/completions", endpoint=endpoint, method="POST", json_body=body)
    elapsed = time.monotonic() - started
    # the answer's shape, as every other chat answer is read: content a string, usage counts JSON integers >= 0 (a
    # content of ["4417702"] read as its repr held the needle; a count of "9999" was dropped without a word)
    checked(ChatCompletion, data, f"[{endpoint}] POST /v1/chat/completions")
    try:
        choice = data["choices"][0]  # type: ignore[index]
        content = choice["message"].get("content") or ""
        usage = data.get("usage") or {}  # type: ignore[union-attr]
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        raise EndpointError(f"[{endpoint}] POST /v1/chat/completions: unexpected answer shape "
                            f"({type(error).__name__}: {error}): {str(data)[:300]!r}") from error
    reasoning = choice["message"].get("reasoning_content") or choice["message"].get("reasoning") or ""
    claimed = usage.get("completion_tokens")
    return Answer(content=content if isinstance(content, str) else str(content),
                  prompt_tokens=usage.get("prompt_tokens"), finish_reason=choice.get("finish_reason"),
                  elapsed_s=round(elapsed, 3),
                  completion_tokens=claimed if isinstance(claimed, int) and not isinstance(claimed, bool) else None,
                  reasoning=reasoning if isinstance(reasoning, str) else "")
