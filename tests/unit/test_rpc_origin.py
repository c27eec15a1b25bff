"""A JSON-RPC write's origin is made in one place (``rpc_origin``) for both of ``ServerState``'s
paths, the group-commit writer's and a Kafka node's intent: a method's own details are kept, and
``via``/``method`` say the server and the method whatever the details hold."""

from __future__ import annotations

from drsg.surfaces.server.state import rpc_origin


def test_the_server_and_the_method_are_named_over_any_detail() -> None:
    assert rpc_origin("node.put") == {"via": "rpc", "method": "node.put"}
    given = {"via": "cli", "method": "other", "plane": "social"}
    assert rpc_origin("plane.create", given) == {"via": "rpc", "method": "plane.create", "plane": "social"}
    assert given == {"via": "cli", "method": "other", "plane": "social"}  # the caller's dict is not changed
