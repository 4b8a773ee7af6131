"""The full-text index on both backends: pre-stemmed words match any word form, a key's
documents are invisible to another key, rare words rank and common words only add to them."""

from __future__ import annotations

from typing import Any

import pytest

from engine.store import fulltext
from engine.text import index_stems


def put(store: Any, key: str, docs: dict[int, str]) -> None:
    rows = [(doc, fulltext.indexed(key, index_stems(text))) for doc, text in docs.items()]
    store._write(lambda conn: fulltext.put(conn, "faq_index", rows, new=True))


def search(store: Any, key: str, text: str, limit: int = 10) -> list[tuple[int, float]]:
    return store._read(
        lambda conn: fulltext.search(conn, "faq_index", key, index_stems(text), limit=limit)
    )


def test_word_forms_match_and_keys_stay_apart(store: Any) -> None:
    put(store, "a", {1: "Я живу в Берлине", 2: "We adopted two dogs"})
    put(store, "b", {3: "Берлин большой город", 4: "A dog barks"})
    assert [d for d, _ in search(store, "a", "Берлин")] == [1]
    assert [d for d, _ in search(store, "a", "dog adopting")] == [2]
    assert [d for d, _ in search(store, "b", "dogs")] == [4]
    assert search(store, "c", "Берлин dog") == []


def test_the_better_match_ranks_first_and_ties_go_to_the_newer(store: Any) -> None:
    put(store, "a", {1: "tea", 2: "tea and cake", 3: "tea and cake"})
    found = search(store, "a", "cake tea")
    assert [d for d, _ in found][:2] == [3, 2] and found[2][0] == 1
    assert found[0][1] == found[1][1] > found[2][1] > 0


def test_common_words_only_score_what_rare_words_found(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fulltext, "COMMON", 3)
    put(store, "a", {i: f"coffee note {i}" for i in range(1, 7)})
    put(store, "a", {7: "coffee with a croissant", 8: "a croissant alone"})
    found = search(store, "a", "coffee croissant", limit=5)
    assert [d for d, _ in found[:2]] == [7, 8] and all(s > 0 for _, s in found[:2])
    assert found[2:] == [(6, 0.0), (5, 0.0), (4, 0.0)]  # then the newest with "coffee"


def test_removed_documents_are_gone_from_the_index(store: Any) -> None:
    put(store, "a", {1: "green tea", 2: "black tea"})
    store._write(lambda conn: fulltext.remove(conn, "faq_index", [1]))
    assert [d for d, _ in search(store, "a", "tea")] == [2]
    assert store._read(lambda conn: fulltext.size(conn, "faq_index")) == 1


@pytest.mark.parametrize(
    "text",
    [
        "ǅemal² ½ ㎏ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 Ⅻ",
        "a:b & c | !d 'e' \"f\" (g) <-> h*",
        "ﬁve ǈ ß 𝟘𝟙 ٣٤ 五六",
        "NEAR(x y) AND OR NOT",
    ],
)
def test_any_text_is_indexed_and_searched_without_error(store: Any, text: str) -> None:
    put(store, "a", {1: text})
    assert index_stems(text)
    assert [d for d, _ in search(store, "a", text)] == [1]
