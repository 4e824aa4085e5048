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
    assert data == {"text": "t", "duration_seconds": 3662.0, "segments": SEGMENTS}


def test_unknown_format():
    with pytest.raises(ValueError):
        render("docx", "", [])
