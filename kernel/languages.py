"""The analyser languages: names, aliases and upstream's on-disk tags (pure, kernel-level).

Kept in the kernel so the store can validate and normalise a keyword index's language when it is
declared; the analysis itself lives in drsg.workers.analysis.
"""

from __future__ import annotations

from drsg.kernel.errors import UsageError

#: Canonical language name -> aliases, in upstream's order; the position is the on-disk tag (0..18).
LANGUAGES: dict[str, tuple[str, ...]] = {
    "english": ("en",),
    "arabic": ("ar",),
    "danish": ("da",),
    "dutch": ("nl",),
    "finnish": ("fi",),
    "french": ("fr",),
    "german": ("de",),
    "greek": ("el",),
    "hungarian": ("hu",),
    "italian": ("it",),
    "norwegian": ("no",),
    "portuguese": ("pt",),
    "romanian": ("ro",),
    "russian": ("ru",),
    "spanish": ("es",),
    "swedish": ("sv",),
    "tamil": ("ta",),
    "turkish": ("tr",),
    "chinese": ("zh", "zh-cn", "zh-tw"),
}

_BY_NAME: dict[str, str] = {
    name: canonical for canonical, aliases in LANGUAGES.items() for name in (canonical, *aliases)
}


def canonical_language(name: str) -> str:
    """The canonical name of a language (``"en"`` -> ``"english"``); UsageError for an unknown one."""
    canonical = _BY_NAME.get(str(name).strip().lower().replace("_", "-"))
    if canonical is None:
        valid = ", ".join(f"{lang} ({'/'.join(aliases)})" for lang, aliases in LANGUAGES.items())
        raise UsageError(f"unknown language {name!r}; use one of: {valid}")
    return canonical


def language_tag(name: str) -> int:
    """Upstream's on-disk tag byte for a language (0..18, in :data:`LANGUAGES` order)."""
    return list(LANGUAGES).index(canonical_language(name))
