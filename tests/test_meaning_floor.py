import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.config import StoreConfig
from mnemoscope.store.embedding import HashEmbedder
from mnemoscope.store.errors import ConfigError

NOW = "2026-11-19T12:00:00Z"


def test_a_shared_function_word_finds_nothing(new_db):
    # "est" and "au" are all these share: before, the keyword side answered with them
    store = MemoryStore(new_db(), embedder=HashEmbedder())
    store.remember("Est allergique aux chats.", memory_id="cats", now=NOW)
    store.remember("Va au bureau en tramway.", memory_id="tram", now=NOW)
    assert store.recall("Quel est mon métier ?", now=NOW) == []
    assert [h.id for h in store.recall("Qu'est-ce qui m'agace au bureau ?", now=NOW)] == ["tram"]
    store.close()


def test_the_meaning_floor_settings_are_checked():
    with pytest.raises(ConfigError, match="lowest_meaning_relevance"):
        StoreConfig.from_dict({"limits": {"lowest_meaning_relevance": 0.3, "min_meaning_relevance": 0.25}})
    with pytest.raises(ConfigError, match="meaning_reference"):
        StoreConfig.from_dict({"limits": {"meaning_reference": 0}})
    with pytest.raises(ConfigError, match="keyword_without_meaning"):
        StoreConfig.from_dict({"limits": {"keyword_without_meaning": 1.5}})
