"""drsg.store.kafka — the log on a Kafka topic and a node's LMDB copy of it: the Log backend
(``log.py``), the copy's follower and judge (``materialiser.py``) and the database on both
(``database.py``). Loaded only when a ``kafka://`` log is asked for (kafka-python with it)."""
