"""Text helpers shared by the kinds: tokens and Snowball stems for Russian and English."""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_STEMMERS = {
    "russian": snowballstemmer.stemmer("russian"),
    "english": snowballstemmer.stemmer("english"),
}


def tokens(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters and digits; ``ё`` folded to ``е``)."""
    return [w.replace("ё", "е") for w in _WORD.findall(text.lower())]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lower-case word, Russian or English by its letters."""
    language = "russian" if _CYRILLIC.search(word) else "english"
    return str(_STEMMERS[language].stemWord(word))


def stems(text: str) -> list[str]:
    """Stems of every word of ``text``, in order."""
    return [stem(w) for w in tokens(text)]


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words, any word forms (stems) matching."""
    needle = stems(phrase)
    if not needle:
        return False
    hay = stems(text)
    n = len(needle)
    return any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))
