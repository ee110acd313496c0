"""Made-up corpora and the files tests write: the synthetic word-for-word "translation" of the fast
tier (``synth_pairs``), the copy corpus (``SENTENCES``), the toy corpus with planted bad lines
(``toy_pairs``; the ``toy`` fixture trains on it), joined evaluation sets, Hugging Face datasets
saved to disk, and a few writers of parallel files (``write_source_only_words``: a joint
vocabulary with source-only pieces)."""

from __future__ import annotations

import random
from pathlib import Path

from seq2seq.config import DataConfig
from seq2seq.study.evalsets import EvalSet

# ---- synthetic: a made-up word-for-word "translation", for the fast tier ----------------------

# source:target words; a few umlauts and an eszett so the source is not plain ASCII.
LEXICON = [
    tuple(pair.split(":"))
    for pair in """
    ein:a eine:a der:the die:the das:the und:and mann:man frau:woman kind:child hund:dog katze:cat
    vogel:bird haus:house straße:street tür:door baum:tree wasser:water brot:bread ball:ball
    fahrrad:bike läuft:runs spielt:plays sitzt:sits steht:stands isst:eats trinkt:drinks sieht:sees
    hält:holds rot:red blau:blue grün:green groß:big klein:small alt:old jung:young schnell:fast
    müde:tired fröhlich:happy auf:on in:in vor:before neben:beside über:over mit:with zwei:two
    drei:three viele:many heute:today
    """.split()
]


def synth_pairs(n: int, seed: int, max_words: int = 24) -> list[tuple[str, str]]:
    """n made-up (German-looking, English) sentence pairs of 2 .. max_words words, translated
    word for word, capitalised, ending in a full stop."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(LEXICON) for _ in range(rng.randint(2, max_words))]
        src, tgt = (" ".join(w[side] for w in words) for side in (0, 1))
        pairs.append((src.capitalize() + ".", tgt.capitalize() + "."))
    return pairs


def write_pairs(prefix: Path, pairs: list[tuple[str, str]], src: str = "de", tgt: str = "en"):
    for lang, side in ((src, 0), (tgt, 1)):
        Path(f"{prefix}.{lang}").write_text("".join(p[side] + "\n" for p in pairs), "utf-8")


def eval_files(synth_corpus, tmp_path, n: int = 10):
    """The first ``n`` pairs of ``synth_corpus``'s validation set as ``ev.de`` and ``ev.en``."""
    for lang in ("de", "en"):
        lines = (synth_corpus / f"val.{lang}").read_text(encoding="utf-8").splitlines()[:n]
        (tmp_path / f"ev.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return tmp_path / "ev.de", tmp_path / "ev.en"


def joined_evalset(n: int, concat_k: int, seed: int = 5, max_words: int = 12) -> EvalSet:
    """``n`` made-up pairs as the k = 1 lines, plus k = 2..concat_k lines joined by
    ``build_eval_set``'s rule (consecutive non-overlapping groups, joined with a space)."""
    pairs = synth_pairs(n, seed, max_words)
    src, ref = [s for s, _ in pairs], [t for _, t in pairs]
    out = EvalSet("toy", list(src), list(ref), [1] * n, "toy")
    for k in range(2, concat_k + 1):
        for j in range(0, n - k + 1, k):
            out.src.append(" ".join(src[j : j + k]))
            out.ref.append(" ".join(ref[j : j + k]))
            out.k.append(k)
    return out


def lines(evalset: EvalSet, k: int) -> list[int]:
    """The indices of ``evalset``'s lines of k joined sentences."""
    return [i for i, x in enumerate(evalset.k) if x == k]


# ---- the copy corpus: 12 short English sentences, target = source ----------------------------

SENTENCES = [
    "a dog runs in the park",
    "two men play football",
    "the girl reads a book",
    "a cat sleeps on the sofa",
    "children swim in the lake",
    "a man rides a bike",
    "the woman sings a song",
    "a boy eats an apple",
    "people walk in the city",
    "the bird sits on a tree",
    "a chef cooks some food",
    "the old man drinks tea",
]


def write_split(d, prefix, src, tgt=None, src_lang="de", tgt_lang="en", raw=False):
    """``prefix.<src_lang>`` and ``prefix.<tgt_lang>`` in ``d`` (target = source by default)."""
    for lang, lines in ((src_lang, src), (tgt_lang, src if tgt is None else tgt)):
        path = d / f"{prefix}.{lang}"
        if raw:
            path.write_bytes(lines)
        else:
            path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(d / prefix)


def write_source_only_words(d: Path) -> tuple[str, list[str]]:
    """The copy corpus (``SENTENCES`` x3) as training pairs whose source says "die" / "ein" where
    the target says "the" / "a" (pieces only the source side uses, with a joint vocabulary), and
    one pair whose target (31 x "zebra", over a ``data.max_len`` of 30) is dropped: its piece is
    in the vocabulary but in no kept target. Returns the training prefix and the kept targets."""
    d.mkdir(exist_ok=True)
    tgt = SENTENCES * 3
    src = [f" {s} ".replace(" the ", " die ").replace(" a ", " ein ").strip() for s in tgt]
    return write_split(d, "train", [*src, "ein zebra"], [*tgt, " ".join(["zebra"] * 31)]), tgt


# ---- the toy corpus: lowercase ASCII, the target the source's words reversed -------------------

WORDS = (
    "the cat dog sleeps runs a red blue door house we you walk home big small tree sun old "
    "man sees eats bread water and on in"
).split()
# the lines of the ``toy`` fixture's training split that hold a planted bad line
MONSTER_LINE, ZWSP_LINE, EMPTY_TGT_LINE, BLANK_SRC_LINE = 5, 9, 12, 14
SIX = ["the cat sleeps", "", "a red door", " ", "\t\u00a0", "we walk home"]  # blank-looking lines
FIVE = [
    "the cat sleeps .",
    "a red door .",
    "we walk home .",
    "the old man eats bread .",
    "you see a big tree .",
]
# characters that other readers take for a line break: (character, what the line reads as)
ODD = {
    "nul": ("\x00", "bc"),
    "u2028": ("\u2028", "b c"),
    "u0085": ("\u0085", "b c"),
    "lone_cr": ("\r", "b c"),
}
# characters the toy corpus never had
UNSEEN = [
    "the ☃ sleeps .",
    "∑ a red door .",
    "ねこ と 猫 .",
    "The Cat Sleeps .",
    "a blorptak walks home .",
    "we walk home .",
]


def toy_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    src = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + " ." for _ in range(n)]
    return src, [" ".join(s.split()[-2::-1]) + " ." for s in src]


def write_raw_lines(path, lines: list[str], final_newline: bool = True) -> None:
    path.write_bytes(("\n".join(lines) + ("\n" if final_newline else "")).encode())


# ---- a word reversal: random words w0..w29, the target the same words reversed ----------------


def write_word_reversal(folder, n: int, seed: int = 0) -> None:
    """``n`` pairs of random words and the same words reversed, as train and valid files."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]
    for split, size in (("train", n), ("val", 8)):
        src = [" ".join(rng.choices(words, k=rng.randint(2, 12))) for _ in range(size)]
        (folder / f"{split}.de").write_text("".join(s + "\n" for s in src))
        (folder / f"{split}.en").write_text("".join(" ".join(s.split()[::-1]) + "\n" for s in src))


# ---- files and datasets ------------------------------------------------------------------------


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def arrow_config(folder: Path, tmp_path: Path, **kw) -> DataConfig:
    """The data section of ``folder/train.*`` on the arrow backend, cached in ``tmp_path/c``."""
    return DataConfig(
        train=str(folder / "train"), backend="arrow", cache_dir=str(tmp_path / "c"), **kw
    )


def table_ids(table) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (source ids, target ids) of every row of an Arrow table of pairs."""
    return list(
        zip(
            map(tuple, table.column("src_ids").to_pylist()),
            map(tuple, table.column("tgt_ids").to_pylist()),
            strict=True,
        )
    )


def hf_dataset(folder: Path, rows: list[dict]) -> str:
    """``rows`` as the train and validation splits of a local dataset (``save_to_disk``)."""
    import datasets

    ds = datasets.Dataset.from_list(rows)
    datasets.DatasetDict({"train": ds, "validation": ds}).save_to_disk(folder)
    return str(folder)


def translation_rows(sentences: list[str]) -> list[dict]:
    """Rows of a translation dataset: a ``translation`` dict (de, en), an ``id`` and a list."""
    return [
        {"translation": {"de": s, "en": s}, "id": i, "toks": s.split()}
        for i, s in enumerate(sentences)
    ]


# the one-line error for a ``translation_rows`` dataset read with src_field 'translation'
DICT_FIELD = (
    "data.hf.src_field 'translation': row 0 holds a dict with keys de, en, not text; "
    "use translation.de"
)
