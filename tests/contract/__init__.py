"""Contract suites: one abstract suite per port, subclassed once per backend."""
