"""Profiles: named presets of the compiler's options, for the usual kinds of agent.

A profile only chooses values for options that exist anyway (``memory_placement``,
``include_interrupt_instruction``, ``trim_history``, ``reserve_output_tokens``,
``semantic_dedup``), so
``mnemoscope profile explain NAME`` can say exactly what it does, and anything passed
explicitly wins over the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .capabilities import model_capabilities


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    options: dict[str, Any] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    # The output reserve as a share of the model's window (a long answer needs room).
    reserve_share: float | None = None

    def options_for(self, model_id: str | None) -> dict[str, Any]:
        """The ``ContextCompiler`` options this profile sets for ``model_id``."""
        options = dict(self.options)
        cap = model_capabilities(model_id).context_cap
        if self.reserve_share is not None and cap is not None:
            options["reserve_output_tokens"] = int(cap * self.reserve_share)
        return options

    def explain(self, model_id: str | None = None) -> str:
        lines = [f"{self.name}: {self.summary}"]
        options = self.options_for(model_id)
        if self.reserve_share is not None and "reserve_output_tokens" not in options:
            lines.append(f"  reserve_output_tokens = {self.reserve_share:.0%} of the model's window "
                         "(no window known without a model)")
        for key, value in options.items():
            lines.append(f"  {key} = {value!r}")
            if key in self.reasons:
                lines.append(f"      {self.reasons[key]}")
        if not options and self.reserve_share is None:
            lines.append("  every option at its default")
        return "\n".join(lines)


DEDUP_REASON = ("with an embedder, of two memories that say the same thing only the better is sent "
                "(a negation or a different number is not the same thing)")

PROFILES: dict[str, Profile] = {
    "minimal": Profile(
        "minimal",
        "the defaults: memories after the cached rules and history, the interrupt instruction, "
        "history dropped oldest first in chunks, the output reserve from the capability map",
    ),
    "coding": Profile(
        "coding",
        "for coding agents: long answers, and a model that asks rather than guesses",
        options={"memory_placement": "end", "include_interrupt_instruction": True, "trim_history": True,
                 "semantic_dedup": True},
        reasons={
            "include_interrupt_instruction": "a coding agent should fetch a missing detail (a path, a version) "
                                             "instead of inventing it",
            "reserve_output_tokens": "code and diffs are long: a quarter of the window stays free for the answer",
            "semantic_dedup": DEDUP_REASON,
        },
        reserve_share=0.25,
    ),
    "conversational": Profile(
        "conversational",
        "for chat companions: short answers from what is already known, the conversation kept cached",
        options={"memory_placement": "end", "include_interrupt_instruction": False, "trim_history": True,
                 "reserve_output_tokens": 1024, "semantic_dedup": True},
        reasons={
            "include_interrupt_instruction": "a companion answers from the memories it has; pausing to fetch "
                                             "breaks the conversation",
            "reserve_output_tokens": "chat replies are short, so more of the window goes to memories",
            "semantic_dedup": DEDUP_REASON,
        },
    ),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name`` (minimal, coding or conversational)."""
    profile = PROFILES.get(name.strip().lower()) if isinstance(name, str) else None
    if profile is None:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {name!r}")
    return profile
