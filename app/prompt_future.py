"""The prompt's future: the prompt an agent would send for the same message on a later
day, and what changed against today — which memories leave it, which enter, and the
tokens and cost.

Strength is a pure function of stored inputs and time, so recalling "as of" a day ahead
is recalling with ``now`` moved: memories fade, some are archived (out of recall), others
rise in rank. Nothing is written and nothing is reinforced (recall runs without
``reinforce``). No Qt: the window's preview and ``mnemoscope preview --in-days`` share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemoscope.store import MemoryStore, StoreError
from mnemoscope.store.forgetting import decay as store_decay

from .bridge import Preview, PreviewRequest, preview

# Why a memory that is in today's prompt is not in the later one.
ARCHIVED = "archived"      # untouched too long: out of recall altogether
NOT_RECALLED = "weaker"    # faded below what the recall's top k takes
TRIMMED = "trimmed"        # recalled, but the budget has no room for it then
GONE = "deleted"           # not in the store


@dataclass(frozen=True)
class Change:
    """One memory that leaves or enters the prompt between today and the later day."""

    id: str
    text: str
    kind: str
    pinned: bool
    strength_now: float
    strength_then: float
    layer_now: str
    layer_then: str
    reason: str = ""  # for a memory that leaves: ARCHIVED, NOT_RECALLED, TRIMMED or GONE
    # Days from today to the last change of its layer up to the later day (the day it is
    # archived, or fades into the edge), or None when its layer stays as it is: the rank
    # and the budget decide then, and the later day is all that can be said.
    when: float | None = None


@dataclass
class PromptFuture:
    days: float
    today: Preview
    then: Preview
    left: list[Change] = field(default_factory=list)
    entered: list[Change] = field(default_factory=list)

    @property
    def tokens_now(self) -> int:
        return self.today.result.metadata["token_count"]

    @property
    def tokens_then(self) -> int:
        return self.then.result.metadata["token_count"]

    def billed(self, which: str) -> int:
        return getattr(self, which).result.metadata["billed_input_tokens"]

    def cost_delta(self, price_per_1k: float) -> float:
        """What one such prompt costs more (negative: less) then than today, in dollars."""
        return (self.billed("then") - self.billed("today")) / 1000 * price_per_1k

    def sentences(self) -> list[str]:
        """The change in words, one line per memory: "In 60 days the agent will no longer be
        told: Mara is allergic to peanuts (archived)"."""
        when = day_words(self.days)
        out = [f"{when} the agent will no longer be told: {c.text} ({REASON_WORDS[c.reason]})" for c in self.left]
        out += [f"{when} the agent will be told: {c.text}" for c in self.entered]
        return out

    def to_dict(self, price_per_1k: float = 0.0) -> dict[str, Any]:
        def change(c: Change) -> dict[str, Any]:
            return {"id": c.id, "text": c.text, "kind": c.kind, "pinned": c.pinned, "reason": c.reason,
                    "strength_now": round(c.strength_now, 4), "strength_then": round(c.strength_then, 4),
                    "layer_now": c.layer_now, "layer_then": c.layer_then,
                    "when_days": None if c.when is None else round(c.when, 2)}

        return {"days": self.days, "tokens_now": self.tokens_now, "tokens_then": self.tokens_then,
                "billed_now": self.billed("today"), "billed_then": self.billed("then"),
                "cost_delta": round(self.cost_delta(price_per_1k), 6),
                "left": [change(c) for c in self.left], "entered": [change(c) for c in self.entered],
                "ref_map_then": {str(n): rid for n, rid in self.then.result.ref_map.items()}}


REASON_WORDS = {ARCHIVED: "archived by then", NOT_RECALLED: "too faded to be recalled",
                TRIMMED: "trimmed: no room in the budget", GONE: "deleted", "": "entered"}


def day_words(days: float) -> str:
    n = f"{days:g}"
    return "In 1 day" if days == 1 else f"In {n} days"


def prompt_future(store: MemoryStore, request: PreviewRequest, days: float, now: Any = None, *,
                  explain: bool = False) -> PromptFuture:
    """Recall and compile ``request`` today (``now``) and ``days`` later, writing nothing,
    and say which memories leave the prompt and which enter (``explain``: each recalled
    memory says why it was)."""
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 <= days <= 36500:
        raise StoreError(f"days ahead must be a number from 0 to 36500, got {days!r}")
    start = store.now(now)
    later = start + days * store_decay.DAY
    today = preview(store, request, start, explain=explain)
    then = preview(store, request, later, explain=explain)
    before, after = set(today.result.ref_map.values()), set(then.result.ref_map.values())
    recalled_then = {h.id for h in then.hits}
    future = PromptFuture(days, today, then)
    order = {rid: i for i, rid in enumerate(today.result.ref_map.values())}
    for rid in sorted(before - after, key=order.get):
        change = _change(store, rid, start, later)
        if change is None:
            future.left.append(Change(rid, "", "", False, 0.0, 0.0, "", "", GONE))
            continue
        reason = ARCHIVED if change.layer_then == "archived" else TRIMMED if rid in recalled_then else NOT_RECALLED
        future.left.append(Change(**{**change.__dict__, "reason": reason}))
    later_order = {rid: i for i, rid in enumerate(then.result.ref_map.values())}
    for rid in sorted(after - before, key=later_order.get):
        change = _change(store, rid, start, later)
        if change is not None:
            future.entered.append(change)
    return future


def _change(store: MemoryStore, memory_id: str, start: float, later: float) -> Change | None:
    try:
        memory = store.get(memory_id)
    except StoreError:
        return None
    row = memory.to_dict()
    cfg = store.config.decay
    s_now, l_now = store_decay.state_at(row, start, cfg)
    s_then, l_then = store_decay.state_at(row, later, cfg)
    return Change(memory.id, memory.text, memory.kind, memory.pinned, s_now, s_then, l_now, l_then,
                  when=_last_layer_change(row, start, later, cfg))


def _last_layer_change(row: dict, start: float, later: float, cfg: Any) -> float | None:
    """Days from ``start`` to the last change of the memory's layer up to ``later`` (a
    layer changes at most three times: into fading, into the edge, into the archive)."""
    at, last = start, None
    for _ in range(len(store_decay.LAYERS)):
        moment = store_decay.next_change(row, at, cfg)
        if moment is None or moment > later:
            break
        at = last = moment
    return None if last is None else (last - start) / store_decay.DAY


def when_words(change: Change, days: float) -> str:
    """When the change happens, as the Future list says it: "day 41" for a layer change the
    clock alone decides, else "by day 60" (the day looked at)."""
    if change.when is not None:
        return f"day {max(change.when, 0):.0f}"
    return f"by day {days:g}"
