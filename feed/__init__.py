"""drsg.feed — subscriptions to the log (the change feed), resumable from any seq.

>>> from drsg.feed import Subscription
>>> async for message in Subscription(db, "social", from_seq=1):
...     print(message)   # {"plane", "seq", "ts", "changes", "truncated"} or {"resolved": seq}
"""

from drsg.feed.changes import OPS, ChangeOptions, CommitChanges, change_events, commit_changes, touched
from drsg.feed.subscription import Message, Subscription, subscribe

__all__ = [
    "OPS",
    "ChangeOptions",
    "CommitChanges",
    "Message",
    "Subscription",
    "change_events",
    "commit_changes",
    "subscribe",
    "touched",
]
