"""Rule-based fact extraction from simple first-person statements, Russian and English.

"Меня зовут Алекс, я живу в Берлине" → "Пользователя зовут Алекс" (key ``name``) and
"Пользователь живёт в Берлине" (key ``city``). A later "я переехал в Мюнхен" is a new value
for ``city`` and so supersedes the Berlin fact. The rules are few on purpose: the offline
path must be predictable; a live memorizer does the rest.

Besides these profile facts, a sentence of either side that tells an event ("we adopted a
dog named Rex", "я ездил в Казань") or, from the assistant, a recommendation ("I'd recommend
Piranesi", "советую «Лавр»") is kept whole, with its speaker: "user: We adopted a dog named
Rex from the shelter today".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.providers.tasks import KnownFact, LearnedFact
from engine.text import stems

# a value: one word, or a few when the rule takes the rest of the clause
_WORD = r"[\w-]+"
_NAME = rf"(?P<v>{_WORD}(?:\s+[A-ZА-ЯЁ][\w-]*)?)"
_PLACE = rf"(?P<v>{_WORD}(?:[\s-][A-ZА-ЯЁ][\w-]*)*)"
_REST = rf"(?P<v>{_WORD}(?:\s+{_WORD})*)"
"""The rest of the clause: a fact is a whole clause, never cut after a few words."""


@dataclass(frozen=True)
class Rule:
    """One statement shape: a pattern with a ``v`` group and the fact it makes."""

    pattern: re.Pattern[str]
    template: str
    key: str | None
    keywords: tuple[str, ...]
    importance: float
    stale: bool = False
    """The statement withdraws a fact (``I no longer live in X``): the fact goes stale."""


def _rule(
    pattern: str,
    template: str,
    key: str | None,
    keywords: str,
    importance: float,
    *,
    stale: bool = False,
) -> Rule:
    return Rule(
        re.compile(r"^\s*" + pattern), template, key, tuple(keywords.split()), importance, stale
    )


_CITY_RU = "где город живу жить живёт проживаю"
_CITY_EN = "where city town live home based"

RULES: tuple[Rule, ...] = (
    # Russian
    _rule(
        rf"(?i:я\s+)?(?i:больше\s+не\s+живу\s+(?:в|во))\s+{_PLACE}",
        "Пользователь живёт в {v}",
        "city",
        _CITY_RU,
        0.8,
        stale=True,
    ),
    _rule(
        rf"(?i:меня\s+зовут|мо[её]\s+имя|зовите\s+меня)\s+{_NAME}",
        "Пользователя зовут {v}",
        "name",
        "имя зовут звать",
        0.9,
    ),
    _rule(
        rf"(?i:я\s+)?(?i:живу|проживаю)\s+(?i:в|во)\s+{_PLACE}",
        "Пользователь живёт в {v}",
        "city",
        _CITY_RU,
        0.8,
    ),
    _rule(
        rf"(?i:я\s+)?(?i:переехал[аи]?|перебрал[аи]?сь)\s+(?i:в|во)\s+{_PLACE}",
        "Пользователь переехал в {v}",
        "city",
        _CITY_RU,
        0.8,
    ),
    _rule(
        rf"(?i:я\s+)?(?i:работаю)\s+{_REST}",
        "Пользователь работает {v}",
        "job",
        "работа работаю профессия кем",
        0.7,
    ),
    _rule(
        r"(?i:мне)\s+(?P<v>\d{1,3})\s+(?i:год|года|лет)\b",
        "Пользователю {v} лет",
        "age",
        "возраст лет сколько",
        0.7,
    ),
    _rule(
        rf"(?i:я\s+)?(?i:люблю|обожаю)\s+{_REST}",
        "Пользователь любит {v}",
        None,
        "любит нравится люблю",
        0.6,
    ),
    _rule(
        rf"(?i:мне\s+нрав(?:ится|ятся))\s+{_REST}",
        "Пользователю нравится {v}",
        None,
        "любит нравится люблю",
        0.6,
    ),
    _rule(rf"(?i:у\s+меня\s+есть)\s+{_REST}", "У пользователя есть {v}", None, "есть", 0.5),
    # English
    _rule(
        rf"(?i:i\s+(?:no\s+longer|don'?t)\s+live\s+in)\s+{_PLACE}(?i:\s+anymore)?",
        "The user lives in {v}",
        "city",
        _CITY_EN,
        0.8,
        stale=True,
    ),
    _rule(
        rf"(?i:my\s+name\s+is|call\s+me|i'?m\s+called)\s+{_NAME}",
        "The user's name is {v}",
        "name",
        "name called",
        0.9,
    ),
    _rule(rf"(?i:i\s+live\s+in)\s+{_PLACE}", "The user lives in {v}", "city", _CITY_EN, 0.8),
    _rule(
        rf"(?i:i\s+(?:have\s+)?(?:moved|relocated)\s+to)\s+{_PLACE}",
        "The user moved to {v}",
        "city",
        _CITY_EN,
        0.8,
    ),
    _rule(
        rf"(?i:i\s+work\s+as)\s+{_REST}", "The user works as {v}", "job", "work job profession", 0.7
    ),
    _rule(
        rf"(?i:i\s+work\s+(?:at|for))\s+{_REST}",
        "The user works at {v}",
        "employer",
        "work job employer company",
        0.7,
    ),
    _rule(
        r"(?i:i\s+am|i'?m)\s+(?P<v>\d{1,3})\s+(?i:years?\s+old)",
        "The user is {v} years old",
        "age",
        "age old",
        0.7,
    ),
    _rule(
        rf"(?i:i\s+(?:really\s+)?(?:like|love|enjoy))\s+{_REST}",
        "The user likes {v}",
        None,
        "like likes love enjoy",
        0.6,
    ),
    _rule(rf"(?i:i\s+prefer)\s+{_REST}", "The user prefers {v}", None, "prefer prefers", 0.6),
    _rule(
        rf"(?i:i\s+have\s+(?:a|an|two|three))\s+{_REST}", "The user has {v}", None, "has have", 0.5
    ),
)

_CLAUSES = re.compile(
    r"[.!?;,\n]+|\s+(?:и|а|но|and|but)\s+(?=(?:я|мне|меня|у\s+меня|i|i'm|my)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Statement:
    """A fact one clause states (or withdraws, when ``stale``)."""

    fact: LearnedFact
    value: str
    stale: bool = False


def clauses(text: str) -> list[str]:
    """The clauses of a message, each a candidate statement."""
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


def statements(text: str) -> list[Statement]:
    """Every fact the rules find in ``text``, in order (one per clause at most)."""
    found = []
    for clause in clauses(text):
        for rule in RULES:
            match = rule.pattern.match(clause)
            if match:
                found.append(_statement(rule, clause, match.group("v")))
                break
    return found


def _statement(rule: Rule, clause: str, value: str) -> Statement:
    value = value.strip()
    if rule.key == "name":
        value = value[:1].upper() + value[1:]
    # the clause's own words join the keywords: "живу" should find "живёт в Берлине"
    keywords = (*rule.keywords, *clause.split())
    text = rule.template.format(v=value)
    return Statement(LearnedFact(text, rule.importance, rule.key, keywords), value, rule.stale)


def same_value(a: str, b: str) -> bool:
    """Whether two values name the same thing, any word forms ("Берлин" = "Берлине")."""
    return stems(a) == stems(b)


def value_of(fact: KnownFact) -> str:
    """The value a keyed fact states (its text after the template's fixed words)."""
    for rule in RULES:
        if rule.key == fact.key:
            head = rule.template.split("{v}")[0]
            if fact.text.startswith(head):
                return fact.text[len(head) :]
    return fact.text


# -- events and recommendations -----------------------------------------------------------

_SENTENCES = re.compile(r"(?<=[.!?;…])\s+|\n+")
_SUBJECT = re.compile(
    r"^(?:i|we|i've|we've|i'm|my|our|я|мы|мою|мой|моя|мои|моего|нашу|наш|наша|у\s+меня|у\s+нас)\b"
    r"|^(?:just|finally|today|yesterday|last\s+\w+|на\s+выходных|вчера|сегодня|только|наконец)\b",
    re.IGNORECASE,
)
_PAST_EN = re.compile(
    r"\b(?:\w{2,}ed|went|got|bought|took|made|met|saw|ran|began|found|left|came|gave|won|"
    r"lost|sold|flew|drove|wrote|read|did|had|visited|back|signed|started|finished|adopted|"
    r"hired)\b",
    re.IGNORECASE,
)
_PAST_RU = re.compile(r"\b[а-яё]{2,}(?:л|ла|ло|ли|лся|лась|лось|лись)\b", re.IGNORECASE)
_ADVICE = re.compile(
    r"^(?:i'?d\s+(?:recommend|suggest)|i\s+(?:recommend|suggest)|try|make|you\s+(?:could|should|"
    r"might)|consider|советую|рекомендую|попробуй|попробуйте|приготовь|приготовьте|предлагаю|"
    r"сходи|сходите|почитай|почитайте)\b",
    re.IGNORECASE,
)
EVENT_MAX_CHARS = 400
"""A longer sentence is no fact: it is left to the episode that keeps the whole turn."""
EVENT_IMPORTANCE, ADVICE_IMPORTANCE = 0.5, 0.4


def sentences(text: str) -> list[str]:
    """The sentences of a message, whole."""
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


def events(text: str, speaker: str) -> list[LearnedFact]:
    """Sentences of one side of a turn that tell an event (either side, in the first person,
    in the past) or give a recommendation (the assistant): each one fact, kept whole and
    labelled with its speaker. A sentence a profile rule already turned into a fact is left
    to that fact."""
    found = []
    for sentence in sentences(text):
        if len(sentence) > EVENT_MAX_CHARS or statements(sentence):
            continue
        importance = _event_importance(sentence, speaker)
        if importance:
            words = tuple(sentence.split())
            found.append(LearnedFact(f"{speaker}: {sentence}", importance, None, words))
    return found


def _event_importance(sentence: str, speaker: str) -> float:
    if speaker == "assistant" and _ADVICE.search(sentence):
        return ADVICE_IMPORTANCE
    if _SUBJECT.search(sentence) and (_PAST_EN.search(sentence) or _PAST_RU.search(sentence)):
        return EVENT_IMPORTANCE
    return 0.0


def tells_about_user(text: str) -> bool:
    """Whether a user's message states something about them (a profile fact or an event):
    an answer to it is personal."""
    return bool(statements(text) or events(text, "user"))
