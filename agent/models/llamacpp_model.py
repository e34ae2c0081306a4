"""``llamacpp/<model>``: a GGUF model run in-process by llama-cpp-python (``labcoat[local]``).

No key, no network, no server: ``<model>`` is a ``.gguf`` path or a known name
(:mod:`agent.models.gguf_store`). Options: ``n_ctx`` (the window; a known model's own, else the
file's training window up to 8192), ``threads`` (else ``LABCOAT_LLAMACPP_THREADS``, else chosen
from the machine's load: on a busy machine one thread beats two), ``max_tokens`` (768),
``temperature`` (0.2), ``seed`` (0), ``grammar`` (true: react replies are decoded under the
actions' GBNF grammar, :mod:`agent.models.grammar`, so every one parses).

Every role of one run (agent, summariser, editor) shares one loaded model per file and window,
so memory is paid once and llama.cpp's KV cache carries over between calls: a prompt whose
prefix equals the last one's only evaluates the new tail (``cached`` in the usage). A RAM cache
of states keeps that working when the roles interleave. A prompt that would not fit the window
is cut in its longest message's middle (marked), never sent to overflow.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from agent.models.base import (
    ModelConfigError,
    ModelError,
    Reply,
    ToolCall,
    Usage,
    clean_text,
)
from agent.models.gguf_store import KNOWN, model_path
from agent.models.providers import ModelRef, cost_of
from agent.models.react_format import FormatError, parse_response

INSTALL = ('pip install "labcoat[local]"  (a CPU build of llama-cpp-python; where a wheel is at '
           'hand: pip install --find-links DIR llama-cpp-python==0.3.36)')
OPTIONS = {"n_ctx", "threads", "max_tokens", "temperature", "seed", "grammar"}
CUT = "\n[... cut to fit the model's context window ...]\n"
PER_MESSAGE = 6  # ChatML's <|im_start|>role\n ... <|im_end|>\n around each message
_LOADED: dict[tuple[str, int, int], Any] = {}
_LOCK = threading.Lock()


def threads_from_load() -> int:
    """``LABCOAT_LLAMACPP_THREADS``, else the cores this process may use less the load's
    busy ones (at least 1): llama.cpp's threads spin, so contending for cores slows them all."""
    if os.environ.get("LABCOAT_LLAMACPP_THREADS"):
        return max(1, int(os.environ["LABCOAT_LLAMACPP_THREADS"]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    busy = round(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(cores, cores - busy))


def load(path: str, n_ctx: int, threads: int):
    """One llama.cpp model per (file, window, threads) in this process."""
    try:
        from llama_cpp import Llama, LlamaRAMCache
    except ImportError:
        raise ModelConfigError(f"llamacpp models need llama-cpp-python: {INSTALL}") from None
    key = (path, n_ctx, threads)
    with _LOCK:
        if key not in _LOADED:
            try:
                llm = Llama(path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, verbose=False)
            except Exception as err:  # noqa: BLE001 - llama.cpp says "failed to load" as ValueError
                raise ModelError(f"llamacpp: cannot load {path}: {err}") from err
            llm.set_cache(LlamaRAMCache(capacity_bytes=512 << 20))
            atexit.register(llm.close)  # freed while the interpreter still works (no noise at exit)
            _LOADED[key] = llm
        return _LOADED[key]


def common_prefix(a, b) -> int:
    """How many items open both sequences (tokens a cache can reuse)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _saved_states(llm) -> list:
    """The token lists of the states in the RAM cache (restored when they match longer)."""
    states = getattr(getattr(llm, "cache", None), "cache_state", None) or {}
    return list(states.keys())


class LlamaCppModel:
    takes_grammar = True
    """The research agent passes ``grammar=`` (GBNF text) for react replies."""

    def __init__(self, name: str, path: str, *, n_ctx: int, threads: int, max_tokens: int = 768,
                 temperature: float = 0.2, seed: int = 0, grammar: bool = True) -> None:
        self.name = f"llamacpp/{name}"
        self.path, self.n_ctx, self.threads = path, n_ctx, threads
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed
        self.use_grammar = grammar
        self._grammars: dict[str, Any] = {}

    @classmethod
    def from_ref(cls, ref: ModelRef, shared: dict | None = None) -> LlamaCppModel:
        return cls.from_options(ref.name, dict(ref.options))

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> LlamaCppModel:
        unknown = set(options) - OPTIONS
        if unknown:
            raise ModelConfigError(f"llamacpp/{name}: unknown options {', '.join(sorted(unknown))} "
                                   f"(known: {', '.join(sorted(OPTIONS))})")
        try:
            import llama_cpp  # noqa: F401 - fail before the run, with the install line
        except ImportError:
            raise ModelConfigError(f"llamacpp models need llama-cpp-python: {INSTALL}") from None
        path = str(model_path(name))
        n_ctx = int(options.get("n_ctx") or (KNOWN[name].n_ctx if name in KNOWN else 0))
        return cls(name, path, n_ctx=n_ctx or cls._file_window(path),
                   threads=int(options.get("threads") or threads_from_load()),
                   max_tokens=int(options.get("max_tokens", 768)),
                   temperature=float(options.get("temperature", 0.2)), seed=int(options.get("seed", 0)),
                   grammar=bool(options.get("grammar", True)))

    @staticmethod
    def _file_window(path: str) -> int:
        from llama_cpp import Llama

        try:
            vocab = Llama(path, vocab_only=True, verbose=False)
        except Exception as err:  # noqa: BLE001 - llama.cpp says "failed to load" as ValueError
            raise ModelConfigError(f"llamacpp: cannot read {path} as a GGUF model: {err}") from err
        return min(8192, int(vocab.n_ctx_train() or 4096))

    @property
    def llm(self):
        return load(self.path, self.n_ctx, self.threads)

    @property
    def context_window(self) -> int:
        """Prompt tokens a call may send: the window less the reply's room."""
        return self.n_ctx - self.max_tokens

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        """The prompt's tokens by the model's own tokenizer (plus the chat template's marks)."""
        tok = self.llm.tokenize
        return sum(len(tok(str(m["content"]).encode(), add_bos=False, special=False)) + PER_MESSAGE
                   for m in messages) + 3

    def fit(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` within :attr:`context_window`: the longest one's middle cut (marked) as
        often as needed. The agent degrades its context first (:func:`agent.context.fit`);
        this keeps any other caller (summaries, AI edits of a long file) from overflowing."""
        messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        for _ in range(8):
            over = self.count_tokens(messages) - self.context_window
            if over <= 0:
                return messages
            longest = max(messages, key=lambda m: len(str(m["content"])))
            text = str(longest["content"])
            drop = min(len(text) - 200, int(over * 4.5) + 400)  # ~4 chars a token, with margin
            if drop <= 0:
                break
            head = (len(text) - drop) * 2 // 3
            longest["content"] = text[:head] + CUT + text[head + drop:]
        raise ModelError(f"{self.name}: the prompt cannot be cut to fit {self.n_ctx} tokens")

    def _grammar(self, text: str):
        from llama_cpp import LlamaGrammar

        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                 grammar: str | None = None) -> Reply:
        """One reply; with ``tools``, the reply is decoded under the tools' grammar and its
        action returned as a native tool call."""
        from agent.models.grammar import react_grammar

        if tools:
            grammar = react_grammar([(t["name"], t["parameters"]) for t in tools])
            messages = _with_tool_list(messages, tools)
        try:
            llm = self.llm
            fitted = self.fit(messages)
            before = [list(llm._input_ids), *_saved_states(llm)]  # what the KV cache may reuse
            room = self.n_ctx - self.count_tokens(fitted)
            resp = llm.create_chat_completion(
                fitted, max_tokens=max(16, min(self.max_tokens, room)), temperature=self.temperature,
                seed=self.seed, grammar=self._grammar(grammar) if grammar and self.use_grammar else None)
            now = list(llm._input_ids)
            cached = max(common_prefix(b, now) for b in before)
        except ModelError:
            raise
        except Exception as err:  # noqa: BLE001 - llama.cpp raises ValueError/RuntimeError alike
            raise ModelError(f"{self.name}: {type(err).__name__}: {err}".splitlines()[0]) from err
        text = clean_text(resp["choices"][0]["message"].get("content"))
        u = resp.get("usage") or {}
        usage = Usage(input=u.get("prompt_tokens", 0), output=u.get("completion_tokens", 0),
                      cached=min(cached, u.get("prompt_tokens", 0)))
        calls: list[ToolCall] = []
        if tools:
            text, calls = _as_tool_call(text)
        return Reply(text=text, tool_calls=calls, usage=usage, cost=cost_of(self.name, usage),
                     model=self.name)


def _with_tool_list(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools written into the system message: the chat template would render them in its own
    call format, which the grammar does not follow, so they are listed as the react prompt does."""
    lines = "\n".join(f"- {t['name']} {{{', '.join(t['parameters'].get('properties', {}))}}}: "
                      f"{t['description']}" for t in tools)
    listing = f"Tools (Action: the name; Action Input: a JSON object with the keys in braces):\n{lines}"
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{listing}"}, *messages[1:]]
    return [{"role": "system", "content": listing}, *messages]


def _as_tool_call(text: str) -> tuple[str, list[ToolCall]]:
    """A grammar-decoded react reply as (its fields' text, one tool call)."""
    try:
        parsed = parse_response(text)
    except FormatError:
        return text, []
    head = text[:text.rfind("Action:")].rstrip()
    return head, [ToolCall(id="call_0", name=parsed.action, arguments=parsed.action_input)]
