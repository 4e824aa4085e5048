"""The scoring of the accuracy benchmark (bench/wer.py): a wrong word count would make every
WER it reports wrong. No audio and no download here."""
from bench.wer import align, normalise, number_words, score


def test_one_extra_word_is_one_insertion_in_three():
    errors = score("the cat sat", "the cat sat down")
    assert (errors.substitutions, errors.deletions, errors.insertions) == (0, 0, 1)
    assert errors.wer == 1 / 3


def test_substitutions_deletions_and_insertions_are_told_apart():
    errors = align("one two three four five six seven".split(), "one too three five six seven eight".split())
    assert (errors.substitutions, errors.deletions, errors.insertions) == (1, 1, 1)
    assert errors.reference_words == 7 and errors.wer == 3 / 7


def test_an_empty_hypothesis_deletes_every_word():
    errors = score("go forward ten meters", "")
    assert (errors.deletions, errors.wer) == (4, 1.0)


def test_spelling_that_carries_no_meaning_is_not_an_error():
    assert score("and mister john dashwood had ten", "And Mr. John Dashwood had 10.").wer == 0
    assert score("m f a is like putty", "MFA is like putty!").wer == 0
    assert score("montreal uh forced um aligner", "Montréal forced aligner").wer == 0


def test_a_held_hesitation_is_still_a_hesitation():
    """However many letters a transcriber gives a held "um", it is the hesitation the scoring
    leaves out on both sides, not an inserted word; words that only look like one still count."""
    assert score("montreal forced a liner", "Montreal forced, ummmmmmmmm, a liner.").wer == 0
    assert normalise("Uhhh, hmmmm... mm-hmm, ahhh, ээээ, эмм") == []
    assert normalise("to err is human, ahem, hum") == ["to", "err", "is", "human", "ahem", "hum"]
    assert normalise("the man hummed, mmm") == ["the", "man", "hummed"]


def test_normaliser():
    assert normalise("Hello, World -- it's  “quoted”; <unk> [laughter] OK") == [
        "hello", "world", "it's", "quoted", "okay"]
    assert normalise("Всё по-своему, Ёлка!") == ["все", "по", "своему", "елка"]
    assert normalise("I have 1,204 cats", numbers=False) == ["i", "have", "1", "204", "cats"]
    assert number_words(1204) == "one thousand two hundred four"
    assert number_words(90) == "ninety" and number_words(15) == "fifteen"


def test_the_benchmark_recognises_with_the_service_engines():
    """The accuracy benchmark calls the service's own engine on the service's windows
    (a benchmark of another code path would score text no worker writes)."""
    from bench.accuracy import Recognizer, open_recognizer
    from media import speech_pcm

    recognize, compute = open_recognizer(Recognizer("pocketsphinx", None, "en", "en"))
    heard = recognize(speech_pcm(), "en")
    assert len(heard.text.split()) >= 10 and heard.language == "en"
    assert heard.wall > 0 and heard.cpu > 0
    assert compute is None  # pocketsphinx has no compute type to report


def test_a_result_names_the_instruction_families_its_words_depend_on():
    """Text differs by CPU kind, so every accuracy result says which kind wrote it."""
    from audio.whisper import cpu_flags
    from bench.common import TEXT_FLAGS, cpu

    flags = cpu_flags()
    described = cpu()
    if flags is None:  # not x86: the Features line stands for the flags
        assert "part" in described
    else:
        named = set(described.partition(": ")[2].split())
        assert named & set(TEXT_FLAGS) == flags & set(TEXT_FLAGS)
