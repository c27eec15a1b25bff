"""The bundled sample graph (drsg/data/sample.jsonl) and two plans over it, shared by the tests of
the surfaces that ask, find and vectorize."""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "drsg" / "data" / "sample.jsonl"
WORKED_AT = {"source": {"ScanLabel": "Person"}, "steps": [{"Expand": {"dir": "Out", "edge_type": "WORKED_AT"}}]}
ADA_WROTE = {"source": {"SeekKeys": ["ada"]}, "steps": [{"Expand": {"dir": "Out", "edge_type": "WROTE_ABOUT"}}]}
