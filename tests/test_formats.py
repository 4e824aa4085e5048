"""Transcript formats from stored segments."""
from __future__ import annotations

import json

import pytest

from audio.formats import render

SEGMENTS = [{"start": 0.15, "end": 2.5, "text": "hello there"},
            {"start": 3661.2, "end": 3662.0, "text": "an hour later"}]


def test_txt():
    assert render("txt", "hello there an hour later", SEGMENTS) == "hello there an hour later\n"
    assert render("txt", "", []) == ""


def test_srt():
    assert render("srt", "", SEGMENTS) == (
        "1\n00:00:00,150 --> 00:00:02,500\nhello there\n\n"
        "2\n01:01:01,200 --> 01:01:02,000\nan hour later\n")


def test_vtt():
    assert render("vtt", "", SEGMENTS) == (
        "WEBVTT\n\n00:00:00.150 --> 00:00:02.500\nhello there\n\n"
        "01:01:01.200 --> 01:01:02.000\nan hour later\n")


def test_json():
    data = json.loads(render("json", "t", SEGMENTS, 3662.0))
    assert data == {"text": "t", "duration_seconds": 3662.0, "language": None, "language_probability": None,
                    "segments": SEGMENTS, "suppressed": []}
    told = json.loads(render("json", "t", SEGMENTS, 3662.0, language="ru", language_probability=0.97))
    assert (told["language"], told["language_probability"]) == ("ru", 0.97)


def test_json_lists_suppressed_text():
    """Dropped text is accounted for: the spans whose text the guards dropped are in the JSON, with their reasons."""
    dropped = [{"start": 30.0, "end": 36.5, "reason": "no_voice"}]
    assert json.loads(render("json", "t", SEGMENTS, 3662.0, suppressed=dropped))["suppressed"] == dropped


def test_unknown_format():
    with pytest.raises(ValueError):
        render("docx", "", [])


# Subtitle-sized cues from word timestamps.

LOREM = ("the quick brown fox jumps over a lazy dog while seven wizards quietly hex "
         "every brave juggler near this old harbour and then everyone goes home").split()


def whisper_segment(start: float, end: float, count: int) -> dict:
    """A segment as the whisper engine gives it: `count` words evenly over [start, end],
    each word string with a leading space."""
    step = (end - start) / count
    words = [{"word": " " + LOREM[i % len(LOREM)], "start": start + i * step,
              "end": start + (i + 0.8) * step} for i in range(count)]
    return {"start": start, "end": end, "text": "".join(w["word"] for w in words), "words": words}


def seconds(clock: str) -> float:
    hours, minutes, rest = clock.replace(",", ".").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def parse(fmt: str, body: str) -> list[tuple[float, float, list[str]]]:
    """The cues of an srt or vtt body, checking its shape on the way: srt blocks numbered from
    1, vtt after its header; a `start --> end` line, then the text lines."""
    if fmt == "vtt":
        assert body.startswith("WEBVTT\n\n")
        body = body[len("WEBVTT\n\n"):]
    assert body.endswith("\n") and "\n\n\n" not in body
    parsed = []
    for number, block in enumerate(body.rstrip("\n").split("\n\n"), 1):
        lines = block.split("\n")
        if fmt == "srt":
            assert lines.pop(0) == str(number)
        start, arrow, end = lines[0].split(" ")
        assert arrow == "-->" and ("," if fmt == "srt" else ".") in start
        assert lines[1:] and all(lines[1:])
        parsed.append((seconds(start), seconds(end), lines[1:]))
    return parsed


def assert_readable(parsed, words: list[str]):
    """Every cue at most 7 s and two lines of 42 characters; cues in order without overlap;
    together they say every word once, in order."""
    for (start, end, lines), following in zip(parsed, parsed[1:] + [None]):
        assert 0 <= end - start <= 7.0
        assert 1 <= len(lines) <= 2 and all(len(line) <= 42 for line in lines)
        if following:
            assert end <= following[0]
    assert " ".join(" ".join(lines) for _, _, lines in parsed).split() == words


@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_long_segment_becomes_readable_cues(fmt):
    """A 20 s segment of 60 words is cut into several short cues timed by their words."""
    segment = whisper_segment(10.0, 30.0, 60)
    parsed = parse(fmt, render(fmt, "", [segment]))
    assert len(parsed) >= 3
    assert_readable(parsed, [w["word"].strip() for w in segment["words"]])
    assert min(end - start for start, end, _ in parsed) >= 2.0  # no last cue of a word or two
    by_start = {round(w["start"], 3): w for w in segment["words"]}
    by_end = {round(w["end"], 3) for w in segment["words"]}
    for start, end, lines in parsed:  # a cue runs from its first word's start to its last's end
        assert by_start[start]["word"].strip() == lines[0].split()[0]
        assert end in by_end
    assert parsed[0][0] == 10.0 and parsed[-1][1] == round(segment["words"][-1]["end"], 3)


def test_cue_lines_are_balanced():
    """Text too long for one line is broken at a word into two lines of similar length."""
    segment = whisper_segment(0.0, 4.0, 10)  # 47 characters: one line would be too long
    [(_, _, lines)] = parse("srt", render("srt", "", [segment]))
    assert len(lines) == 2 and abs(len(lines[0]) - len(lines[1])) <= 8


def test_cue_at_most_seven_seconds_even_with_few_words():
    """Slow speech: few characters, but a cue still ends within 7 s of its start."""
    words = [{"word": f" w{i}", "start": 2.0 * i, "end": 2.0 * i + 1.5} for i in range(10)]
    segment = {"start": 0.0, "end": 19.5, "text": "".join(w["word"] for w in words), "words": words}
    parsed = parse("vtt", render("vtt", "", [segment]))
    assert len(parsed) == 4
    assert_readable(parsed, [f"w{i}" for i in range(10)])


def test_word_longer_than_a_line_stands_alone():
    long = "pneumonoultramicroscopicsilicovolcanoconiosis-like"  # 50 characters
    words = [{"word": " a", "start": 0.0, "end": 0.5}, {"word": " " + long, "start": 0.5, "end": 2.0},
             {"word": " b", "start": 2.0, "end": 2.5}]
    segment = {"start": 0.0, "end": 2.5, "text": f" a {long} b", "words": words}
    lines = [line for _, _, cue in parse("srt", render("srt", "", [segment])) for line in cue]
    assert long in lines
    assert " ".join(lines).split() == ["a", long, "b"]


def test_segment_without_words_is_split_in_proportion():
    """Older records have no word times: the text is cut at words and the segment's time
    shared out by their length, from the segment's start to its end."""
    long_b, long_c = "b" * 40, "c" * 40  # 30 + 40 + 40 characters over 11 s: 0.1 s each
    segment = {"start": 0.0, "end": 11.0, "text": " ".join(["a"] * 30 + [long_b, long_c])}
    parsed = parse("srt", render("srt", "", [segment]))
    assert [(start, end) for start, end, _ in parsed] == [(0.0, 3.0), (3.0, 7.0), (7.0, 11.0)]
    assert [lines for _, _, lines in parsed][1:] == [[long_b], [long_c]]

    text = " ".join(LOREM[i % len(LOREM)] for i in range(40))
    for fmt in ("srt", "vtt"):
        parsed = parse(fmt, render(fmt, "", [{"start": 5.0, "end": 20.0, "text": text},
                                             {"start": 21.0, "end": 22.0, "text": "done", "words": []}]))
        assert len(parsed) >= 4
        assert_readable(parsed, text.split() + ["done"])
        assert parsed[0][0] == 5.0 and parsed[-2][1] == 20.0 and parsed[-1][:2] == (21.0, 22.0)


def test_word_lasting_longer_than_a_cue_stands_alone():
    """A word held for 9 s cannot be cut: it is a cue of its own, the others around it."""
    words = [{"word": " so", "start": 0.0, "end": 0.5}, {"word": " mmmm", "start": 0.5, "end": 9.5},
             {"word": " yes", "start": 9.5, "end": 10.0}]
    segment = {"start": 0.0, "end": 10.0, "text": " so mmmm yes", "words": words}
    assert parse("vtt", render("vtt", "", [segment])) == [
        (0.0, 0.5, ["so"]), (0.5, 9.5, ["mmmm"]), (9.5, 10.0, ["yes"])]


def test_overlapping_segments_give_cues_in_order():
    """Engines may time a segment's first word before the last one's end: no cue overlaps."""
    first = {"start": 0.0, "end": 3.0, "text": "one two",
             "words": [{"word": "one", "start": 0.0, "end": 1.0}, {"word": "two", "start": 1.0, "end": 3.0}]}
    second = {"start": 2.5, "end": 4.0, "text": "three",
              "words": [{"word": "three", "start": 2.5, "end": 4.0}]}
    assert parse("srt", render("srt", "", [first, second])) == [
        (0.0, 3.0, ["one two"]), (3.0, 4.0, ["three"])]


def test_words_of_a_language_without_spaces_stay_joined():
    """Chinese from the whisper engine: its words carry no spaces, nor do the cue lines."""
    words = [{"word": "你好", "start": 0.0, "end": 0.5}, {"word": "世界", "start": 0.5, "end": 1.0}]
    segment = {"start": 0.0, "end": 1.0, "text": "你好世界", "words": words}
    assert render("vtt", "", [segment]) == "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n你好世界\n"


def test_json_keeps_words():
    """json gives each segment's words trimmed, timed to the millisecond."""
    segment = {"start": 0.0, "end": 1.2, "text": " Hello world",
               "words": [{"word": " Hello", "start": 0.0, "end": 0.51234},
                         {"word": " world ", "start": 0.6, "end": 1.19999}]}
    data = json.loads(render("json", "Hello world", [segment, SEGMENTS[1]], 3662.0))
    assert data["segments"][0]["words"] == [{"word": "Hello", "start": 0.0, "end": 0.512},
                                            {"word": "world", "start": 0.6, "end": 1.2}]
    assert data["segments"][0]["text"] == " Hello world" and data["segments"][1] == SEGMENTS[1]


DIARIZED = [
    {"start": 0.0, "end": 1.0, "text": "good morning", "speaker": "S1",
     "words": [{"word": "good", "start": 0.0, "end": 0.4, "speaker": "S1"},
               {"word": "morning", "start": 0.5, "end": 1.0, "speaker": "S1"}]},
    {"start": 1.5, "end": 2.0, "text": "hi", "speaker": "S2",
     "words": [{"word": "hi", "start": 1.5, "end": 2.0, "speaker": "S2"}]},
    {"start": 2.5, "end": 3.0, "text": "how are you", "speaker": "S1"},
]


def test_speakers_in_every_format():
    """Every format names who speaks: cues start with the speaker's label or the owner's name, txt
    has a paragraph per speaker turn, json keeps `speaker` on segments and words and lists names."""
    names = {"S2": "Bob"}
    assert render("srt", "", DIARIZED, names=names) == (
        "1\n00:00:00,000 --> 00:00:01,000\n[Speaker 1] good morning\n\n"
        "2\n00:00:01,500 --> 00:00:02,000\n[Bob] hi\n\n"
        "3\n00:00:02,500 --> 00:00:03,000\n[Speaker 1] how are you\n")
    assert "\n[Bob] hi\n" in render("vtt", "", DIARIZED, names=names)
    assert render("txt", "good morning hi how are you", DIARIZED, names=names) == (
        "[Speaker 1] good morning\n\n[Bob] hi\n\n[Speaker 1] how are you\n")
    document = json.loads(render("json", "good morning hi how are you", DIARIZED, names=names))
    assert document["speakers"] == {"S1": "Speaker 1", "S2": "Bob"}
    assert [s["speaker"] for s in document["segments"]] == ["S1", "S2", "S1"]
    assert document["segments"][0]["words"][1]["speaker"] == "S1"
    assert "speakers" not in json.loads(render("json", "hello there", SEGMENTS))
