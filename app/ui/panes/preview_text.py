"""What the prompt preview shows, as plain functions of a compile result: the budget
slider's scale, the prompt as HTML with its citations linked, the comparison with a
pinned compile, the citations of a pasted answer, the prefix-cache simulation of a
conversation. No widgets here: the preview's panes call these and display the result."""

from __future__ import annotations

import html
import json
import math
import re

from ...bridge import PreviewRequest, compile_items, recall_for
from ...compiler import CompileResult, TokenizerRegistry
from ...compiler.cache import prefix_cache_reads, request_tokens
from ...compiler.layout import CITATION

MIN_BUDGET = 64
SLIDER_STEPS = 1000
WARN = "#D55E00"  # vermillion: reads on light and dark


# -- the budget slider: logarithmic, so small budgets get as much travel as large ones ----
def budget_for(position: int, cap: int) -> int:
    """Slider position (0..SLIDER_STEPS) → tokens, from MIN_BUDGET to ``cap``."""
    return int(round(MIN_BUDGET * (cap / MIN_BUDGET) ** (position / SLIDER_STEPS)))


def slider_for(tokens: int, cap: int) -> int:
    """Tokens → the slider position that shows them."""
    return int(round(SLIDER_STEPS * math.log(max(tokens, MIN_BUDGET) / MIN_BUDGET) / math.log(cap / MIN_BUDGET)))


# -- the prompt ------------------------------------------------------------------------
def messages_html(result: CompileResult) -> str:
    """The messages with each [Mem:N] linked to its memory (``mem:ID``), unknown ones in red."""
    parts = []
    for m in result.messages:
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1)

        def link(match: re.Match) -> str:
            rid = result.ref_map.get(int(match.group(1)))
            if rid is None:
                return f"<span style='color:{WARN}'>{match.group(0)}</span>"
            return (f"<a href='mem:{html.escape(rid)}' style='background-color:#f3ec8f; color:#222222; "
                    f"text-decoration:none'><b>{match.group(0)}</b></a>")

        body = CITATION.sub(link, html.escape(text)).replace("\n", "<br>")
        parts.append(f"<p><b style='color:#0072B2'>{html.escape(m['role'])}</b><br>{body}</p>")
    return "".join(parts)


def copied_message(fmt: str, messages: int, tokens: int) -> str:
    """What the status bar says after a copy: "Copied 2 OpenAI messages, 541 tokens"."""
    plural = "" if messages == 1 else "s"
    what = {"openai": f"{messages} OpenAI message{plural}",
            "anthropic": f"an Anthropic request ({messages} message{plural})",
            "text": f"the prompt as text ({messages} message{plural})"}[fmt]
    return f"Copied {what}, {tokens:,} tokens"


# -- compare with a pinned compile -----------------------------------------------------
def region_tokens(result: CompileResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in result.segments:
        if s.kept:
            out[s.region] = out.get(s.region, 0) + s.tokens
    return out


def compare(pinned: CompileResult, result: CompileResult) -> dict:
    """Memories that entered or left since ``pinned``, and token deltas per region."""
    before, after = set(pinned.ref_map.values()), set(result.ref_map.values())
    rb, ra = region_tokens(pinned), region_tokens(result)
    deltas = {r: ra.get(r, 0) - rb.get(r, 0) for r in sorted(set(rb) | set(ra))}
    return {"entered": sorted(after - before), "left": sorted(before - after), "deltas": deltas,
            "tokens": result.metadata["token_count"] - pinned.metadata["token_count"]}


def compare_html(diff: dict, texts: dict[str, str]) -> str:
    def items(ids):
        if not ids:
            return "<i>none</i>"
        def one(rid: str) -> str:
            text = texts.get(rid, "")
            text = text if len(text) <= 140 else text[:139] + "…"
            return f"<a href='mem:{html.escape(rid)}'>{html.escape(text) or html.escape(rid)}</a> " \
                   f"<small>({html.escape(rid)})</small>"

        return "<br>".join(one(i) for i in ids)

    deltas = " · ".join(f"{r} {d:+,}" for r, d in diff["deltas"].items() if d) or "no change"
    return (f"<p><b>Since the pinned compile:</b> {diff['tokens']:+,} tokens ({deltas})</p>"
            f"<p><b style='color:#009E73'>Entered ({len(diff['entered'])})</b><br>{items(diff['entered'])}</p>"
            f"<p><b style='color:{WARN}'>Left ({len(diff['left'])})</b><br>{items(diff['left'])}</p>")


# -- citations in a model's answer -----------------------------------------------------
def citations(answer: str, result: CompileResult, texts: dict[str, str]) -> list[tuple[int, str | None, str, str]]:
    """Each [Mem:N] in ``answer`` once: (N, record id or None, "ok"/"trimmed"/"unknown", label)."""
    trimmed = {s.ref: s.record_id for s in result.segments if s.ref is not None and not s.kept}
    found = []
    for n in dict.fromkeys(int(x) for x in CITATION.findall(answer)):
        if n in result.ref_map:
            rid = result.ref_map[n]
            found.append((n, rid, "ok", f"[Mem:{n}] → {rid}: {texts.get(rid, '')[:100]}"))
        elif n in trimmed:
            found.append((n, trimmed[n], "trimmed", f"[Mem:{n}] → {trimmed[n]} was trimmed: the model never saw it"))
        else:
            found.append((n, None, "unknown", f"[Mem:{n}] resolves to nothing: the prompt had no such memory"))
    return found


# -- the provider's prefix cache over a conversation -----------------------------------
def simulate_cache(store, request: PreviewRequest) -> list[tuple[int, int, int]]:
    """Compile every user turn of the conversation (recalling, writing nothing):
    (turn, request tokens, tokens a provider could read from its prefix cache)."""
    history = request.history
    turns = [(i, m["content"]) for i, m in enumerate(history) if m["role"] == "user"]
    turns.append((len(history), request.user_message))
    adapter = TokenizerRegistry.get().adapter(request.model_id)
    streams = []
    for index, message in turns:
        turn = PreviewRequest(**{**request.__dict__, "user_message": message, "history": history[:index]})
        _hits, items = recall_for(store, turn)
        streams.append(request_tokens(compile_items(turn, items).messages, adapter))
    reads = prefix_cache_reads(streams)
    return [(i + 1, len(s), r) for i, (s, r) in enumerate(zip(streams, reads))]


def cache_summary(rows: list[tuple[int, int, int]]) -> str:
    sent = sum(t for _, t, _ in rows)
    read = sum(x for _, _, x in rows)
    return (f"{read:,} of {sent:,} input tokens ({100 * read / max(sent, 1):.0f}%) "
            "could be read from the provider's prefix cache")


# -- what meaning adds: the topic shift and the near-duplicates ---------------------------
def meaning_html(result: CompileResult | None) -> str:
    """A line on the topic shift of the user message and the memories not sent as
    near-duplicates; "" when the compile had no embedder and nothing to say."""
    if result is None:
        return ""
    md = result.metadata
    parts = []
    if md.get("meaning_unavailable"):
        parts.append(f"<span style='color:{WARN}'>Meaning unavailable ({html.escape(md['meaning_unavailable'])}): "
                     "no topic shift or de-duplication</span>")
    shift = md.get("attention_shift")
    if shift:
        n = shift["recent_messages"]
        recent = "the last user message" if n == 1 else f"the last {n} user messages"
        how = f"cosine distance {shift['distance']:.2f} from {recent}; a shift is over {shift['threshold']:.2f}"
        if shift["shifted"]:
            parts.append(f"<b style='color:{WARN}'>Topic shift</b>: this message changes the subject ({how})")
        else:
            parts.append(f"Same subject ({how})")
    dedup = md.get("semantic_dedup")
    if dedup and dedup["dropped"]:
        def link(rid: str, ref: int) -> str:
            return f"<a href='mem:{html.escape(rid)}'>[Mem:{ref}]</a>"

        pairs = ", ".join(f"{link(d['record_id'], d['ref'])} repeats {link(d['duplicate_of'], d['duplicate_of_ref'])}"
                          f" (cosine {d['cosine']:.2f})" for d in dedup["dropped"])
        n = len(dedup["dropped"])
        parts.append(f"<b>{n} near-duplicate{'' if n == 1 else 's'} not sent</b>: {pairs}")
    return " · ".join(parts)
