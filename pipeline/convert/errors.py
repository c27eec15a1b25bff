"""The one error the converters raise.

``ConversionError`` is a ``UsageError`` (exit code 2): the caller handed over a file that cannot be
turned into Markdown — unsupported, damaged, encrypted, empty or too big. Its message is one line that
names the file and says how to fix the problem. Every library exception met while reading a document
is converted into it at the boundary (``drsg.pipeline.convert.to_markdown``), so callers catch only
``drsg.kernel.errors.DrsgError``.
"""

from __future__ import annotations

from drsg.kernel.errors import UsageError


class ConversionError(UsageError):
    """A document could not be converted to Markdown; the message says why and how to fix it."""
