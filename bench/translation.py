"""Translation into English: how close the multilingual `base` model's English comes to reference
translations, as chrF, and what translating costs in CPU against plain recognition. Prints a
table and writes bench/results/translation.json.

    .venv/bin/python -m bench.translation [--clips 24]

The Russian set is RUSSIAN below: 24 sentences of everyday speech (ru01 to ru24), each with a
reference English translation written for this benchmark. Nobody recorded them: each is spoken
by espeak-ng's Russian voice (`espeak-ng -v ru`, which must be installed: Debian's espeak-ng)
into a WAV file, decoded by the service's own decoder (audio.decode, 16 kHz mono). Synthetic
speech is not a person's: the figures say what the model does with clear, flat, accentless
Russian, and are no promise for real recordings.

The engine is the service's own (audio.whisper, its guards included), loaded once in this
process on two CPU threads with the service's compute type, and called as the recognize step
calls it (`actors.steps.recognize`): plain recognition decodes each clip once (the language
detected, or asked); a record asked to translate decodes it a second time with Whisper's
translate task, told the language the first decoding used. CPU is this process's (the model's
threads run in it), per second of audio. Two settings of the language: detected (the service's
default, TRANSCRIBER_LANGUAGE=auto) and asked (`language=ru` with the upload).

chrF is written here (`chrf`): the character n-gram F-score of Popović (2015), n from 1 to 6,
beta 2 (recall weighs four times precision), spaces removed, case kept, counted over the whole
set (the n-gram matches of every clip added before the precision and recall of each order are
taken, then averaged over the orders), 0 to 100.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench import data
from bench.common import report

# (name, Russian sentence as spoken, reference English translation)
RUSSIAN = [
    ("ru01", "Доброе утро, сегодня мы обсудим планы на следующую неделю.",
     "Good morning, today we will discuss the plans for next week."),
    ("ru02", "Поезд в Москву отправляется в семь часов вечера.", "The train to Moscow leaves at seven in the evening."),
    ("ru03", "Пожалуйста, закройте окно, в комнате очень холодно.", "Please close the window, it is very cold in the room."),
    ("ru04", "Мой брат работает врачом в большой больнице.", "My brother works as a doctor in a big hospital."),
    ("ru05", "Вчера мы ходили в театр и смотрели новую пьесу.",
     "Yesterday we went to the theatre and watched a new play."),
    ("ru06", "Где находится ближайшая станция метро?", "Where is the nearest metro station?"),
    ("ru07", "Я люблю читать книги по вечерам.", "I love reading books in the evenings."),
    ("ru08", "Завтра будет дождь, возьмите с собой зонт.", "It will rain tomorrow, take an umbrella with you."),
    ("ru09", "Наша команда выиграла чемпионат в прошлом году.", "Our team won the championship last year."),
    ("ru10", "Сколько стоит этот билет?", "How much does this ticket cost?"),
    ("ru11", "Магазин открывается в девять часов утра.", "The shop opens at nine in the morning."),
    ("ru12", "Дети играют в парке возле реки.", "The children are playing in the park by the river."),
    ("ru13", "Я забыл свой телефон дома.", "I forgot my phone at home."),
    ("ru14", "Эта дорога ведёт к старому замку.", "This road leads to the old castle."),
    ("ru15", "Мы должны закончить отчёт до пятницы.", "We must finish the report by Friday."),
    ("ru16", "Моя сестра учится в университете в Петербурге.", "My sister studies at the university in Petersburg."),
    ("ru17", "Кофе слишком горячий, подождите немного.", "The coffee is too hot, wait a little."),
    ("ru18", "Самолёт приземлился точно по расписанию.", "The plane landed exactly on schedule."),
    ("ru19", "Врач сказал, что мне нужно больше отдыхать.", "The doctor said that I need to rest more."),
    ("ru20", "Летом мы поедем на море всей семьёй.", "In summer we will go to the sea with the whole family."),
    ("ru21", "Компьютер работает очень медленно после обновления.",
     "The computer works very slowly after the update."),
    ("ru22", "Библиотека закрыта по воскресеньям.", "The library is closed on Sundays."),
    ("ru23", "Он каждый день бегает пять километров.", "He runs five kilometres every day."),
    ("ru24", "Спасибо за помощь, без вас я бы не справился.",
     "Thank you for your help, I would not have managed without you."),
]
ORDER, BETA = 6, 2.0


def _grams(text: str, n: int) -> Counter:
    """The character n-grams of `text` with its whitespace removed."""
    squeezed = "".join(text.split())
    return Counter(squeezed[i:i + n] for i in range(len(squeezed) - n + 1))


def chrf(hypotheses: Sequence[str], references: Sequence[str], order: int = ORDER, beta: float = BETA) -> float:
    """chrF of the hypotheses against their references (one each), 0 to 100: for each n-gram
    order from 1 to `order`, the matches, hypothesis n-grams and reference n-grams of every pair
    added up; precision and recall of each order (0 where there is nothing to divide by)
    averaged over the orders; then their F-score with recall weighted `beta` times."""
    precisions, recalls = [], []
    for n in range(1, order + 1):
        matched = offered = wanted = 0
        for hypothesis, reference in zip(hypotheses, references, strict=True):
            said, meant = _grams(hypothesis, n), _grams(reference, n)
            matched += sum((said & meant).values())
            offered += sum(said.values())
            wanted += sum(meant.values())
        precisions.append(matched / offered if offered else 0.0)
        recalls.append(matched / wanted if wanted else 0.0)
    precision, recall = sum(precisions) / order, sum(recalls) / order
    if precision == 0 and recall == 0:
        return 0.0
    return 100 * (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def spoken(folder: Path, clips: Sequence[tuple[str, str, str]]) -> dict[str, bytes]:
    """Each clip's Russian sentence spoken by espeak-ng into a WAV file, decoded to the service's
    PCM (16 kHz mono s16)."""
    from audio.decode import pcm16k

    pcm = {}
    for name, russian, _ in clips:
        wav = folder / f"{name}.wav"
        subprocess.run(["espeak-ng", "-v", "ru", "-w", str(wav), russian], check=True, capture_output=True)
        pcm[name] = b"".join(pcm16k(wav))
    return pcm


class Measured:
    """One setting's CPU and audio seconds, texts and detected languages."""

    def __init__(self):
        self.cpu = self.audio = 0.0
        self.texts: list[str] = []
        self.languages: Counter = Counter()

    def decode(self, engine, pcm: bytes, language: str | None, task: str = "transcribe"):
        from audio.decode import BYTES_PER_SECOND

        started = time.process_time()
        result = engine.recognize(pcm, language, None, task)
        self.cpu += time.process_time() - started
        self.audio += len(pcm) / BYTES_PER_SECOND
        return result


def measure(clips: Sequence[tuple[str, str, str]]) -> dict:
    from audio.models import resolve
    from audio.whisper import WhisperEngine, default_compute
    from service import config

    compute = config.load().compute_type
    engine = WhisperEngine(resolve("base", data.CACHE / "models"), "cpu", threads=2, compute=compute)
    with tempfile.TemporaryDirectory(prefix="transcriber-translation-") as folder:
        pcm = spoken(Path(folder), clips)
    engine.recognize(pcm[clips[0][0]], None)  # the first decoding pays for loading: not counted
    settings = {}
    for asked in (None, "ru"):
        plain, english = Measured(), Measured()
        for name, _, _ in clips:
            heard = plain.decode(engine, pcm[name], asked)
            plain.texts.append(" ".join(s["text"] for s in heard.segments))
            plain.languages[heard.language] += 1
            told = asked or heard.language  # as the recognize step tells the translation
            translated = english.decode(engine, pcm[name], told, "translate")
            english.texts.append(" ".join(s["text"] for s in translated.segments))
        settings["detected" if asked is None else "asked ru"] = (plain, english)
    return {"settings": settings, "compute": compute or default_compute("cpu"),
            "audio_seconds": sum(len(p) for p in pcm.values()) / 32000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=len(RUSSIAN), help="how many of the Russian clips (from ru01)")
    parser.add_argument("--no-write", action="store_true", help="print only, write no result file")
    args = parser.parse_args()
    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng): it speaks the Russian set")
    clips = RUSSIAN[: args.clips]
    references = [english for _, _, english in clips]
    found = measure(clips)
    rows, extra = [], {"clips": [name for name, _, _ in clips], "compute": found["compute"], "texts": {}}
    for setting, (plain, english) in found["settings"].items():
        plain_cpu = plain.cpu / plain.audio
        both_cpu = (plain.cpu + english.cpu) / plain.audio
        detected = ", ".join(f"{code} {count}" for code, count in plain.languages.most_common())
        rows.append([f"recognition, language {setting}", len(clips), round(plain.audio, 1), "",
                     round(plain_cpu, 3), 1.0, detected])
        rows.append([f"translation, language {setting}", len(clips), round(plain.audio, 1),
                     round(chrf(english.texts, references), 1), round(both_cpu, 3), round(both_cpu / plain_cpu, 2),
                     ""])
        extra["texts"][setting] = {name: {"recognised": heard, "english": said}
                                  for (name, _, _), heard, said in zip(clips, plain.texts, english.texts)}
    print(f"base model, {found['compute']}, 2 threads; {len(clips)} synthetic Russian clips (espeak-ng -v ru), "
          f"{found['audio_seconds']:.1f} s of audio")
    report("translation", ["setting", "clips", "audio s", "chrF", "CPU s / audio s", "x recognition",
                           "languages detected"], rows, extra, write=not args.no_write)


if __name__ == "__main__":
    main()
