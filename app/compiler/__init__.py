"""The prompt compiler: rules, memories, history and the current turn → a prompt that fits.

Plain Python (tiktoken only): no Qt, and nothing from ``store/``.
"""

from .attention import (
    AttentionShift,
    EmbeddingError,
    compute_attention_shift,
    compute_attention_shift_with_embeddings,
    measure_attention_shift,
    measure_attention_shift_with_embeddings,
)
from .billing import count_billed_tokens, count_message_tokens
from .capabilities import (
    CapabilityMap,
    CapabilityMapError,
    get_context_cap_for_model,
    has_prompt_caching,
    model_capabilities,
)
from .compiler import ContextCompiler, quote_for
from .dedup import differ_in_fact, near_duplicates
from .firewall import PreFlightContextFirewall
from .glaciator import Glaciated, glaciate
from .interrupt import (
    INTERRUPT_INSTRUCTION,
    contains_interrupt,
    interrupt_instruction,
    parse_interrupt,
    strip_all_interrupts,
)
from .layout import ContextLayoutEngine
from .profiles import PROFILES, Profile, get_profile
from .prompt import compile_prompt_async, compile_prompt_payload
from .providers import anthropic_system_blocks, build_system_messages, to_anthropic_request
from .tokenizers import TiktokenAdapter, TokenizerError, TokenizerRegistry, count_tokens
from .types import (
    TIER_EPISODIC,
    TIER_NAMES,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    CompileMetrics,
    CompileResult,
    EpisodicMemory,
    MemoryItem,
    ProceduralMemory,
    Quote,
    Segment,
    SemanticMemory,
)

__all__ = [
    "AttentionShift", "EmbeddingError", "compute_attention_shift", "compute_attention_shift_with_embeddings",
    "measure_attention_shift", "measure_attention_shift_with_embeddings", "differ_in_fact", "near_duplicates",
    "TIER_EPISODIC", "TIER_NAMES", "TIER_PROCEDURAL", "TIER_SEMANTIC", "INTERRUPT_INSTRUCTION",
    "CapabilityMap", "CapabilityMapError", "CompileMetrics", "CompileResult", "ContextCompiler",
    "ContextLayoutEngine", "PROFILES", "Profile", "get_profile", "EpisodicMemory", "Glaciated", "MemoryItem", "PreFlightContextFirewall",
    "ProceduralMemory", "Quote", "Segment", "SemanticMemory", "TiktokenAdapter", "TokenizerError",
    "TokenizerRegistry", "anthropic_system_blocks", "build_system_messages", "compile_prompt_async",
    "compile_prompt_payload", "contains_interrupt", "count_billed_tokens", "count_message_tokens", "count_tokens",
    "get_context_cap_for_model", "glaciate", "interrupt_instruction", "has_prompt_caching", "model_capabilities", "parse_interrupt",
    "quote_for", "strip_all_interrupts", "to_anthropic_request",
]
