"""The interrupt protocol: a model that lacks a detail asks for it instead of guessing.

The compiled system message tells the model to emit
``<SYSTEM_INTERRUPT_FETCH[precise query]>`` when the context is missing something;
the host detects the tag, retrieves, and continues.
"""

from __future__ import annotations

import re

INTERRUPT_TAG = "SYSTEM_INTERRUPT_FETCH"
# Where the memories are, by placement: with "end" they come with the latest user
# message, after these rules; with "system" they follow these rules in this message.
_WHERE = {
    "end": "the memories given with the latest user message",
    "system": "the memories below",
}


def interrupt_instruction(placement: str = "end") -> str:
    """The instruction that teaches the model the interrupt protocol, saying where the
    memories are for ``placement`` ("end" or "system")."""
    return (
        f"When {_WHERE[placement]} and the conversation do not contain a detail you need, "
        "do not guess or invent it. "
        f"Instead output exactly <{INTERRUPT_TAG}[your precise query for the missing detail]> "
        "and stop; the missing context will be fetched and the conversation continued."
    )


INTERRUPT_INSTRUCTION = interrupt_instruction("end")

_PATTERN = re.compile(r"<" + INTERRUPT_TAG + r"\[(.*?)\]>", re.DOTALL)


def contains_interrupt(text: str) -> bool:
    """True when ``text`` holds at least one complete fetch tag."""
    return bool(_PATTERN.search(text or ""))


def parse_interrupt(text: str) -> tuple[str, str, str] | None:
    """Split ``text`` at its first fetch tag: ``(before, query, after)``; None without a tag."""
    match = _PATTERN.search(text or "")
    if match is None:
        return None
    return text[: match.start()], match.group(1).strip(), text[match.end():]


def strip_all_interrupts(text: str) -> str:
    """``text`` with every fetch tag removed and the whitespace around it tidied."""
    cleaned = _PATTERN.sub("", text or "")
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()
