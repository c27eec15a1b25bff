"""A tiny real-text plane for hybrid tests: dictionary-style glosses and their IS_A edges."""

from __future__ import annotations

DOCS = {
    "cello": "a large bowed string instrument with a deep tone, held between the knees",
    "violin": "bowed stringed instrument that is the highest member of the violin family",
    "strings": "instruments that produce sound from vibrating strings",
    "trumpet": "a brass wind instrument with a bright tone and three valves",
    "brass": "wind instruments made of metal that are played by buzzing the lips",
    "oak": "a deciduous tree bearing acorns, with hard durable wood",
    "trees": "tall woody perennial plants with a single main stem",
    "pine": "a coniferous evergreen tree with long needles in clusters",
}
EDGES = [("cello", "strings"), ("violin", "strings"), ("trumpet", "brass"), ("oak", "trees"), ("pine", "trees")]
