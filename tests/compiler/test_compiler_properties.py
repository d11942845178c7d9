"""Property tests of the compiler's guarantees over random memories, histories and budgets."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemoscope.compiler import ContextCompiler, MemoryItem, TokenizerRegistry, count_message_tokens

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=120)
words = st.text(alphabet="abcdefghij .,!?/\n\t'-:[]0123456789\u4e2d\u6587", min_size=1, max_size=80)
memory = st.builds(
    lambda i, content, tier, score: MemoryItem(id=f"id{i}", content=content, priority=tier, score=score),
    st.integers(0, 10_000), st.one_of(words, text), st.sampled_from([1, 2, 3]),
    st.one_of(st.none(), st.floats(0, 1)),
)
memories = st.lists(memory, max_size=25, unique_by=lambda m: m.id)
history = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text}),
                   max_size=8)
models = st.sampled_from(["openai/gpt-4o", "openai/gpt-4", "anthropic/claude-sonnet-4.5", None])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fresh(result, model):
    return count_message_tokens(result.messages, TokenizerRegistry.get().adapter(model))


@SETTINGS
@given(memories, history, text, text, st.integers(1, 3000), models, st.sampled_from(["end", "system"]))
def test_budget_verbatim_counts_and_tiers(mems, hist, rules, user, budget, model, placement):
    compiler = ContextCompiler(max_tokens=budget, model_id=model, core_content=rules, memory_placement=placement)
    result = compiler.compile(mems, user, hist)
    md = result.metadata
    # the count is exact and additive
    assert md["token_count"] == fresh(result, model) == sum(s.tokens for s in result.segments if s.kept)
    if not md["budget_exceeded"]:
        assert md["token_count"] <= md["tokens_budget"]
    everything = "".join(m["content"] if isinstance(m["content"], str) else "" for m in result.messages)
    assert rules in everything and user in everything
    # a lower-priority memory is kept while a higher-priority one is trimmed for budget
    # only when the trimmed one is too big for the room left and the kept one is smaller
    mem_segments = [s for s in result.segments if s.region == "memory"]
    for s in mem_segments:
        if not s.kept and s.reason == "over_budget":
            assert md["token_count"] + s.tokens > md["tokens_budget"]
            assert all(k.tokens < s.tokens for k in mem_segments if k.kept and k.tier > s.tier)
    # every [Mem:N] of a kept memory is in the ref map, and vice versa
    kept_refs = {s.ref for s in mem_segments if s.kept}
    assert set(result.ref_map) == kept_refs
    for n, rid in result.ref_map.items():
        assert f"[Mem:{n}]" in everything and mems[n - 1].id == rid


@SETTINGS
@given(memories, memories, history, text, st.integers(200, 3000))
def test_end_placement_prefix_is_byte_identical_across_turns(mems_a, mems_b, hist, rules, budget):
    compiler = ContextCompiler(max_tokens=budget, model_id="openai/gpt-4o", core_content=rules)
    a = compiler.compile(mems_a, "first question", hist)
    b = compiler.compile(mems_b, "second question", hist)
    n = a.metadata["stable_prefix_messages"]
    if a.metadata["history_messages_dropped"] == b.metadata["history_messages_dropped"]:
        assert a.messages[:n] == b.messages[:n]
    assert a.messages[0] == b.messages[0]


@SETTINGS
@given(memories, history, text, st.integers(1, 3000), st.integers(1, 3000))
def test_same_input_same_output_and_rebudget_equals_compile(mems, hist, user, budget, other):
    compiler = ContextCompiler(max_tokens=budget, model_id="openai/gpt-4o", core_content="Rules.")
    first = compiler.compile(mems, user, hist)
    assert first.to_json() == compiler.compile(mems, user, hist).to_json()
    assert first.rebudget(other).to_json() == compiler.compile(mems, user, hist, max_tokens=other).to_json()
