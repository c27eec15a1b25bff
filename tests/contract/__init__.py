"""Contract suites of the ports: one abstract suite per port, subclassed once per backend.

Each suite is a class whose name does not start with ``Test`` (pytest does not collect it); a
backend's ``Test…`` subclass supplies the backend through a fixture and inherits every test.
"""
