"""The public, typed Python API: ``drsg.open`` → :class:`~drsg.api.database.Database` →
``db.plane(name)`` → :class:`~drsg.api.plane.Plane`, whose calls return the records in
:mod:`drsg.api.results`. ``drsg`` re-exports what a user names (docs/python-api.md); the modules
here import the layers below lazily, so ``import drsg`` stays cheap.
"""
