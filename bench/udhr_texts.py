"""The udhr texts the accuracy benchmarks run (bench/dtype_gate.py, bench/real_weight_agreement.py):
lines spread over the corpus's languages, plus long texts past every model's token window so
truncation runs too. One selection for both, so their figures are over the same kind of text.
Standard library only."""
from pathlib import Path

LONG_TEXTS = 20             # runs of consecutive lines of one language, past every model's window
LONG_TEXT_CHARACTERS = (2_000, 7_000)  # spread over this range: past 512 tokens, a few past 2,048


def read_corpus(corpus):
    """(language, text) of every non-empty line of the udhr TSV."""
    rows = []
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        language, _, text = line.partition("\t")
        text = " ".join(text.split())  # no tabs or stray line breaks inside one input line
        if text:
            rows.append((language, text))
    return rows


def spread_lines(rows, count):
    """`count` lines, every k-th of the file: the file runs language by language, so this
    spreads them over its languages. Returns (lines, k)."""
    step = len(rows) // count
    return rows[::step][:count], step


def long_texts(rows):
    """LONG_TEXTS texts, each consecutive lines of one language from evenly spaced starting
    points, joined until the text reaches its target length (targets spread over
    LONG_TEXT_CHARACTERS)."""
    texts = []
    low, high = LONG_TEXT_CHARACTERS
    for number in range(LONG_TEXTS):
        target = low + (high - low) * number // (LONG_TEXTS - 1)
        start = number * len(rows) // LONG_TEXTS
        language = rows[start][0]
        parts, length, index = [], 0, start
        while length < target:
            # Wrap to the language's first line when its text runs out.
            if index == len(rows) or rows[index][0] != language:
                index = next(i for i, row in enumerate(rows) if row[0] == language)
            parts.append(rows[index][1])
            length += len(rows[index][1]) + 1
            index += 1
        texts.append((language, " ".join(parts)))
    return texts


def write_texts(work, short, long):
    """WORK/texts.txt (one input per line, the short lines then the long texts) and
    WORK/languages.txt (each one's language, ", long" on the long ones); prints what they hold."""
    work = Path(work)
    texts = [text for _, text in short + long]
    labels = [language for language, _ in short] + [f"{language}, long" for language, _ in long]
    (work / "texts.txt").write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    (work / "languages.txt").write_text("".join(label + "\n" for label in labels), encoding="utf-8")
    return (f"{len(short)} udhr lines ({len(set(language for language, _ in short))} languages) + {len(long)} "
            f"long texts ({min(len(t) for _, t in long)}–{max(len(t) for _, t in long)} characters)")
