"""The recall benchmark's conversation set: generated from templates and a seed, RU and EN.

    .venv/bin/python bench/bench_recall_data.py [--seed 13] [--out bench/recall_set.json]

Each user talks to the assistant over several sessions on different dates (one user turn
and one assistant turn per exchange). Planted among everyday chatter are events ("we adopted
a dog named Rex", a trip, a purchase) told by the user and recommendations made by the
assistant; the questions at the end ask about them, each naming its evidence turns:

- ``single``: one turn holds the answer;
- ``multi``: the answer is spread over several turns ("which cities did I visit?");
- ``date``: "when did ...?" — the evidence turn's date answers it.

Chatter reuses the events' vocabulary (other cities, books, dishes), so a question's words
also occur in turns that do not answer it. The same seed always gives the same set.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 13
SESSIONS = 16
EXCHANGES = 10
"""Exchanges per session: 16 x 10 x 2 = 320 turns per user."""
USERS = (("en1", "en"), ("en2", "en"), ("en3", "en"), ("ru1", "ru"), ("ru2", "ru"), ("ru3", "ru"))
OUT = Path(__file__).resolve().parent / "recall_set.json"


@dataclass
class Turn:
    id: str
    session: int
    time: str
    speaker: str
    text: str


@dataclass
class Question:
    id: str
    kind: str
    question: str
    evidence: list[str]
    time: str


@dataclass
class User:
    id: str
    lang: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# -- vocabulary -----------------------------------------------------------------------------

EN = {
    "cities": ["Lisbon", "Porto", "Vienna", "Krakow", "Seville", "Bergen", "Tallinn", "Ghent"],
    "companions": ["my cousin Nora", "my friend Jake", "my colleague Priya", "my uncle Tom"],
    "places": ["old harbour", "cathedral", "botanical garden", "central market"],
    "animals": [("dog", ["Rex", "Biscuit", "Milo"]), ("cat", ["Luna", "Pepper", "Tofu"])],
    "books": [
        ("The Remains of the Day", "Kazuo Ishiguro"),
        ("Project Hail Mary", "Andy Weir"),
        ("The Left Hand of Darkness", "Ursula Le Guin"),
        ("Middlemarch", "George Eliot"),
        ("Piranesi", "Susanna Clarke"),
    ],
    "dishes": [
        ("shakshuka", "eggs"),
        ("risotto", "mushrooms"),
        ("dal", "lentils"),
        ("frittata", "spinach"),
    ],
    "jobs": ["pharmacist", "architect", "paramedic", "translator"],
    "hobbies": ["pottery", "salsa", "woodworking", "watercolor"],
    "items": [("bicycle", "420"), ("espresso machine", "180"), ("tent", "95"), ("drone", "310")],
    "topics": ["budget report", "team offsite", "quarterly review", "client contract", "roadmap"],
}

RU = {
    "cities": [
        ("Казань", "Казани"),
        ("Самару", "Самаре"),
        ("Калининград", "Калининграде"),
        ("Суздаль", "Суздале"),
        ("Иркутск", "Иркутске"),
        ("Выборг", "Выборге"),
    ],
    "companions": ["с братом Олегом", "с подругой Ниной", "с коллегой Артёмом", "с тётей Верой"],
    "places": ["набережной", "кремля", "старого рынка", "ботанического сада"],
    "animals": [("собаку", ["Бим", "Жулька", "Граф"]), ("кошку", ["Муся", "Дымка", "Сима"])],
    "books": [
        ("«Мастер и Маргарита»", "Булгакова"),
        ("«Пикник на обочине»", "Стругацких"),
        ("«Лавр»", "Водолазкина"),
        ("«Белая гвардия»", "Булгакова"),
        ("«Обломов»", "Гончарова"),
    ],
    "dishes": [
        ("плов", "бараниной", "баранина"),
        ("борщ", "свёклой", "свёкла"),
        ("ризотто", "грибами", "грибы"),
        ("сырники", "творогом", "творог"),
    ],
    "jobs": ["фармацевтом", "архитектором", "переводчиком", "фельдшером"],
    "hobbies": ["гончарному делу", "сальсе", "акварели", "резьбе по дереву"],
    "items": [
        ("велосипед", "велосипед", "38000"),
        ("кофемашину", "кофемашина", "21000"),
        ("палатку", "палатка", "9000"),
        ("дрон", "дрон", "45000"),
    ],
    "topics": ["годовой отчёт", "выездной семинар", "квартальный план", "договор с клиентом"],
}


def planted_en(rng: random.Random, v: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The events of one English-speaking user: exchanges with the questions they answer."""
    c1, c2, c3 = rng.sample(v["cities"], 3)
    comp1, comp2 = rng.sample(v["companions"], 2)
    animal, names = rng.choice(v["animals"])
    pet = rng.choice(names)
    (b1, a1), (b2, a2) = rng.sample(v["books"], 2)
    dish, ingredient = rng.choice(v["dishes"])
    job = rng.choice(v["jobs"])
    hobby = rng.choice(v["hobbies"])
    item, price = rng.choice(v["items"])
    place = rng.choice(v["places"])
    return [
        {
            "tag": "trip1",
            "user": f"I went to {c1} with {comp1} last weekend, we stayed near the {place}.",
            "assistant": f"That sounds lovely! {c1} is beautiful this time of year.",
            "ask": [
                ("date", f"When did I go to {c1}?", ["user"]),
                ("single", f"Who did I travel to {c1} with?", ["user"]),
            ],
        },
        {
            "tag": "trip2",
            "user": f"Just back from {c2}, {comp2} and I did a food tour there.",
            "assistant": f"Welcome back! A food tour is a great way to see {c2}.",
            "ask": [("date", f"When was I in {c2}?", ["user"])],
        },
        {
            "tag": "pet",
            "user": f"We adopted a {animal} named {pet} from the shelter today!",
            "assistant": f"Congratulations! {pet} is a wonderful name for a {animal}.",
            "ask": [
                ("single", f"What is the name of the {animal} we adopted?", ["user"]),
                ("date", f"When did we adopt {pet}?", ["user"]),
            ],
        },
        {
            "tag": "book1",
            "user": "Can you suggest a novel for my long flight next week?",
            "assistant": f"I'd recommend {b1} by {a1}; it is gripping and not too long.",
            "ask": [("single", "Which novel did you suggest for my flight?", ["assistant"])],
        },
        {
            "tag": "book2",
            "user": "I need something calm to read before bed, any idea?",
            "assistant": f"Try {b2} by {a2}, it reads slowly and gently.",
            "ask": [],
        },
        {
            "tag": "dish",
            "user": f"What could I cook tonight with some {ingredient}?",
            "assistant": f"Make {dish}: cook the {ingredient} with garlic and finish with lemon.",
            "ask": [("single", f"Which dish did you suggest for the {ingredient}?", ["assistant"])],
        },
        {
            "tag": "job",
            "user": f"My sister just got hired as a {job} at the hospital in {c3}.",
            "assistant": f"That's great news for your sister, being a {job} is rewarding.",
            "ask": [("single", "What job did my sister get hired for?", ["user"])],
        },
        {
            "tag": "hobby",
            "user": f"I signed up for {hobby} classes on Tuesday evenings.",
            "assistant": f"{hobby.capitalize()} is a relaxing way to end the day.",
            "ask": [
                ("single", "What classes did I sign up for?", ["user"]),
                ("date", f"When did I sign up for {hobby} classes?", ["user"]),
            ],
        },
        {
            "tag": "item",
            "user": f"I finally bought a {item}, it cost {price} euros.",
            "assistant": f"Enjoy the new {item}! That price sounds fair.",
            "ask": [("single", f"How much did my {item} cost?", ["user"])],
        },
    ], [
        ("multi", "Which cities have I traveled to?", ["trip1:user", "trip2:user"]),
        ("multi", "What books have you recommended to me?", ["book1:assistant", "book2:assistant"]),
    ]


def planted_ru(rng: random.Random, v: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The events of one Russian-speaking user."""
    (c1, p1), (_, p2), (_, p3) = rng.sample(v["cities"], 3)
    comp1, comp2 = rng.sample(v["companions"], 2)
    animal, names = rng.choice(v["animals"])
    pet = rng.choice(names)
    (b1, a1), (b2, a2) = rng.sample(v["books"], 2)
    dish, ingredient, ingredient_nom = rng.choice(v["dishes"])
    job = rng.choice(v["jobs"])
    hobby = rng.choice(v["hobbies"])
    item, item_nom, price = rng.choice(v["items"])
    costs = "стоила" if item_nom.endswith("а") else "стоил"
    place = rng.choice(v["places"])
    return [
        {
            "tag": "trip1",
            "user": f"На выходных я ездил в {c1} {comp1}, жили недалеко от {place}.",
            "assistant": f"Звучит здорово! В {p1} сейчас очень красиво.",
            "ask": [
                ("date", f"Когда я ездил в {c1}?", ["user"]),
                ("single", f"С кем я ездил в {c1}?", ["user"]),
            ],
        },
        {
            "tag": "trip2",
            "user": f"Вернулся из поездки: в {p2} мы {comp2} ходили на гастрономическую экскурсию.",
            "assistant": "С возвращением! Такая экскурсия — отличный способ узнать город.",
            "ask": [("date", f"Когда я был в {p2}?", ["user"])],
        },
        {
            "tag": "pet",
            "user": f"Мы сегодня взяли из приюта {animal} по кличке {pet}!",
            "assistant": f"Поздравляю! {pet} — чудесная кличка.",
            "ask": [
                ("single", f"Как зовут {animal}, которую мы взяли из приюта?", ["user"]),
                ("date", f"Когда мы взяли из приюта {animal} {pet}?", ["user"]),
            ],
        },
        {
            "tag": "book1",
            "user": "Посоветуй роман для долгого перелёта на следующей неделе.",
            "assistant": f"Советую {b1} {a1}: захватывает и не слишком длинный.",
            "ask": [("single", "Какой роман ты посоветовал для перелёта?", ["assistant"])],
        },
        {
            "tag": "book2",
            "user": "Хочу почитать что-нибудь спокойное перед сном, есть идеи?",
            "assistant": f"Попробуй {b2} {a2}, читается медленно и мягко.",
            "ask": [],
        },
        {
            "tag": "dish",
            "user": f"Что приготовить сегодня на ужин, если есть {ingredient_nom}?",
            "assistant": f"Приготовь {dish} с {ingredient}, добавь чеснок и немного лимона.",
            "ask": [("single", "Какое блюдо ты предложил приготовить на ужин?", ["assistant"])],
        },
        {
            "tag": "job",
            "user": f"Мою сестру взяли работать {job} в больницу в {p3}.",
            "assistant": "Отличная новость для сестры! Это важная работа.",
            "ask": [("single", "Кем взяли работать мою сестру?", ["user"])],
        },
        {
            "tag": "hobby",
            "user": f"Я записался на курсы по {hobby}, занятия по вторникам вечером.",
            "assistant": "Прекрасное занятие, чтобы отдохнуть после работы.",
            "ask": [
                ("single", "На какие курсы я записался?", ["user"]),
                ("date", "Когда я записался на курсы?", ["user"]),
            ],
        },
        {
            "tag": "item",
            "user": f"Наконец купил {item}, отдал {price} рублей.",
            "assistant": "Отличная покупка! Цена вполне разумная.",
            "ask": [("single", f"Сколько {costs} {item_nom}?", ["user"])],
        },
    ], [
        ("multi", "В каких городах я побывал?", ["trip1:user", "trip2:user"]),
        ("multi", "Какие книги ты мне советовал?", ["book1:assistant", "book2:assistant"]),
    ]


FILLER_EN = [
    (
        "Can you help me rewrite this email about the {topic}?",
        "Sure, here is a shorter version of the email about the {topic} that keeps the main point.",
    ),
    (
        "What is the weather usually like in {city} in spring?",
        "Spring in {city} is mild, with some rain; pack a light jacket.",
    ),
    (
        "Do you know any good books about productivity?",
        "Many people like books that focus on small habits rather than big plans.",
    ),
    (
        "I might visit {city} someday, is it expensive?",
        "{city} is moderately priced; food is cheaper away from the centre.",
    ),
    (
        "How long should I boil {ingredient}?",
        "It depends on the size, but usually ten to fifteen minutes is enough.",
    ),
    (
        "Remind me to call the bank tomorrow.",
        "I can't set reminders, but you could add it to your phone's calendar.",
    ),
    (
        "What's a good stretch after running?",
        "A standing quad stretch and a calf stretch against a wall work well.",
    ),
    (
        "My {topic} meeting got moved again.",
        "That's frustrating; maybe ask for a fixed slot for the {topic}.",
    ),
    (
        "Give me a synonym for 'important'.",
        "You could use 'significant', 'crucial' or 'essential'.",
    ),
    (
        "Is it better to rent or buy a {item}?",
        "If you use a {item} rarely, renting is usually cheaper.",
    ),
    (
        "How do I keep my houseplants alive?",
        "Water them when the top of the soil is dry and give them indirect light.",
    ),
    ("What's the capital of Australia?", "The capital of Australia is Canberra."),
    (
        "I feel tired after lunch every day.",
        "A short walk after lunch and a lighter meal often help with that.",
    ),
    (
        "Can you explain compound interest simply?",
        "You earn interest on your interest, so savings grow faster over time.",
    ),
    (
        "Which novels are good for a book club?",
        "Pick novels with moral dilemmas; they spark the best discussions.",
    ),
    (
        "How do I say thank you in Portuguese?",
        "You say 'obrigado', or 'obrigada' if you are a woman.",
    ),
    (
        "Any tips for a job interview as a {job}?",
        "Prepare stories about real cases you handled as a {job}.",
    ),
    (
        "What should I pack for a weekend trip?",
        "Pack layers, comfortable shoes, a charger and any medicine you need.",
    ),
    ("Tell me a fun fact about octopuses.", "Octopuses have three hearts and blue blood."),
    (
        "I want to cook something with {ingredient} but not {dish}.",
        "You could roast the {ingredient} with herbs instead.",
    ),
]

FILLER_RU = [
    (
        "Помоги переписать письмо про {topic}.",
        "Вот короткий вариант письма про {topic}, главное сохранено.",
    ),
    ("Какая погода обычно в {p} весной?", "Весной в {p} прохладно и бывают дожди, возьми куртку."),
    (
        "Посоветуй книги про продуктивность.",
        "Многим нравятся книги о маленьких привычках, а не о больших планах.",
    ),
    (
        "Может быть, когда-нибудь съезжу в {c}, там дорого?",
        "Цены средние, еда дешевле подальше от центра.",
    ),
    ("Сколько варить гречку?", "Обычно минут пятнадцать-двадцать под крышкой."),
    (
        "Напомни завтра позвонить в банк.",
        "Я не умею ставить напоминания, добавь это в календарь телефона.",
    ),
    (
        "Какую растяжку делать после пробежки?",
        "Подойдут растяжка квадрицепса стоя и икроножных мышц у стены.",
    ),
    (
        "Встречу про {topic} опять перенесли.",
        "Неприятно; попробуй договориться о постоянном времени.",
    ),
    (
        "Подскажи синоним к слову «важный».",
        "Можно сказать «значимый», «существенный» или «ключевой».",
    ),
    (
        "Что лучше — арендовать или купить {item}?",
        "Если пользоваться редко, аренда обычно выгоднее.",
    ),
    (
        "Как не загубить комнатные растения?",
        "Поливай, когда верхний слой земли сухой, и держи в рассеянном свете.",
    ),
    ("Какая столица у Австралии?", "Столица Австралии — Канберра."),
    ("После обеда я всё время сонный.", "Помогает короткая прогулка после обеда и лёгкая еда."),
    (
        "Объясни просто, что такое сложный процент.",
        "Проценты начисляются и на проценты, поэтому сбережения растут быстрее.",
    ),
    (
        "Какие романы подойдут для книжного клуба?",
        "Выбирай романы с моральными дилеммами, они вызывают лучшие споры.",
    ),
    ("Как сказать спасибо по-португальски?", "Говорят «обригаду», а женщины — «обригада»."),
    (
        "Есть советы для собеседования {job}?",
        "Подготовь истории о реальных случаях из своей практики.",
    ),
    (
        "Что взять в поездку на выходные?",
        "Возьми одежду слоями, удобную обувь, зарядку и лекарства.",
    ),
    ("Расскажи интересный факт про осьминогов.", "У осьминогов три сердца и голубая кровь."),
    (
        "Хочу приготовить что-то новое на ужин.",
        "Попробуй запечь овощи с травами, это просто и вкусно.",
    ),
]


def _filler(rng: random.Random, lang: str, v: dict[str, Any]) -> tuple[str, str]:
    if lang == "en":
        q, a = rng.choice(FILLER_EN)
        dish, ingredient = rng.choice(v["dishes"])
        slots = {
            "topic": rng.choice(v["topics"]),
            "city": rng.choice(v["cities"]),
            "ingredient": ingredient,
            "dish": dish,
            "item": rng.choice(v["items"])[0],
            "job": rng.choice(v["jobs"]),
        }
    else:
        q, a = rng.choice(FILLER_RU)
        c, p = rng.choice(v["cities"])
        slots = {
            "topic": rng.choice(v["topics"]),
            "c": c,
            "p": p,
            "item": rng.choice(v["items"])[0],
            "job": rng.choice(v["jobs"]).removesuffix("ом") + "а",
        }
    return q.format(**slots), a.format(**slots)


def generate_user(user_id: str, lang: str, seed: int) -> User:
    """One user's conversation and questions, the same for the same seed."""
    rng = random.Random(f"{seed}:{user_id}")
    v = EN if lang == "en" else RU
    events, multi = (planted_en if lang == "en" else planted_ru)(rng, v)
    slots = rng.sample(range(SESSIONS * EXCHANGES), len(events))
    at = dict(zip(slots, events, strict=True))
    start = datetime(2026, 1, 5, 9, tzinfo=UTC) + timedelta(days=rng.randrange(20))
    user = User(user_id, lang)
    where: dict[str, str] = {}
    day = start
    for session in range(SESSIONS):
        day += timedelta(days=rng.randrange(3, 12))
        for n in range(EXCHANGES):
            slot = session * EXCHANGES + n
            when = (day + timedelta(minutes=3 * n)).isoformat()
            event = at.get(slot)
            said, reply = (event["user"], event["assistant"]) if event else _filler(rng, lang, v)
            for speaker, text in (("user", said), ("assistant", reply)):
                turn_id = f"{user_id}:s{session + 1:02d}:e{n + 1:02d}:{speaker[0]}"
                user.turns.append(Turn(turn_id, session + 1, when, speaker, text))
                if event:
                    where[f"{event['tag']}:{speaker}"] = turn_id
    asked = (day + timedelta(days=3)).isoformat()
    for event in events:
        for kind, question, sides in event["ask"]:
            evidence = [where[f"{event['tag']}:{s}"] for s in sides]
            user.questions.append(
                Question(f"{user_id}:q{len(user.questions) + 1}", kind, question, evidence, asked)
            )
    for kind, question, tags in multi:
        user.questions.append(
            Question(
                f"{user_id}:q{len(user.questions) + 1}",
                kind,
                question,
                [where[t] for t in tags],
                asked,
            )
        )
    return user


def generate(seed: int = SEED) -> list[User]:
    """The whole set."""
    return [generate_user(user_id, lang, seed) for user_id, lang in USERS]


def as_data(users: list[User], seed: int) -> dict[str, Any]:
    return {"seed": seed, "users": [asdict(u) for u in users]}


def load(path: Path = OUT) -> list[User]:
    """The set as shipped (``bench/recall_set.json``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        User(
            u["id"],
            u["lang"],
            [Turn(**t) for t in u["turns"]],
            [Question(**q) for q in u["questions"]],
        )
        for u in data["users"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    users = generate(args.seed)
    text = json.dumps(as_data(users, args.seed), ensure_ascii=False, indent=0)
    args.out.write_text(text + "\n", encoding="utf-8")
    turns = sum(len(u.turns) for u in users)
    questions = sum(len(u.questions) for u in users)
    print(f"{args.out}: {len(users)} users, {turns} turns, {questions} questions")


if __name__ == "__main__":
    main()
