"""A cancelled wait for the head is cancelled, even when the commit it waited for lands at the
same moment.

``asyncio.wait_for`` on Python 3.11 swallows a cancellation that arrives once the awaited future is
done: the caller's own timeout (``asyncio.timeout`` round a feed subscriber, say) is then lost, and
the task goes on waiting with no deadline. A Python-iterator subscriber of a Kafka node stayed
connected through a whole broker outage that way (test_kafka_restart's resume wait, under load).
"""

from __future__ import annotations

import asyncio

import pytest

from drsg.store.notify import HeadWaiters


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
def test_a_cancel_that_meets_the_commit_still_cancels(turns: int) -> None:
    async def scenario() -> None:
        waiters = HeadWaiters()
        task = asyncio.create_task(waiters.wait_async(0, 30.0))
        for _ in range(3):  # the task parks on its future
            await asyncio.sleep(0)
        assert waiters.await_waiters(1, 1.0)
        waiters.publish(1)  # the commit: its wake-up is queued on this loop
        for _ in range(turns):  # …and has run (or not yet) when the cancel comes
            await asyncio.sleep(0)
        if task.cancel():  # it had not returned yet: the cancel must end it
            with pytest.raises(asyncio.CancelledError):
                await task
        else:  # it had returned the head before the cancel came
            assert task.result() == 1

    asyncio.run(scenario())


def test_a_wait_still_ends_at_its_timeout_and_at_a_commit() -> None:
    async def scenario() -> None:
        waiters = HeadWaiters()
        assert await waiters.wait_async(0, 0.05) == 0  # nothing came: the head as it was
        task = asyncio.create_task(waiters.wait_async(0, 30.0))
        await asyncio.sleep(0)
        waiters.publish(3)
        assert await asyncio.wait_for(task, 5) == 3

    asyncio.run(scenario())
