"""`GET /metrics` on a real `drsg serve` process, read by Prometheus' own parser
(``prometheus_client.parser``): after real JSON-RPC calls, a commit, a feed subscriber on /ws, a
fetch the guard refuses and a call to the scripted model on loopback, every count is what happened.
The token is required like on every route; ``[server] metrics_addr`` serves it without one."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from drsg.kernel.telemetry import FAMILIES
from tests.support import feed_clients
from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion
from tests.support.sample import WORKED_AT
from tests.support.server import TOKEN, Response, RunningServer, clean_env, drsg_argv, start_server
from tests.support.waiting import wait_until

Scrape = dict[str, Metric]
SUFFIXES = ("_total", "_count", "_sum", "_bucket", "")


def get_metrics(served: RunningServer, token: str | None = TOKEN) -> Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return served.request("GET", "/metrics", headers=headers)


def scrape(served: RunningServer) -> Scrape:
    answer = get_metrics(served)
    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return {family.name: family for family in text_string_to_metric_families(answer.body.decode())}


def value(scraped: Scrape, sample: str, **labels: str) -> float:
    """The sample named ``sample`` with ``labels`` (0 when absent) in its family (a counter's
    ``_total``, a histogram's ``_count``, ``_sum`` and ``_bucket`` are the family's samples)."""
    family = next(sample.removesuffix(end) for end in SUFFIXES if sample.removesuffix(end) in scraped)
    found = [
        s.value
        for s in scraped[family].samples
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, (sample, labels, found)
    return found[0] if found else 0.0


def delta(after: Scrape, before: Scrape, sample: str, **labels: str) -> float:
    return value(after, sample, **labels) - value(before, sample, **labels)


def test_a_scrape_counts_what_happened(served: RunningServer, fake: FakeOpenAI) -> None:
    before = scrape(served)
    prompt = fake.usage["/chat/completions"]["prompt_tokens"]
    completion = fake.usage["/chat/completions"]["completion_tokens"]
    for _ in range(3):
        served.call("db.stats")
    assert served.error("no.such.method")["code"] == -32601
    assert served.error("plane.history", {"plane": "nowhere"})["code"] == -32602
    served.call("plane.create", {"name": "scratch"})  # one commit
    served.call("index.ensure", {"plane": "pioneers", "label": "Person", "property": "name"})  # another, applied
    refused = served.post(b"", path="/digest/fetch?url=127.0.0.2/")  # the guard refuses the address
    assert refused.status == 200 and "names 127.0.0.2" in refused.body.decode()
    fake.script("/chat/completions", Reply(json=chat_completion(json.dumps({"plan": WORKED_AT}))))
    assert served.call("plane.ask", {"plane": "pioneers", "question": "where?"})["ran"] is True
    rpc_posts = 3 + 2 + 2 + 1

    async def with_a_subscriber() -> tuple[Scrape, int]:
        async with feed_clients.connect(served) as ws:
            await ws.watch(plane="scratch", from_seq=1)
            head = int(served.call("db.stats")["commit_seq"])
            await ws.changes_through(head)  # caught up: every commit handed out
            return scrape(served), head

    after, head = asyncio.run(with_a_subscriber())
    assert delta(after, before, "drsg_rpc_calls_total", method="db.stats", outcome="ok") == 4
    assert delta(after, before, "drsg_rpc_calls_total", method="-", outcome="error") == 1
    assert delta(after, before, "drsg_rpc_calls_total", method="plane.history", outcome="error") == 1
    assert delta(after, before, "drsg_rpc_calls_total", method="plane.create", outcome="ok") == 1
    assert delta(after, before, "drsg_rpc_call_seconds_count", method="db.stats") == 4
    assert delta(after, before, "drsg_rpc_call_seconds_bucket", method="plane.ask", le="+Inf") == 1
    assert delta(after, before, "drsg_http_requests_total", route="/rpc", status="200") == rpc_posts + 1
    assert delta(after, before, "drsg_http_requests_total", route="/metrics", status="200") == 1
    assert delta(after, before, "drsg_http_request_seconds_count", route="/rpc") == rpc_posts + 1
    assert delta(after, before, "drsg_fetch_refused_total", reason="address") == 1
    used = fake.usage["/chat/completions"]
    assert delta(after, before, "drsg_model_calls_total", kind="chat", provider="url") == 1
    tokens = "drsg_model_tokens_total"
    assert (
        delta(after, before, tokens, kind="chat", provider="url", direction="prompt") == used["prompt_tokens"] - prompt
    )
    assert delta(after, before, tokens, kind="chat", provider="url", direction="completion") == (
        used["completion_tokens"] - completion
    )
    assert value(after, "drsg_head_seq") == head == value(after, "drsg_commits_total")
    assert value(after, "drsg_head_seq") - value(before, "drsg_head_seq") == 2
    assert value(after, "drsg_disk_bytes", part="file") == os.stat(served.db).st_size
    assert value(after, "drsg_disk_bytes", part="sidecars") == 0  # saved on stop, or every 30 s
    lag = {"plane": "pioneers", "kind": "keyword", "label": "Person", "prop": "name"}
    assert [s.labels for s in after["drsg_index_lag_commits"].samples] == [lag]
    assert value(after, "drsg_index_lag_commits", **lag) == 0
    assert value(after, "drsg_feed_subscribers", transport="ws") == 1
    assert value(after, "drsg_feed_subscribers", transport="sse") == 0
    assert value(after, "drsg_feed_lag_max_commits", transport="ws") == 0
    assert 0 < value(after, "drsg_process_start_time_seconds") <= os.stat(served.log_path).st_mtime
    assert set(after) == {name.removesuffix("_total") for name in FAMILIES}  # every family, documented or not
    # the socket closed: no subscriber left once the server has seen it go
    wait_until(lambda: value(scrape(served), "drsg_feed_subscribers", transport="ws") == 0, "the subscriber gone", 10)


def test_a_scrape_needs_the_token(served: RunningServer) -> None:
    for token in (None, "wrong-token"):
        answer = get_metrics(served, token)
        assert answer.status == 401
        assert json.loads(answer.body)["error"]["code"] == -32001


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_metrics_addr_serves_it_without_a_token(tmp_path: Path) -> None:
    port = _free_port()
    running = start_server(tmp_path / "graph.drsg", tmp_path, env={"DRSG_SERVER_METRICS_ADDR": f"127.0.0.1:{port}"})
    try:
        running.call("plane.create", {"name": "p"})
        own = RunningServer(running.proc, "127.0.0.1", port, None, running.db, running.log_path, running.out_path, None)
        answer = own.get("/metrics")
        assert answer.status == 200
        scraped = {f.name: f for f in text_string_to_metric_families(answer.body.decode())}
        assert value(scraped, "drsg_head_seq") == running.head()
        assert own.get("/health").status == 404  # only /metrics there
        assert own.request("POST", "/rpc", b"{}").status in (404, 405)
        assert get_metrics(running, None).status == 401  # still behind the token on the server's address
    finally:
        assert running.stop() == 0


def test_a_bad_or_taken_metrics_addr_is_a_one_line_error(served: RunningServer, tmp_path: Path) -> None:
    for addr, code, error in (
        (
            "nonsense",
            2,
            "error: server.metrics_addr (env DRSG_SERVER_METRICS_ADDR) 'nonsense' is not HOST:PORT;"
            " write e.g. 127.0.0.1:7700 or [::1]:7700",
        ),
        (
            f"127.0.0.1:{served.port}",
            1,
            f"error: cannot listen on 127.0.0.1:{served.port} (server.metrics_addr): address already in use",
        ),
    ):
        ran = subprocess.run(
            [*drsg_argv(), "--db", str(tmp_path / "g.drsg"), "serve", "--addr", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            env=clean_env(DRSG_SERVER_METRICS_ADDR=addr),
            cwd=tmp_path,
            timeout=60,
        )
        assert ran.returncode == code, ran.stderr
        assert [line for line in ran.stderr.splitlines() if line.startswith("error:")] == [error]
        assert not (tmp_path / "g.drsg").exists()
