"""A small plane the plan and Cypher read tests share: three people who worked at one lab."""

from __future__ import annotations

from drsg.store.transaction import WriteTx


def fill_people(tx: WriteTx, *, self_loop: bool = False) -> None:
    """Plane ``p``: Ada (1815), Alan (1912), Grace (1906) each WORKED_AT the Lab, Alan READ Ada,
    and with ``self_loop`` Grace ADMIRES herself."""
    plane = tx.create_plane("p")
    ada = tx.create_node(plane, "ada", ["Person"], {"name": "Ada", "born": 1815}).id
    alan = tx.create_node(plane, "alan", ["Person"], {"name": "Alan", "born": 1912}).id
    grace = tx.create_node(plane, "grace", ["Person"], {"name": "Grace", "born": 1906}).id
    lab = tx.create_node(plane, "lab", ["Place"], {"name": "Lab"}).id
    for person in (ada, alan, grace):
        tx.link(plane, person, lab, "WORKED_AT")
    tx.link(plane, alan, ada, "READ")
    if self_loop:
        tx.link(plane, grace, grace, "ADMIRES")
