"""The repetition guard of the faster-whisper engine, against text Whisper invents: a window
whose text loops is decoded again with repeats forbidden, and a loop that survives is cut,
deterministically (no temperature fallback)."""
from __future__ import annotations

from audio.guards import LOOP_COMPRESSION, compression_ratio, cut_repeats, loops


def segment(text: str, start: float = 0.0) -> dict:
    return {"start": start, "end": start + 1, "text": text, "words": []}


def timed(words: list[str], start: float = 0.0) -> dict:
    entries = [{"word": w, "start": start + i, "end": start + i + 0.5} for i, w in enumerate(words)]
    return {"start": start, "end": entries[-1]["end"], "text": " ".join(words), "words": entries}


def test_compression_ratio_tells_a_loop_from_speech():
    """Whisper's own test — a repeated phrase compresses far better than speech."""
    speech = "So this is the sick corpus. I have a cold, so I probably sound quite different than the acoustic corpus."
    loop = "Montreal " + "but I think it's a good idea to do that, " * 20
    assert compression_ratio(speech) < LOOP_COMPRESSION < compression_ratio(loop)
    assert not loops([segment(speech)]) and loops([segment(loop)])
    assert loops([segment("uh, " * 30), segment("uh, " * 30, 1)])  # a loop spread over segments
    assert compression_ratio("") == 0.0


def test_cut_repeats_keeps_the_first_saying_of_a_looped_phrase():
    """A phrase said three times or more in a row is cut to its first saying,
    across segment boundaries, whatever the case and punctuation; what follows the loop stays."""
    looped = [segment("Montreal, but I think it's a good idea to do that,"),
              segment("but I think it's a good idea to do that, But I think it's a good idea"),
              segment("to do that. but I think it's a good idea to do that. Forced aligner.")]
    out = cut_repeats(looped)
    assert " ".join(s["text"] for s in out) == "Montreal, but I think it's a good idea to do that, Forced aligner."
    assert len(out) == 2  # the segment made only of repeats is gone
    assert cut_repeats([segment("uh uh uh uh uh uh uh forced aligner")])[0]["text"] == "uh forced aligner"


def test_cut_repeats_leaves_speech_that_only_repeats_twice():
    """'very very' or a phrase said twice is speech, not a loop."""
    speech = [segment("it is very very good, it is very very good indeed"), segment("words words and more")]
    assert cut_repeats(speech) == speech


def test_cut_repeats_trims_timed_words_and_the_segment_end():
    """Word timings stay true after a cut: the cut segment keeps only its kept words' timings, and
    ends with the last of them."""
    out = cut_repeats([timed(["Montreal"] + ["uh,"] * 6 + ["forced", "aligner."])])
    assert [w["word"] for w in out[0]["words"]] == ["Montreal", "uh,", "forced", "aligner."]
    assert out[0]["text"] == "Montreal uh, forced aligner."
    assert out[0]["end"] == out[0]["words"][-1]["end"]
    looped = [timed(["la"] * 5), timed(["la"] * 5, 10), timed(["end"], 20)]
    out = cut_repeats(looped)
    assert [s["text"] for s in out] == ["la", "end"] and out[1]["words"][0]["start"] == 20


# The real recording that sends base into a loop at temperature 0 (or, on other CPUs, into an
# invented sentence) is tested with both models in tests/test_invented_text.py
# (test_uh_uh_uh_gives_at_most_a_few_words): at most a few words, the same every time.
