"""Text helpers shared by the kinds: tokens and Snowball stems for Russian and English."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
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


# Function words carry no topic: two questions sharing only "я", "the" or "is" are not alike.
_FUNCTION_WORDS = """
я меня мне мной мой моя моё мое мои ты тебя тебе твой вы вас вам ваш ваша он она оно они его
ее её их мы нас нам наш и а но или да нет не ни в во на с со к ко у о об от до по за из при
для без же ли бы то это этот эта эти что как так там тут вот уже еще ещё был была было быть
есть какой какая какие каком кем чем
i me my mine you your yours he she it its we us our they them their is am are was were be been
do does did the a an and or but not no to of in on at for with from by as that this these
those what which how so if then there here have has had can could would will shall should
"""
_STOPWORDS = frozenset(_FUNCTION_WORDS.split())


def content_tokens(text: str) -> list[str]:
    """The words of ``text`` that carry its topic (function words dropped)."""
    return [w for w in tokens(text) if w not in _STOPWORDS]


def terms(text: str) -> set[str]:
    """The set of stems of ``text``'s topical words: what FAQ and memory lookups match on."""
    return {stem(w) for w in content_tokens(text)}


def dice(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Overlap of two term sets, 0..1 (Sørensen–Dice: 2|a∩b| / (|a|+|b|))."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def coverage(question: AbstractSet[str], other: AbstractSet[str]) -> float:
    """The share of ``question``'s terms that ``other`` contains, 0..1."""
    return len(question & other) / len(question) if question else 0.0


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{{name}}`` replaced by ``values[name]`` (others left alone)."""
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    return template
