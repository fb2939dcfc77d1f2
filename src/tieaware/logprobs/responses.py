"""Engine responses -> the generated positions of one answer, each as (its token's text, [(token, log-prob)
of the top log-probs there]). Duck-typed: every field is read as an attribute or as a key, so the objects
of the engines' Python clients and the JSON their servers return read alike, with neither installed.

Shapes (the engines' documented output):

- ``{token: logprob}``: one position, the top log-probs of the answer token;
- vLLM ``RequestOutput`` (``.outputs[0]``) or ``CompletionOutput``: ``.logprobs`` is a list, per generated
  position, of ``{token_id: Logprob(logprob, rank, decoded_token)}``; ``.token_ids`` the generated ids;
- OpenAI-compatible chat completions: ``choices[0].logprobs.content[i] = {token, logprob, bytes,
  top_logprobs: [{token, logprob, bytes}]}``;
- OpenAI-compatible completions: ``choices[0].logprobs = {tokens, token_logprobs, top_logprobs: [{token:
  logprob}]}``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..arguments import is_number
from ..errors import InputError, InputTypeError

#: one generated position: the text of the token generated there (None when the shape does not say) and the
#: (token, log-prob) pairs listed there
Position = tuple[str | None, list[tuple[str, Any]]]
#: OpenAI's log-prob for "very unlikely" (a token outside the top 20): no value, treated as absent
VERY_UNLIKELY = -9999.0
#: the keys that make a mapping a response rather than {token: logprob}
STRUCTURE_KEYS = ("choices", "outputs", "logprobs")
LOGPROBS_MISSING = ("holds no log-probabilities: ask the engine for them (OpenAI chat: logprobs=True, "
                    "top_logprobs=20; completions: logprobs=20; vLLM: SamplingParams(logprobs=20))")


def field(obj, name: str):
    """obj[name] for a mapping, else obj.name; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def is_list(obj) -> bool:
    """A sequence that is not text nor a mapping (a list, a tuple, or a sequence-like such as vLLM's
    FlatLogprobs: indexable with a length)."""
    if isinstance(obj, (str, bytes, Mapping)):
        return False
    return isinstance(obj, Sequence) or hasattr(obj, "__len__") and hasattr(obj, "__getitem__")


def first(items, what: str, where: str):
    if not is_list(items) or not items:
        raise InputError(f"{where}: the response's {what} is empty or not a list")
    return items[0]


def positions(response, where: str, tokenizer=None) -> list[Position]:
    """The generated positions of `response` (any shape of the module docstring); `where` names the pair."""
    if isinstance(response, Mapping) and all(is_number(response[key]) for key in STRUCTURE_KEYS if key in response):
        return [(None, [(str(token), logprob) for token, logprob in response.items()])]
    if field(response, "choices") is not None:
        response = first(field(response, "choices"), "choices", where)
    elif field(response, "outputs") is not None:
        response = first(field(response, "outputs"), "outputs", where)
    logprobs = field(response, "logprobs")
    if logprobs is None:
        if not any(field(response, name) is not None for name in ("text", "message", "token_ids", "index")):
            raise InputTypeError(f"{where}: expected {{token: logprob}}, a vLLM RequestOutput/CompletionOutput or "
                                 f"an OpenAI-compatible (chat) completion, not {type(response).__name__}")
        raise InputError(f"{where}: the response {LOGPROBS_MISSING}")
    if is_list(logprobs):
        return vllm_positions(logprobs, field(response, "token_ids"), where, tokenizer)
    if field(logprobs, "content") is not None:
        return chat_positions(field(logprobs, "content"), where)
    if field(logprobs, "top_logprobs") is not None:
        return completion_positions(logprobs, where)
    raise InputError(f"{where}: the response's logprobs hold neither chat 'content' nor completions "
                     f"'top_logprobs' ({LOGPROBS_MISSING})")


def with_chosen(top: list[tuple[str, Any]], token, logprob) -> list[tuple[str, Any]]:
    """`top` plus the generated token when it is not listed there (it may lie outside the top k)."""
    if token is not None and logprob is not None and all(listed != token for listed, _ in top):
        return [*top, (str(token), logprob)]
    return top


def chat_positions(content, where: str) -> list[Position]:
    if not is_list(content):
        raise InputError(f"{where}: logprobs.content must be a list of {{token, logprob, top_logprobs}}")
    found = []
    for item in content:
        token = field(item, "token")
        top = [(str(field(entry, "token")), field(entry, "logprob")) for entry in field(item, "top_logprobs") or ()]
        found.append((None if token is None else str(token), with_chosen(top, token, field(item, "logprob"))))
    return found


def completion_positions(logprobs, where: str) -> list[Position]:
    tops, tokens = field(logprobs, "top_logprobs"), field(logprobs, "tokens") or []
    chosen = field(logprobs, "token_logprobs") or []
    if not is_list(tops):
        raise InputError(f"{where}: logprobs.top_logprobs must be a list of {{token: logprob}}")
    found = []
    for i, top in enumerate(tops):
        if top is not None and not isinstance(top, Mapping):
            raise InputError(f"{where}: logprobs.top_logprobs[{i}] is not a {{token: logprob}} mapping")
        token = tokens[i] if i < len(tokens) else None
        listed = [(str(t), lp) for t, lp in (top or {}).items()]
        found.append((token, with_chosen(listed, token, chosen[i] if i < len(chosen) else None)))
    return found


def token_text(token_id, entry, tokenizer, where: str) -> str:
    """The text of a vLLM token: its Logprob's decoded_token, else the tokenizer's decode / convert_ids_to_tokens."""
    text = None if is_number(entry) else field(entry, "decoded_token")
    if text is not None:
        return str(text)
    if tokenizer is None:
        raise InputError(f"{where}: token id {token_id} has no decoded_token (vLLM run with detokenize=False?): "
                         "pass tokenizer= to read token ids")
    if hasattr(tokenizer, "decode"):
        return str(tokenizer.decode([token_id]))
    return str(tokenizer.convert_ids_to_tokens(token_id))


def token_id(key, where: str) -> int:
    try:
        return int(key)  # JSON keys are strings
    except (TypeError, ValueError):
        raise InputError(f"{where}: vLLM log-probs are keyed by token id, got {key!r}") from None


def vllm_positions(logprobs, token_ids, where: str, tokenizer) -> list[Position]:
    found = []
    for i, step in enumerate(logprobs):
        if not isinstance(step, Mapping):
            raise InputError(f"{where}: logprobs[{i}] is not a {{token_id: Logprob}} mapping")
        entries = {token_id(key, where): entry for key, entry in step.items()}
        top = [(token_text(tid, entry, tokenizer, where), entry if is_number(entry) else field(entry, "logprob"))
               for tid, entry in entries.items()]
        chosen = None
        if token_ids is not None and i < len(token_ids):
            tid = int(token_ids[i])
            chosen = (token_text(tid, entries[tid], tokenizer, where) if tid in entries else
                      token_text(tid, None, tokenizer, where) if tokenizer is not None else None)
        found.append((chosen, top))
    return found


def select(found: list[Position], position, where: str) -> list[tuple[str, Any]]:
    """The top log-probs at the answer position: None the last generated position, an int an index, a str
    the first position after the first occurrence of that marker in the generated text (matched on the
    tokens' concatenated text, so a marker may span tokens) that is not whitespace alone."""
    if not found:
        raise InputError(f"{where}: the response has no generated position")
    if position is None:
        return found[-1][1]
    if isinstance(position, int) and not isinstance(position, bool):
        if not -len(found) <= position < len(found):
            raise InputError(f"{where}: position {position} lies outside the {len(found)} generated positions")
        return found[position][1]
    texts = [text for text, _ in found]
    if any(text is None for text in texts):
        raise InputError(f"{where}: position={position!r} needs the generated tokens' text, which this "
                         "response does not hold (a {token: logprob} record, or vLLM output without token_ids)")
    generated = "".join(texts)  # type: ignore[arg-type]
    at = generated.find(position)
    if at < 0:
        raise InputError(f"{where}: marker {position!r} is not in the generated text {generated[-80:]!r}")
    end, start = at + len(position), 0
    for text, top in found:
        if start >= end and text.strip():  # type: ignore[union-attr]
            return top
        start += len(text)  # type: ignore[arg-type]
    raise InputError(f"{where}: nothing but whitespace is generated after the marker {position!r}")
