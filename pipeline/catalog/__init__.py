"""drsg.pipeline.catalog: a remote database's catalog as a plane (connections, introspection, the
catalog writer, offline resolution, `find` with one parameterised SELECT, masking).

Pure parts import no I/O: ``naming`` (identifier splitting, aliases, terms), ``masking`` (which
columns are sensitive), ``model`` (the catalog's shapes), ``sqlbuild`` (the one SELECT), ``resolve``
(words → a table and its columns). The rest talks to a database or to the store.
"""
