"""The U-shaped layout: rules first, memories in the middle, the current turn last.

Every piece of text the layout produces follows one rule that makes token counts
add up exactly: a piece that is followed by another ends with a newline, and every
piece after the first starts with a non-space character. Under both bundled encodings
no pre-token spans a newline followed by a non-space character, so the token count of
a message is the sum of the counts of its pieces, and the compiler can count each
memory line once and re-select at any budget without tokenizing again.
"""

from __future__ import annotations

import itertools
import numbers
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .interrupt import INTERRUPT_TAG, interrupt_instruction
from .types import TIER_BY_NAME, TIER_EPISODIC, TIER_NAMES, TIER_PROCEDURAL, TIER_SEMANTIC

TEXT_CAP_ENV = "MNEMOSCOPE_MEMORY_TEXT_MAX_CHARS"
TEXT_CAP_ENV_ALIASES = (TEXT_CAP_ENV, "MEMBRANE_MEMORY_TEXT_MAX_CHARS")  # the reference's name too
DEFAULT_TEXT_CAPS = {TIER_SEMANTIC: 200, TIER_EPISODIC: 280, TIER_PROCEDURAL: 500}
TIER_LABELS = {TIER_SEMANTIC: "fact", TIER_EPISODIC: "episode", TIER_PROCEDURAL: "procedure"}

USER_HEADER = "--- Current user message ---\n"
LAST_TURN_HEADER = "--- Last turn ({role}) ---\n"
DIRECTIVES_OPEN = "<ACTIVE_SYSTEM_DIRECTIVES>\n"
DIRECTIVES_CLOSE = "</ACTIVE_SYSTEM_DIRECTIVES>"

_WS = re.compile(r"\s+")
# A citation as the compiler writes it (memory_lines) and as everything above the compiler
# reads it back. store/agents/conversations.py keeps a twin: the store may not import the compiler.
CITATION = re.compile(r"\[Mem:(\d+)\]")
# What could pass for the compiler's own markers inside text it was given: a citation
# (any case, any spacing) and the opening of an interrupt tag.
_CITATION_LIKE = re.compile(r"\[\s*mem\s*:\s*(\d+)\s*\]", re.IGNORECASE)
_INTERRUPT_LIKE = re.compile(r"<(\s*" + INTERRUPT_TAG + ")", re.IGNORECASE)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace made one space, stripped: a memory is one line."""
    return _WS.sub(" ", text).strip()


def neutralise(text: str) -> str:
    """``text`` with anything that could pass for the compiler's markers made visibly
    inert: ``[Mem:3]`` becomes ``(Mem 3)`` and ``<SYSTEM_INTERRUPT_FETCH`` becomes
    ``«SYSTEM_INTERRUPT_FETCH``, so a memory can neither cite nor interrupt, and a reader
    still sees what was written."""
    if "[" in text:
        text = _CITATION_LIKE.sub(r"(Mem \1)", text)
    if "<" in text:
        text = _INTERRUPT_LIKE.sub(r"«\1", text)
    return text


def keep_apart(piece: str) -> str:
    """``piece`` made safe to follow a line: it never starts with ``/``. Under
    ``o200k_base`` a punctuation pre-token takes the newline *and* slashes after it,
    which would join the piece to the line before and make counts stop adding up; a
    leading space keeps them apart."""
    return " " + piece if piece.startswith("/") else piece


def as_line(text: str) -> str:
    """``text`` as one prompt line with its newline ("" when it has no text)."""
    line = keep_apart(one_line(text))
    return line + "\n" if line else ""


def middle_line(text: str) -> str:
    """A middle line from free text (an extra): one line, markers neutralised."""
    return as_line(neutralise(text))


def text_caps() -> dict[int, int | None]:
    """Per-tier character caps for memory text; ``MNEMOSCOPE_MEMORY_TEXT_MAX_CHARS`` (or
    the reference's ``MEMBRANE_MEMORY_TEXT_MAX_CHARS``) sets one cap for every tier, and
    0 turns capping off."""
    name, raw = next(((n, os.environ[n]) for n in TEXT_CAP_ENV_ALIASES if os.environ.get(n, "").strip()),
                     (TEXT_CAP_ENV, None))
    if raw is None:
        return dict(DEFAULT_TEXT_CAPS)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of characters, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be 0 (no cap) or positive, got {value}")
    cap = value or None
    return {TIER_SEMANTIC: cap, TIER_EPISODIC: cap, TIER_PROCEDURAL: cap}


def cap_text(text: str, cap: int | None) -> tuple[str, bool]:
    """Shorten ``text`` to at most ``cap`` characters, ending in an ellipsis."""
    if cap is None or len(text) <= cap:
        return text, False
    return text[: max(cap - 1, 0)].rstrip() + "…", True


def tier_of(memory: Any, override: Any = None, field: str = "priority") -> int:
    """The tier of a memory: an explicit override, its ``priority``, else its type
    (``memory_type`` or ``memory_kind``, any case; unknown types are semantic).
    ``field`` names the value in the error."""
    if override is not None:
        tier = override
    else:
        tier = getattr(memory, "priority", None)
        if tier is None:
            kind = getattr(memory, "memory_type", None) or getattr(memory, "memory_kind", None) or "semantic"
            tier = TIER_BY_NAME.get(kind)  # the usual spelling, before lower-casing
            return tier if tier is not None else TIER_BY_NAME.get(str(kind).lower(), TIER_SEMANTIC)
    if type(tier) is int and tier in TIER_NAMES:
        return tier
    if isinstance(tier, numbers.Integral) and not isinstance(tier, bool) and int(tier) in TIER_NAMES:
        return int(tier)
    raise ValueError(f"{field} must be 1 (procedural), 2 (semantic) or 3 (episodic), got {tier!r}")


def kind_label(kind: Any, tier: int) -> str:
    """The bracketed label of a memory line: its kind, else its tier's label."""
    return neutralise(f"[{(one_line(kind) if kind else '') or TIER_LABELS[tier]}]")


def memory_lines(contents: Sequence[str], tiers: Sequence[int], kinds: Sequence[Any],
                 caps: dict[int, int | None], start: int = 1) -> tuple[list[str], list[bool]]:
    """The prompt lines of memories cited ``start``, ``start + 1``...: each text made one
    line, capped to its tier's characters and neutralised, after its citation and label
    (:func:`kind_label`); and whether each text was shortened. Column at a time: a cold
    compile of thousands of memories spends most of its Python time here."""
    texts = list(contents) if _all_one_line(contents) else list(map(" ".join, map(str.split, contents)))
    truncated = [False] * len(texts)
    limits = [c for c in caps.values() if c is not None]
    if limits and max(map(len, texts), default=0) > min(limits):
        for i, text in enumerate(texts):
            cap = caps[tiers[i]]
            if cap is not None and len(text) > cap:
                texts[i], truncated[i] = cap_text(text, cap)
    joined = "".join(texts)
    if "[" in joined or "<" in joined:
        texts = [neutralise(t) if "[" in t or "<" in t else t for t in texts]
    keys = list(zip(kinds, tiers))
    labels = {key: kind_label(*key) for key in set(keys)}
    lines = [f"[Mem:{n}] {label} {text}\n" for n, label, text in zip(
        itertools.count(start), map(labels.__getitem__, keys), texts)]
    return lines, truncated


def _all_one_line(texts: Sequence[str]) -> bool:
    """Whether :func:`one_line` would leave every text as it is: checked on the texts'
    bytes at once when they are ASCII (the usual case), as splitting and joining each
    text costs more than the rest of laying out its line."""
    joined = "\x00".join(texts)
    if not joined or not joined.isascii():
        return False
    import numpy as np

    b = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    if (((b >= 9) & (b <= 13)) | ((b >= 28) & (b <= 31))).any():  # ASCII whitespace but the space
        return False
    space = b == 32
    space_or_gap = space | (b == 0)  # NUL stands between two texts (or inside one: then we split)
    return not (space[0] or space[-1] or (space[1:] & space_or_gap[:-1]).any()
                or (space_or_gap[1:] & space[:-1]).any())


def build_core(core_content: str, agent_persona_prompt: str | None = None, include_interrupt: bool = True,
               placement: str = "end") -> str:
    parts = [p for p in (core_content, agent_persona_prompt) if p]
    if include_interrupt:
        parts.append(interrupt_instruction(placement))
    return "\n\n".join(parts)


def content_text(content: Any) -> str:
    """The text of a message's content: the string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def history_text(message: dict[str, Any]) -> str:
    return content_text(message.get("content"))


def build_end(user_message: str, last_turn: tuple[str, str] | None, directives: bool) -> str:
    """The end region: the last turn (if any) and the current user message; ends in a
    newline when the directives block follows it."""
    head = ""
    if last_turn is not None:
        role, text = last_turn
        head = LAST_TURN_HEADER.format(role=role) + text + "\n"
    return head + USER_HEADER + user_message + ("\n" if directives else "")


def build_directives(directives: Sequence[str] | str | None) -> str:
    if not directives:
        return ""
    if not isinstance(directives, (str, list, tuple)):
        raise TypeError(f"dynamic_directives must be a str or a list of str, got {type(directives).__name__}")
    items = [directives] if isinstance(directives, str) else list(directives)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"dynamic_directives[{i}] must be a str, got {type(item).__name__}")
    body = "".join(item.rstrip("\n") + "\n" for item in items if item.strip())
    return DIRECTIVES_OPEN + body + DIRECTIVES_CLOSE if body else ""


def refs_in(text: str) -> list[int]:
    """Every ``[Mem:N]`` number in ``text``, in order."""
    return [int(n) for n in CITATION.findall(text)]


def _content(memory: Any) -> Any:
    content = getattr(memory, "content", None)
    return getattr(memory, "text", "") if content is None else content


class ContextLayoutEngine:
    """Builds the three regions of a U-shaped prompt as plain text.

    ``build_core`` gives the rules (with persona and interrupt instruction),
    ``build_middle`` serialises (memory, tier) pairs into ``[Mem:N]`` lines with a
    ref map, ``build_end`` gives the last turn and the current user message.
    """

    def __init__(
        self,
        core_content: str = "",
        *,
        agent_persona_prompt: str | None = None,
        include_interrupt_instruction: bool = True,
    ) -> None:
        self.core_content = core_content
        self.agent_persona_prompt = agent_persona_prompt
        self.include_interrupt_instruction = include_interrupt_instruction

    def build_core(self) -> str:
        return build_core(self.core_content, self.agent_persona_prompt, self.include_interrupt_instruction)

    def build_middle(
        self, retrieved: Iterable[tuple[Any, int]], start: int = 1
    ) -> tuple[list[tuple[str, int]], dict[int, str], dict[int, str]]:
        items = [(memory, tier_of(memory, tier)) for memory, tier in retrieved]
        contents = [str(_content(memory)) for memory, _ in items]
        tiers = [tier for _, tier in items]
        lines, _ = memory_lines(contents, tiers, [getattr(m, "kind", None) for m, _ in items], text_caps(), start)
        middle = [(line.rstrip("\n"), tier) for line, tier in zip(lines, tiers)]
        refs = range(start, start + len(items))
        ref_map = {n: str(memory.id) for n, (memory, _) in zip(refs, items)}
        ref_map_type = {n: TIER_NAMES[tier] for n, tier in zip(refs, tiers)}
        return middle, ref_map, ref_map_type

    def build_end(
        self,
        last_turn_content: str | None = None,
        user_message: str = "",
        dynamic_directives: Sequence[str] | str | None = None,
    ) -> str:
        directives = build_directives(dynamic_directives)
        last = ("assistant", last_turn_content) if last_turn_content else None
        return build_end(user_message, last, bool(directives)) + directives
