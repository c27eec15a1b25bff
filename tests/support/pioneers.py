"""A short document about computing pioneers and the world a scripted model reads in it
(tests/support/scripted_model.py): what the digest tests, and the surfaces' digest tests, feed it."""

from __future__ import annotations

from tests.support.scripted_model import World, WorldEntity, WorldRelation

# Four paragraphs of 120–190 characters: with --chunk-chars 200 each is one chunk.
PIONEERS = """# Computing pioneers

Alan Turing worked at Bletchley Park during the war, where he designed the Bombe together with Gordon Welchman.

Turing later moved to the University of Manchester and wrote software for the Manchester Baby computer.

Ada Lovelace wrote the first published algorithm, for the Analytical Engine that Charles Babbage designed.

Ada Lovelace also translated an article by Luigi Menabrea and added her famous notes to the translation.
"""


WORLD = World(
    entities=[
        WorldEntity(["Alan Turing", "Turing"], ["Person", "person"], {"born": 1912}, {"field": "mathematics"}),
        WorldEntity(["Bletchley Park"], ["Place"], {"country": "England"}),
        WorldEntity(["Gordon Welchman"], ["Scientist"], {"born": 1906}),
        WorldEntity(["University of Manchester"], ["University"]),
        WorldEntity(["Manchester Baby"], ["Machine"], {"year": 1948}),
        WorldEntity(
            ["Ada Lovelace"],
            ["Person"],
            {"born": 1815},
            {"translated": "Menabrea's article"},
            "Mathematician and writer.",
            missed_in=["translated"],
        ),
        WorldEntity(["Analytical Engine"], ["Machine"]),
        WorldEntity(["Charles Babbage"], ["Person"], {"born": 1791}),
    ],
    relations=[
        WorldRelation("Alan Turing", "Bletchley Park", ["WORKED_AT"]),
        WorldRelation("Alan Turing", "Gordon Welchman", ["WORKED_WITH"]),
        WorldRelation("Alan Turing", "University of Manchester", ["MOVED_TO"]),
        WorldRelation("Alan Turing", "Manchester Baby", ["wrote software for"]),
        WorldRelation("Ada Lovelace", "Analytical Engine", ["PROGRAMMED"]),
        WorldRelation("Charles Babbage", "Analytical Engine", ["DESIGNED"]),
    ],
    synonyms=[["Person", "Scientist"], ["PROGRAMMED", "WROTE_SOFTWARE_FOR"]],
)
