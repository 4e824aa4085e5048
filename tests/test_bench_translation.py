"""The scoring of the translation benchmark (bench/translation.py's chrF): a wrong score would
make every figure it reports wrong. No audio and no model here."""
import pytest

from bench.translation import RUSSIAN, chrf


def test_a_perfect_translation_scores_100_and_an_unrelated_one_0():
    assert chrf(["The train leaves at seven."], ["The train leaves at seven."]) == pytest.approx(100)
    assert chrf(["xyz"], ["The train leaves at seven."]) == 0
    assert chrf([""], ["anything"]) == 0


def test_spaces_do_not_count_and_case_does():
    assert chrf(["Thetrain  leaves"], ["The train leaves"]) == pytest.approx(100)
    assert chrf(["the train leaves"], ["The train leaves"]) < 100


def test_recall_weighs_more_than_precision():
    """beta 2: a translation that says half of the reference loses more than one that says all
    of it and as much again."""
    reference = ["The coffee is too hot, wait a little."]
    half = chrf(["The coffee is too hot"], reference)
    padded = chrf(["The coffee is too hot, wait a little. The coffee is too hot"], reference)
    assert 0 < half < padded < 100


def test_a_small_case_worked_by_hand():
    """"ab" against "abc": unigrams P 2/2, R 2/3; bigrams P 1/1, R 1/2; higher orders: nothing
    offered or wanted past "abc"'s one trigram (P 0, R 0). Averaged over 6 orders:
    P = 2/6, R = (2/3 + 1/2)/6; F2 = 5PR / (4P + R)."""
    p, r = 2 / 6, (2 / 3 + 1 / 2) / 6
    assert chrf(["ab"], ["abc"]) == pytest.approx(100 * 5 * p * r / (4 * p + r))


def test_the_set_has_twenty_four_named_clips_each_with_a_reference():
    assert len(RUSSIAN) == 24 and len({name for name, _, _ in RUSSIAN}) == 24
    assert all(russian and english.isascii() and not russian.isascii() for _, russian, english in RUSSIAN)
