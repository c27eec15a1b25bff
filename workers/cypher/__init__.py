"""Running openCypher statements: a read on one snapshot, a write as one commit (issue 36)."""
