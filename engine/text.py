"""Text helpers shared by the kinds: tokens and Snowball stems for Russian and English."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_LOCAL = threading.local()
"""Each thread's own stemmers: a Snowball stemmer keeps its word and cursor in the object,
so one shared between threads stems wrongly or raises IndexError under concurrent calls."""


def _stemmers() -> dict[str, Any]:
    found: dict[str, Any] | None = getattr(_LOCAL, "stemmers", None)
    if found is None:
        # Imported on first stem: the package loads all its ~30 languages, and a process
        # that only runs scripts (a one-shot hook_tool run) stems nothing.
        import snowballstemmer

        found = {lang: snowballstemmer.stemmer(lang) for lang in ("russian", "english")}
        _LOCAL.stemmers = found
    return found


def tokens(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters and digits; ``ё`` folded to ``е``)."""
    return [w.replace("ё", "е") for w in _WORD.findall(text.lower())]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lower-case word, Russian or English by its letters."""
    language = "russian" if _CYRILLIC.search(word) else "english"
    return str(_stemmers()[language].stemWord(word))


def stems(text: str) -> list[str]:
    """Stems of every word of ``text``, in order."""
    return [stem(w) for w in tokens(text)]


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words, any word forms (stems) matching."""
    return bool(find_phrases(text, [phrase]))


def find_phrases(text: str, phrases: Iterable[str]) -> list[str]:
    """The ``phrases`` that occur in ``text`` as whole words, any word forms matching.

    One pass over ``text``, whatever the number of phrases, and only the words that can start
    a phrase are stemmed: a Snowball stem keeps its word's first letter (both stemmers only
    change a word's ending), so a word whose first letter starts no phrase is skipped.
    """
    needles = [(phrase, stems(phrase)) for phrase in phrases]
    needles = [(phrase, needle) for phrase, needle in needles if needle]
    if not needles:
        return []
    words = tokens(text)
    initials = {needle[0][0] for _, needle in needles}
    starts: dict[str, list[int]] = {}
    for i, word in enumerate(words):
        if word[0] in initials:
            starts.setdefault(stem(word), []).append(i)

    def occurs_at(i: int, needle: list[str]) -> bool:
        tail = words[i : i + len(needle)]
        return len(tail) == len(needle) and all(
            stem(w) == s for w, s in zip(tail, needle, strict=True)
        )

    return [
        phrase
        for phrase, needle in needles
        if any(occurs_at(i, needle) for i in starts.get(needle[0], ()))
    ]


# Function words carry no topic: two questions sharing only "я", "the" or "is" are not alike,
# and a question word ("when", "где") says what is asked, not what about.
_FUNCTION_WORDS = """
я меня мне мной мой моя моё мое мои моих моим ты тебя тебе тобой твой твоя твои вы вас вам
вами ваш ваша ваши он она оно они его ему ним нем него ее её ей их им ими мы нас нам нами наш
наша наши и а но или да нет не ни в во на с со к ко у о об от до по за из при для без над под
же ли бы то это этот эта эти этого этом что чтобы как так там тут вот уже еще ещё был была было
были быть есть будет какой какая какое какие каком каких каким какую которую который которая
которые кто кого кому когда где куда откуда почему зачем сколько чем кем весь все всё всех
мне свой свою себя себе ну очень просто тоже также
i me my mine myself you your yours he him his she her hers it its we us our ours they them
their theirs is am are was were be been being do does did done the a an and or but not no
to of in on at for with from by as that this these those what which who whom whose when
where why how so if then there here have has had can could would will shall should may might
must just about any some up out into over all also too very s t d ll ve re m don didn
"""
_STOPWORDS = frozenset(_FUNCTION_WORDS.split())


def content_tokens(text: str) -> list[str]:
    """The words of ``text`` that carry its topic (function words dropped)."""
    return [w for w in tokens(text) if w not in _STOPWORDS]


def index_stems(text: str) -> list[str]:
    """Stems of ``text``'s topical words, in order and repeated: what a full-text index
    stores (a repeated word counts more)."""
    return [stem(w) for w in content_tokens(text)]


MAX_TERMS = 200
"""Distinct terms of one text that lookups count: the first ones in the text. A question of
100,000 characters then costs one pass to find them and a lookup of bounded size."""


def terms(text: str, *, limit: int = MAX_TERMS) -> set[str]:
    """The stems of ``text``'s topical words, the first ``limit`` distinct ones: what FAQ and
    memory lookups match on. Words past them are not even stemmed."""
    found: set[str] = set()
    for match in _WORD.finditer(text.lower()):
        word = match.group().replace("ё", "е")
        if word not in _STOPWORDS:
            found.add(stem(word))
            if len(found) >= limit:
                break
    return found


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


def question_key(question: str) -> str:
    """The identity of a question: case, spacing and punctuation do not matter."""
    norm = " ".join("".join(c if c.isalnum() else " " for c in question.casefold()).split())
    return hashlib.sha256(norm.encode()).hexdigest()
