import asyncio
import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mnemoscope.compiler import (
    INTERRUPT_INSTRUCTION,
    TIER_EPISODIC,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    ContextCompiler,
    ContextLayoutEngine,
    MemoryItem,
    PreFlightContextFirewall,
    SemanticMemory,
    TiktokenAdapter,
    TokenizerRegistry,
    anthropic_system_blocks,
    build_system_messages,
    compile_prompt_async,
    contains_interrupt,
    count_message_tokens,
    count_tokens,
    get_context_cap_for_model,
    glaciate,
    has_prompt_caching,
    parse_interrupt,
    strip_all_interrupts,
)
from mnemoscope.compiler.layout import memory_lines, neutralise, one_line

O200K = TokenizerRegistry.get().adapter("openai/gpt-4o")


def fresh_count(result):
    return count_message_tokens(result.messages, TokenizerRegistry.get().adapter(result.metadata["model_id"]))


def support_memories():
    return [
        MemoryItem(id="howto", content="Escalate refunds over $500 to a human.", memory_type="procedural", priority=1),
        MemoryItem(id="fact", content="Customer is on the Pro plan.", memory_type="semantic", priority=2),
        *[MemoryItem(id=f"ep{i}", content=f"Earlier ticket #{i} about a billing question, resolved by email.",
                     memory_type="episodic", priority=3) for i in range(10)],
    ]


def test_quickstart_shape_and_ref_map():
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o", core_content="You are a helpful assistant.")
    memories = [
        MemoryItem(id="1", content="User prefers concise answers.", memory_type="semantic", priority=2),
        MemoryItem(id="2", content="Also discussed asyncio yesterday.", memory_type="semantic", priority=2),
    ]
    result = compiler.compile(memories=memories, user_message="Show a producer-consumer example.")
    system, user = result.messages
    assert system["role"] == "system" and system["content"].startswith("You are a helpful assistant.")
    assert INTERRUPT_INSTRUCTION in system["content"]
    assert user["role"] == "user"
    assert user["content"].index("[Mem:1]") < user["content"].index("[Mem:2]") < user["content"].index(
        "Show a producer-consumer example.")
    assert result.ref_map == {1: "1", 2: "2"}
    assert result.metadata["token_count"] == fresh_count(result)
    assert result.metadata["tokenizer"] == "o200k_base" and result.metadata["token_count_exact"] is True


def test_interrupt_instruction_can_be_left_out():
    compiler = ContextCompiler(max_tokens=500, core_content="Rules.", include_interrupt_instruction=False)
    assert compiler.compile([], "hi").messages[0]["content"] == "Rules."


def test_history_is_sent_as_real_messages_untouched():
    history = [
        {"role": "user", "content": "What's a good queue for asyncio?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "asyncio.Queue"},
        {"role": "user", "content": [{"type": "text", "text": "and a picture"},
                                     {"type": "image_url", "image_url": {"url": "data:,"}}]},
        {"role": "assistant", "content": "asyncio.Queue is the standard choice."},
    ]
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o", core_content="You are helpful.")
    result = compiler.compile([MemoryItem(id="pref-42", content="User prefers concise answers.")],
                              "Show me a producer-consumer example.", history)
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "tool", "user", "assistant",
                                                    "user"]
    assert result.messages[1:-1] == history
    assert result.metadata["stable_prefix_messages"] == 6
    assert result.metadata["token_count"] == fresh_count(result)


def test_tier_trimming_keeps_procedural_and_semantic_and_stays_in_budget():
    compiler = ContextCompiler(max_tokens=200, core_content="You are a support agent.")
    result = compiler.compile(memories=support_memories(), user_message="Can I get a refund?")
    md = result.metadata
    assert md["token_count"] <= md["tokens_budget"] == 200
    assert "howto" in result.ref_map.values() and "fact" in result.ref_map.values()
    assert md["segments_kept"] < md["segments_offered"] == 12
    trimmed = [s for s in result.segments if s.region == "memory" and not s.kept]
    assert trimmed and all(s.tier == TIER_EPISODIC and s.reason == "over_budget" for s in trimmed)
    # later episodes go first when scores tie
    kept_eps = [s.record_id for s in result.segments if s.kept and s.tier == TIER_EPISODIC]
    assert kept_eps == [f"ep{i}" for i in range(len(kept_eps))]


def test_kept_memories_are_emitted_in_tier_order_but_numbered_in_input_order():
    mems = [
        MemoryItem(id="e", content="An episode.", memory_type="episodic"),
        MemoryItem(id="s", content="A fact.", memory_type="semantic"),
        MemoryItem(id="p", content="A procedure.", memory_type="procedural"),
    ]
    result = ContextCompiler(max_tokens=4000).compile(mems, "go")
    text = result.messages[-1]["content"]
    assert text.index("[Mem:3]") < text.index("[Mem:2]") < text.index("[Mem:1]")
    assert result.ref_map == {1: "e", 2: "s", 3: "p"}
    assert result.ref_map_type == {1: "episodic", 2: "semantic", 3: "procedural"}


def test_at_most_three_procedural_memories_are_kept_best_scores_first():
    mems = [MemoryItem(id=f"p{i}", content=f"Step {i}.", memory_type="procedural", score=i) for i in range(5)]
    result = ContextCompiler(max_tokens=4000).compile(mems, "go")
    assert sorted(result.ref_map.values()) == ["p2", "p3", "p4"]
    capped = [s.record_id for s in result.segments if s.reason == "procedural_cap"]
    assert sorted(capped) == ["p0", "p1"]


def test_lowest_score_in_a_tier_is_trimmed_first():
    mems = [MemoryItem(id=f"s{i}", content=f"Fact number {i} about the customer account.", score=s)
            for i, s in enumerate([0.9, 0.1, 0.5, 0.7])]
    base = ContextCompiler(max_tokens=4000).compile(mems, "q")
    per = base.segments[1].tokens
    tight = base.rebudget(base.metadata["token_count"] - per)
    assert set(tight.ref_map.values()) == {"s0", "s2", "s3"}
    tighter = base.rebudget(base.metadata["token_count"] - 3 * per)
    assert set(tighter.ref_map.values()) == {"s0"}


def test_text_caps_by_kind_and_env_override(monkeypatch):
    long = "word " * 200
    mems = [MemoryItem(id="s", content=long), MemoryItem(id="e", content=long, memory_type="episodic"),
            MemoryItem(id="p", content=long, memory_type="procedural")]
    result = ContextCompiler(max_tokens=8000).compile(mems, "q")
    lines = {s.record_id: s for s in result.segments if s.region == "memory"}
    assert lines["s"].truncated and lines["s"].reason == "text_truncated"
    body = {k: s.text.split("] ", 2)[2].rstrip("\n") for k, s in lines.items()}
    assert (len(body["s"]), len(body["e"]), len(body["p"])) == (200, 280, 500)
    assert result.metadata["memories_truncated"] == 3
    monkeypatch.setenv("MNEMOSCOPE_MEMORY_TEXT_MAX_CHARS", "0")
    result = ContextCompiler(max_tokens=8000).compile(mems, "q")
    assert result.metadata["memories_truncated"] == 0
    monkeypatch.setenv("MNEMOSCOPE_MEMORY_TEXT_MAX_CHARS", "lots")
    with pytest.raises(ValueError, match="MNEMOSCOPE_MEMORY_TEXT_MAX_CHARS"):
        ContextCompiler(max_tokens=8000).compile(mems, "q")


def test_budget_is_capped_by_the_models_context_window():
    result = ContextCompiler(max_tokens=1_000_000, model_id="openai/gpt-4").compile([], "hi")
    md = result.metadata
    # the window holds the prompt, the chat format around it and the reply's reserve
    assert md["tokens_budget"] == 8192 - md["reserve_output_tokens"] - md["message_overhead_tokens"]
    unknown = ContextCompiler(max_tokens=1_000_000, model_id="acme/brand-new").compile([], "hi")
    assert unknown.metadata["tokens_budget"] == 1_000_000


def test_history_dropped_oldest_first_in_chunks_and_prefix_stays_stable():
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "blah " * 40}
               for i in range(30)]
    compiler = ContextCompiler(max_tokens=900, model_id="openai/gpt-4o", core_content="Rules.")
    result = compiler.compile([], "now", history)
    md = result.metadata
    assert md["history_messages_dropped"] > 0 and md["history_messages_dropped"] % 8 == 0
    assert result.messages[1] == history[md["history_messages_dropped"]]
    assert md["token_count"] <= 900 and md["token_count"] == fresh_count(result)
    dropped = [s for s in result.segments if s.reason == "history_dropped"]
    assert len(dropped) == md["history_messages_dropped"]
    # the next turn keeps the same prefix while it fits
    nxt = compiler.compile([], "later", history + [{"role": "user", "content": "now"},
                                                   {"role": "assistant", "content": "ok"}])
    assert nxt.messages[: md["stable_prefix_messages"]] == result.messages[: md["stable_prefix_messages"]]


def test_trim_history_false_reports_budget_exceeded():
    history = [{"role": "user", "content": "blah " * 400}]
    result = ContextCompiler(max_tokens=300, trim_history=False).compile(
        [MemoryItem(id="a", content="x")], "q", history)
    assert result.metadata["budget_exceeded"] is True
    assert result.messages[1:2] == history and result.ref_map == {}


def test_system_placement_single_message_with_last_turn():
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "the last reply"}]
    compiler = ContextCompiler(max_tokens=4000, core_content="Rules.", memory_placement="system",
                               model_id="llama3.1:8b")
    result = compiler.compile([MemoryItem(id="m", content="A fact.")], "question?", history)
    assert len(result.messages) == 1 and result.messages[0]["role"] == "system"
    content = result.messages[0]["content"]
    assert content.startswith("Rules.") and "[Mem:1]" in content and "the last reply" in content
    assert "first" not in content
    assert result.metadata["prompt_cache_used"] is False and result.metadata["token_count_exact"] is False
    assert result.metadata["token_count"] == fresh_count(result)


def test_persona_directives_extras_and_last_assistant_turn():
    compiler = ContextCompiler(max_tokens=4000, core_content="Rules.")
    result = compiler.compile(
        [MemoryItem(id="m", content="A fact.")], "question?",
        last_assistant_turn="Earlier answer.", agent_persona_prompt="You are Quill.",
        dynamic_directives=["Answer in French."], middle_extras=[("Extra context line.", TIER_EPISODIC)],
    )
    system, user = result.messages
    assert system["content"].startswith("Rules.\n\nYou are Quill.")
    body = user["content"]
    assert body.index("[Mem:1]") < body.index("Extra context line.") < body.index("Earlier answer.") < body.index(
        "question?") < body.index("<ACTIVE_SYSTEM_DIRECTIVES>")
    assert body.endswith("</ACTIVE_SYSTEM_DIRECTIVES>")
    regions = [s.region for s in result.segments]
    assert regions == ["core", "memory", "extra", "end", "directives"]
    assert result.metadata["token_count"] == fresh_count(result)


def test_segments_add_up_and_rebudget_matches_a_fresh_compile():
    history = [{"role": "user", "content": "hello " * 30}, {"role": "assistant", "content": "hi! " * 20}]
    mems = [MemoryItem(id=f"m{i}", content=f"Memory {i}: the user said something notable. " * (1 + i % 3),
                       memory_type=("semantic", "episodic", "procedural")[i % 3], score=(i * 7) % 5)
            for i in range(40)]
    compiler = ContextCompiler(max_tokens=4000, model_id="openai/gpt-4o", core_content="Rules " * 50)
    first = compiler.compile(mems, "question", history)
    for budget in (4000, 1500, 900, 600):
        again = first.rebudget(budget)
        direct = compiler.compile(mems, "question", history, max_tokens=budget)
        assert again.messages == direct.messages and again.ref_map == direct.ref_map
        assert again.metadata == direct.metadata
        kept = sum(s.tokens for s in again.segments if s.kept)
        assert kept == again.metadata["token_count"] == fresh_count(again)


def test_rebudget_does_not_tokenize_again(monkeypatch):
    compiler = ContextCompiler(max_tokens=2000, model_id="openai/gpt-4o")
    result = compiler.compile([MemoryItem(id=f"m{i}", content=f"fact {i}") for i in range(50)], "q")
    monkeypatch.setattr(O200K.encoding, "encode_ordinary", lambda t: pytest.fail("re-tokenized " + t))
    assert result.rebudget(100).metadata["token_count"] <= 100


def test_metadata_keys_and_message_overhead():
    result = ContextCompiler(max_tokens=4000, model_id="openai/gpt-4o").compile([MemoryItem(id="a", content="x")], "q")
    for key in ("token_count", "tokens_budget", "tokens_trimmed", "segments_offered", "segments_kept",
                "memories_truncated", "retrieval_summary", "memory_placement", "stable_prefix_messages",
                "history_messages_dropped", "prompt_cache_used", "cacheable_prefix_tokens", "dynamic_tail_tokens",
                "budget_exceeded", "tokenizer", "token_count_exact", "message_overhead_tokens"):
        assert key in result.metadata
    # the cookbook's rule: 3 per message plus its role's tokens, and 3 for the reply
    assert result.metadata["message_overhead_tokens"] == (3 + 1) * 2 + 3
    json.dumps(result.to_debug_dict())


def test_prompt_cache_used_needs_a_caching_model_and_1024_prefix_tokens():
    long_rules = "Always be precise and cite memories. " * 200
    on = ContextCompiler(max_tokens=20000, model_id="openai/gpt-4o", core_content=long_rules).compile([], "q")
    assert on.metadata["prompt_cache_used"] is True and on.metadata["cacheable_prefix_tokens"] >= 1024
    off = ContextCompiler(max_tokens=20000, model_id="openai/gpt-4o", core_content=long_rules).compile(
        [], "q", use_prompt_caching_split=False)
    assert off.metadata["prompt_cache_used"] is False
    local = ContextCompiler(max_tokens=20000, model_id="llama3.1:8b", core_content=long_rules).compile([], "q")
    assert local.metadata["prompt_cache_used"] is False


def test_ref_map_citations_resolve():
    compiler = ContextCompiler(max_tokens=4096)
    result = compiler.compile(memories=[MemoryItem(id="doc-381", content="The refund window is 30 days."),
                                        MemoryItem(id="doc-112", content="Refunds go back to the original card.")],
                              user_message="How long do I have to request a refund?")
    answer = "You have 30 days [Mem:1], refunded to your original card [Mem:2]."
    assert [result.ref_map[int(n)] for n in re.findall(r"\[Mem:(\d+)\]", answer)] == ["doc-381", "doc-112"]
    assert result.ref_map_type[1] == "semantic"


def test_capability_map_lookups_and_override(tmp_path, monkeypatch, caplog):
    assert has_prompt_caching("gpt-4o")
    assert get_context_cap_for_model("anthropic/claude-sonnet-4.5") == 200_000
    assert get_context_cap_for_model("openai/gpt-4o-2024-08-06") == 128_000
    assert get_context_cap_for_model("OpenAI/GPT-4o") == 128_000
    assert get_context_cap_for_model("claude-3-5-sonnet-20240620") == 200_000
    with caplog.at_level("WARNING"):
        assert get_context_cap_for_model("acme/mystery-9") is None
        assert get_context_cap_for_model("acme/mystery-9") is None
    assert sum("acme/mystery-9" in r.message for r in caplog.records) == 1
    custom = tmp_path / "map.json"
    custom.write_text(json.dumps({"capabilities": {"acme/tiny": {"prompt_caching": True}},
                                  "context_caps": {"acme/tiny": 1000}}))
    monkeypatch.setenv("MNEMOSCOPE_CAPABILITY_MAP", str(custom))
    assert get_context_cap_for_model("tiny") == 1000 and has_prompt_caching("acme/tiny")
    assert get_context_cap_for_model("openai/gpt-4o") is None
    custom.write_text("{not json")
    monkeypatch.setenv("MNEMOSCOPE_CAPABILITY_MAP", str(tmp_path / "other.json"))
    with pytest.raises(ValueError, match="cannot read capability map"):
        get_context_cap_for_model("x")


def test_the_capability_map_gives_list_prices_and_refuses_a_bad_one():
    from mnemoscope.compiler.capabilities import CapabilityMap, CapabilityMapError, model_capabilities

    assert model_capabilities("gpt-4o").input_price_per_1k == pytest.approx(0.0025)
    assert model_capabilities("claude-sonnet-4-5").input_price_per_1k == pytest.approx(0.003)
    assert model_capabilities("llama3.2").input_price_per_1k == 0
    assert model_capabilities("acme/mystery-9").input_price_per_1k is None
    for bad in (-1, "0.002", True, float("inf")):
        with pytest.raises(CapabilityMapError, match="input_price_per_1k"):
            CapabilityMap({"capabilities": {"a/b": {"input_price_per_1k": bad}}, "context_caps": {}})


def test_anthropic_and_openai_provider_shapes():
    compiler = ContextCompiler(max_tokens=8192, model_id="anthropic/claude-sonnet-4.5",
                               core_content="You are a helpful assistant.")
    result = compiler.compile(memories=[MemoryItem(id="1", content="User is in Lagos.")],
                              user_message="What time zone am I in?")
    system, *messages = result.messages
    blocks = anthropic_system_blocks(system["content"], "")
    assert blocks == [{"type": "text", "text": system["content"], "cache_control": {"type": "ephemeral"}}]
    assert [m["role"] for m in messages] == ["user"]
    msgs, hint = build_system_messages("openai/gpt-4o", "prefix", "tail")
    assert msgs == [{"role": "system", "content": "prefix"}, {"role": "system", "content": "tail"}]
    assert hint["prompt_caching"] is True
    msgs, hint = build_system_messages("anthropic/claude-3-5-sonnet", "prefix", "tail")
    assert msgs[0]["content"][0]["cache_control"] == {"type": "ephemeral"} and hint["provider"] == "anthropic"


def test_composing_the_stages_yourself():
    layout = ContextLayoutEngine(core_content="You are a precise research assistant.")
    retrieved = [(SemanticMemory(id="s1", subject="Membrane", predicate="license", object="Apache-2.0"),
                  TIER_SEMANTIC)]
    middle, ref_map, ref_map_type = layout.build_middle(retrieved)
    middle.append(("[Mem:2] Earlier session: user compared prompt compilers.", TIER_EPISODIC))
    middle.append(("[Mem:3] Always cite sources as [Mem:N].", TIER_PROCEDURAL))
    ref_map.update({2: "e7", 3: "p1"})
    core = layout.build_core()
    end = layout.build_end(last_turn_content=None, user_message="What license does Membrane use?")
    firewall = PreFlightContextFirewall(max_tokens=4096)
    text, kept_refs, total, stats = firewall.run(core_text=core, end_text=end, middle_segments=middle,
                                                 ref_map=ref_map)
    assert total == count_tokens(text) <= 4096
    assert kept_refs == {1: "s1", 2: "e7", 3: "p1"} and stats["segments_kept"] == 3
    assert "Membrane license Apache-2.0" in text
    tight = PreFlightContextFirewall(max_tokens=count_tokens(core + "\n\n" + end) + 12)
    text2, kept2, total2, _ = tight.run(core_text=core, end_text=end, middle_segments=middle, ref_map=ref_map)
    assert total2 == count_tokens(text2) <= tight.max_tokens and 2 not in kept2
    g = glaciate(text, max_cacheable_tokens=2000)
    assert g.cacheable_prefix + g.dynamic_tail == text
    g = glaciate(text, max_cacheable_tokens=2000, stable_prefix=core + "\n\n")
    assert g.cacheable_prefix == core + "\n\n" and g.dynamic_tail.startswith("[Mem:")
    small = glaciate(text, max_cacheable_tokens=5)
    assert small.cacheable_prefix == "" or small.prefix_tokens <= 5
    assert g.use_caching is (g.prefix_tokens >= 256)


def test_compile_async_with_compressor():
    async def compress(raw_middle, target_tokens, user_message):
        assert "[Mem:1]" in raw_middle and target_tokens == 500 and user_message == "Summarise our plan."
        return "[Mem:1] [Mem:3] summary of many memories"

    mems = [MemoryItem(id=f"m{i}", content="A long memory about the plan. " * 8) for i in range(400)]
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o")
    result = asyncio.run(compiler.compile_async(mems, "Summarise our plan.", compress_async=compress))
    assert result.metadata["preflight_compressed"] is True
    assert result.ref_map == {1: "m0", 3: "m2"}
    assert "summary of many memories" in result.messages[-1]["content"]
    plain = asyncio.run(compiler.compile_async(mems[:3], "Summarise our plan.", compress_async=compress))
    assert plain.metadata["preflight_compressed"] is False and len(plain.ref_map) == 3


def test_compile_prompt_async_takes_memory_tier_pairs():
    result = asyncio.run(compile_prompt_async(
        user_msg="Can you remind me what we decided?",
        messages_list=[{"role": "user", "content": "Let's pick a database."},
                       {"role": "assistant", "content": "Postgres fits your workload."}],
        user_id="user-1", conversation_id="conv-9", max_tokens=8192, model_id="openai/gpt-4o",
        core_content="You are a helpful assistant.",
        retrieved_objects=[(MemoryItem(id="d1", content="Team chose Postgres over MongoDB."), TIER_SEMANTIC),
                           (MemoryItem(id="e1", content="Discussed sharding last week.", memory_type="episodic"),
                            TIER_EPISODIC)]))
    assert result.ref_map == {1: "d1", 2: "e1"} and result.metadata["conversation_id"] == "conv-9"


def test_estimate_quotes_the_billed_tokens():
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o-mini")
    quote = compiler.estimate(memories=[MemoryItem(id="1", content="User prefers concise answers.")],
                              user_message="Hello", price_per_1k_input_tokens=0.00015)
    md = quote.compile_result.metadata
    assert quote.total_tokens == md["token_count"]
    assert quote.estimated_cost_usd == pytest.approx(md["billed_input_tokens"] / 1000 * 0.00015)
    with pytest.raises(ValueError, match="price_per_1k_input_tokens"):
        compiler.estimate([], "x", price_per_1k_input_tokens=-1)


def test_interrupt_protocol():
    text = "Let me check. <SYSTEM_INTERRUPT_FETCH[user's timezone preference]> One moment."
    assert contains_interrupt(text)
    before, query, after = parse_interrupt(text)
    assert (before, query, after) == ("Let me check. ", "user's timezone preference", " One moment.")
    assert strip_all_interrupts(text) == "Let me check. One moment."
    assert parse_interrupt("nothing here") is None and not contains_interrupt("<SYSTEM_INTERRUPT_FETCH[")


def test_metrics_callback_receives_counts_only():
    seen = []
    compiler = ContextCompiler(max_tokens=500, metrics_callback=seen.append)
    compiler.compile([MemoryItem(id="a", content="secret text")], "q")
    assert len(seen) == 1 and seen[0].token_count > 0
    assert "secret" not in repr(seen[0])


@pytest.mark.parametrize(
    "kwargs, call, error, match",
    [
        ({"max_tokens": 0}, None, ValueError, "max_tokens"),
        ({"max_tokens": -5}, None, ValueError, "max_tokens"),
        ({"max_tokens": "100"}, None, TypeError, "max_tokens"),
        ({"max_tokens": 100, "memory_placement": "middle"}, None, ValueError, "memory_placement"),
        ({"max_tokens": 100}, ([MemoryItem(id="", content="x")], "q"), ValueError, r"memories\[0\]\.id"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content="x"), MemoryItem(id="a", content="y")], "q"),
         ValueError, r"memories\[1\]\.id .*duplicate"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content=5)], "q"), TypeError, r"memories\[0\]\.content"),
        ({"max_tokens": 100}, ([], 42), TypeError, "user_message"),
        ({"max_tokens": 100}, ([], "q", [{"role": "robot", "content": "x"}]), ValueError,
         r"conversation_messages\[0\]\.role"),
        ({"max_tokens": 100}, ([], "q", [{"role": "user"}]), ValueError, r"conversation_messages\[0\]"),
        ({"max_tokens": 100}, ([], "q", [{"role": "user", "content": 3}]), TypeError,
         r"conversation_messages\[0\]\.content"),
        ({"max_tokens": 100}, ([], "q", "not a list"), TypeError, "conversation_messages"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content="x", priority=7)], "q"), ValueError,
         r"memories\[0\]\.priority must be 1"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content="x", priority=2.0)], "q"), ValueError,
         r"memories\[0\]\.priority must be 1 .*got 2\.0"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content="x", kind=["x"])], "q"), TypeError,
         r"memories\[0\]\.kind must be a str"),
        ({"max_tokens": 100}, ([MemoryItem(id="a", content="x", score="high")], "q"), TypeError,
         r"memories\[0\]\.score must be a number"),
        ({"max_tokens": 100, "trim_history": "no"}, None, TypeError, "trim_history must be true or false"),
        ({"max_tokens": 100}, ([], "q", None, {"use_prompt_caching_split": "no"}), TypeError,
         "use_prompt_caching_split must be true or false"),
        ({"max_tokens": 100}, ([], "q", None, {"dynamic_directives": {"a": 1}}), TypeError,
         "dynamic_directives must be"),
        ({"max_tokens": 100}, ([], "q", None, {"middle_extras": [("x", 2.5)]}), ValueError,
         r"middle_extras\[0\] tier must be 1"),
    ],
)
def test_bad_input_names_the_field(kwargs, call, error, match):
    with pytest.raises(error, match=match):
        compiler = ContextCompiler(**kwargs)
        if call is not None:
            args, options = (call[:3], call[3]) if len(call) == 4 else (call, {})
            compiler.compile(*args, **options)


def test_memory_type_any_case_and_numpy_numbers():
    import numpy as np

    mems = [MemoryItem(id="p", content="How to deploy.", memory_type="Procedural"),
            MemoryItem(id="e", content="We met.", memory_type="EPISODIC", score=np.float64(0.5)),
            MemoryItem(id="s", content="A fact.", priority=np.int64(2), score=np.float32(0.25))]
    result = ContextCompiler(max_tokens=4000).compile(mems, "q")
    assert result.ref_map_type == {1: "procedural", 2: "episodic", 3: "semantic"}
    other = MemoryItem(id="o", content="x")
    # the same on the path that honours tier overrides
    result = ContextCompiler(max_tokens=4000).compile(mems + [other], "q", tier_by_memory_id={id(other): 3})
    assert result.ref_map_type == {1: "procedural", 2: "episodic", 3: "semantic", 4: "episodic"}


def test_rebudget_rejects_bad_budgets():
    result = ContextCompiler(max_tokens=100).compile([], "q")
    with pytest.raises(ValueError, match="max_tokens"):
        result.rebudget(0)


def test_same_input_same_output():
    mems = support_memories()
    a = ContextCompiler(max_tokens=300, model_id="openai/gpt-4o").compile(mems, "refund?")
    b = ContextCompiler(max_tokens=300, model_id="openai/gpt-4o").compile(mems, "refund?")
    assert a.to_json() == b.to_json()


def test_adapter_is_shared_per_encoding():
    assert TokenizerRegistry.get().adapter("gpt-4o") is TokenizerRegistry.get().adapter("openai/gpt-4.1")
    assert isinstance(O200K, TiktokenAdapter)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x1f\x00\u00a0\u2028ab[", max_size=12), max_size=8))
@example([" a"])
@example(["a "])
@example(["a", " b"])
@example(["a ", "b"])
@example(["a  b"])
@example(["a\x00 b"])
def test_memory_texts_are_made_one_line_whatever_their_whitespace(contents):
    # A fast path checks whole columns of ASCII text at once; it must agree with one_line.
    lines, _ = memory_lines(contents, [2] * len(contents), [None] * len(contents), {2: None})
    assert [line.split(" ", 2)[2] for line in lines] == [neutralise(one_line(c)) + "\n" for c in contents]
