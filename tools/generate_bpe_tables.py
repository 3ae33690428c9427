#!/usr/bin/env python3
"""Generates src/tokenizer/bpe_tables.inc, the character tables behind the byte-level BPE
path (bpe_pre_tokenizer.cc and nfc.cc).

Source of truth: Hugging Face tokenizers 0.23.3 itself (the project venv), probed per code
point, not Python's unicodedata: the Split pre-tokenizer's regex runs on the Oniguruma copy
linked into tokenizers (its own Unicode version for \\p{L}, \\p{N}, \\s and case folding), and
the NFC normalizer is the crate unicode-normalization-alignments 0.1.12 (pre-Unicode 13).
  * LETTER / NUMBER / SPACE: which code points `\\p{L}`, `\\p{N}`, `\\s` match;
  * the non-ASCII characters that `(?i:...)` folds onto s, t, r, e, v, m, l, d;
  * NFC: each character's full decomposition (NFD), the combining class of each mark the crate
    knows (probed by reordering around U+0334 / U+0301, as generate_bert_tables.py does), and
    the primary compositions: the canonical pairs (a, b) whose NFC is their composite;
  * NFC_CHECK: the characters that NFC may change or that may compose with the character
    before them (not NFC-stable, nonzero class, or second of a pair). Text without one is
    left as it is.
An emulation of NFC built from the tables is checked against tokenizers' NFC on the corpora
given and on random combining-heavy text.

Usage: .venv/bin/python tools/generate_bpe_tables.py [--out src/tokenizer/bpe_tables.inc]
           [--check-corpus ../shared/corpus/udhr.tsv ...]
"""

import argparse
import random
import sys
import unicodedata

import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

EXPECTED_TOKENIZERS_VERSION = "0.23.3"
MAX_CODE_POINT = 0x10FFFF
BLOCK_SHIFT = 7
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

LETTER, NUMBER, SPACE, NFC_CHECK = 1, 2, 4, 8


def code_points():
    return [c for c in range(MAX_CODE_POINT + 1) if not 0xD800 <= c <= 0xDFFF]


def matched_set(pattern, points):
    """Code points of `points` that the Split regex `pattern` matches, one character each."""
    text = "".join(chr(c) for c in points)
    kept = pre_tokenizers.Split(Regex(pattern), "removed").pre_tokenize_str(text)
    unmatched = set()
    for _, (begin, end) in kept:
        unmatched.update(range(begin, end))
    return {points[i] for i in range(len(points)) if i not in unmatched}


def probe_classes(points):
    flags = [0] * (MAX_CODE_POINT + 1)
    for bit, pattern in ((LETTER, r"\p{L}"), (NUMBER, r"\p{N}"), (SPACE, r"\s")):
        for c in matched_set(pattern, points):
            flags[c] |= bit
    # The complement class of the patterns must be exactly "none of the three".
    other = matched_set(r"[^\s\p{L}\p{N}]", points)
    for c in points:
        if (c in other) != (flags[c] & (LETTER | NUMBER | SPACE) == 0):
            sys.exit(f"[^\\s\\p{{L}}\\p{{N}}] disagrees with the classes at U+{c:04X}")
    return flags


def probe_folds(points):
    """Non-ASCII characters that `(?i:x)` matches for each contraction letter x."""
    folds = {}
    for letter in "strevmld":
        for c in matched_set(f"(?i:{letter})", points):
            if c >= 0x80:
                folds[c] = letter
            elif chr(c).lower() != letter:
                sys.exit(f"(?i:{letter}) matches ASCII {chr(c)!r}")
    return folds


def hangul_nfd(c):
    index = c - HANGUL_FIRST
    lead, vowel, trail = 0x1100 + index // 588, 0x1161 + (index % 588) // 28, 0x11A7 + index % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def probe_nfc(points, flags):
    nfd, nfc = normalizers.NFD(), normalizers.NFC()
    decompositions, ccc, compositions = {}, {}, {}
    for c in points:
        s = chr(c)
        decomposed = nfd.normalize_str(s)
        if HANGUL_FIRST <= c <= HANGUL_LAST:
            if decomposed != hangul_nfd(c) or nfc.normalize_str(decomposed) != s:
                sys.exit(f"Hangul U+{c:04X} is not decomposed arithmetically")
            continue
        if decomposed != s:
            decompositions[c] = decomposed
        value = unicodedata.combining(s)
        if value:
            probe_text = "a" + s + "\u0334" if value > 1 else "a\u0301" + s
            if nfd.normalize_str(probe_text) != probe_text:
                ccc[c] = value
        if nfc.normalize_str(s) != s:
            flags[c] |= NFC_CHECK
        if c in ccc:
            flags[c] |= NFC_CHECK
        parts = unicodedata.decomposition(s).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            a, b = int(parts[0], 16), int(parts[1], 16)
            if nfc.normalize_str(chr(a) + chr(b)) == s:
                compositions[(a, b)] = c
    for (_, b) in compositions:
        flags[b] |= NFC_CHECK
    for c in list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3)):  # Hangul V and T jamo
        flags[c] |= NFC_CHECK
    for c, decomposed in decompositions.items():
        if any(ord(d) in decompositions for d in decomposed):
            sys.exit(f"NFD of U+{c:04X} is not fully decomposed")
    return decompositions, ccc, compositions


def emulate_nfc(text, tables):
    decompositions, ccc, compositions = tables
    points = []
    for ch in text:
        c = ord(ch)
        d = hangul_nfd(c) if HANGUL_FIRST <= c <= HANGUL_LAST else decompositions.get(c, ch)
        points.extend(ord(x) for x in d)
    # Canonical ordering.
    for i in range(1, len(points)):
        j = i
        while j > 0 and ccc.get(points[j], 0) and ccc.get(points[j - 1], 0) > ccc.get(points[j], 0):
            points[j - 1], points[j] = points[j], points[j - 1]
            j -= 1
    out = []
    starter = -1
    last_class = -1
    for c in points:
        cls = ccc.get(c, 0)
        if starter >= 0 and (last_class < cls or (last_class == 0 and len(out) - 1 == starter)):
            s = out[starter]
            composed = None
            if 0x1100 <= s <= 0x1112 and 0x1161 <= c <= 0x1175:
                composed = HANGUL_FIRST + ((s - 0x1100) * 21 + (c - 0x1161)) * 28
            elif HANGUL_FIRST <= s <= HANGUL_LAST and (s - HANGUL_FIRST) % 28 == 0 and 0x11A8 <= c <= 0x11C2:
                composed = s + (c - 0x11A7)
            else:
                composed = compositions.get((s, c))
            if composed is not None:
                out[starter] = composed
                continue
        if cls == 0:
            starter = len(out)
        last_class = cls
        out.append(c)
    return "".join(chr(c) for c in out)


def check_nfc(texts, tables):
    nfc = normalizers.NFC()
    for text in texts:
        expected = nfc.normalize_str(text)
        got = emulate_nfc(text, tables)
        if got != expected:
            sys.exit(f"NFC emulation differs on {text[:80]!r}:\n  expected {expected[:120]!r}\n  got {got[:120]!r}")
    return len(texts)


def random_texts(tables, flags, count=30000, seed=1):
    decompositions, ccc, compositions = tables
    rng = random.Random(seed)
    marks = list(ccc)
    firsts = sorted({a for a, _ in compositions})
    seconds = sorted({b for _, b in compositions})
    flagged = [c for c in range(MAX_CODE_POINT + 1) if flags[c] & NFC_CHECK]
    hangul = list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A7, 0x11C3)) + \
        list(range(0xAC00, 0xAC40))
    pools = [marks, firsts, seconds, flagged, list(decompositions), hangul, list(range(0x20, 0x7F))]
    return ["".join(chr(rng.choice(rng.choice(pools))) for _ in range(rng.randint(1, 10))) for _ in range(count)]


def two_stage(values):
    blocks, index, seen = [], [], {}
    size = 1 << BLOCK_SHIFT
    for start in range(0, MAX_CODE_POINT + 1, size):
        block = tuple(values[start:start + size])
        if block not in seen:
            seen[block] = len(blocks)
            blocks.append(block)
        index.append(seen[block])
    return index, blocks


def write(out_path, flags, folds, tables, notes):
    decompositions, ccc, compositions = tables
    index, blocks = two_stage(flags)
    index_type = "uint8_t" if len(blocks) <= 256 else "uint16_t"
    lines = [
        f"// Generated by tools/generate_bpe_tables.py from Hugging Face tokenizers {tokenizers.__version__}; do not edit.",
        "// Included by bpe_pre_tokenizer.cc and nfc.cc, which define kBpeLetter .. kBpeNfcCheck,",
        "// BpeDecomposition, BpeCombiningClass and BpeComposition.",
    ]
    lines += [f"// {note}" for note in notes]
    lines.append(f"inline constexpr int kBpeBlockShift = {BLOCK_SHIFT};")
    lines.append(f"// Flags of c: kBpeBlocks[(kBpeBlockIndex[c >> {BLOCK_SHIFT}] << {BLOCK_SHIFT}) + (c & {(1 << BLOCK_SHIFT) - 1})].")
    lines.append(f"inline constexpr {index_type} kBpeBlockIndex[] = {{")
    for i in range(0, len(index), 24):
        lines.append("  " + ", ".join(str(v) for v in index[i:i + 24]) + ",")
    lines.append("};")
    lines.append("inline constexpr uint8_t kBpeBlocks[] = {")
    for block in blocks:
        for i in range(0, len(block), 32):
            lines.append("  " + ",".join(str(v) for v in block[i:i + 32]) + ",")
    lines.append("};")
    lines.append("// Non-ASCII characters that (?i:...) matches for an ASCII letter of the contractions.")
    lines.append("inline constexpr std::pair<char32_t, char> kBpeCaseFolds[] = {")
    for c in sorted(folds):
        lines.append(f"  {{0x{c:04X}, '{folds[c]}'}},")
    if not folds:
        lines.append("  {0, 0},")
    lines.append("};")
    pool = []
    entries = []
    for c in sorted(decompositions):
        entries.append((c, len(pool), len(decompositions[c])))
        pool.extend(ord(d) for d in decompositions[c])
    lines.append("// Full canonical decomposition (NFD) of each character but Hangul syllables, sorted.")
    lines.append("inline constexpr BpeDecomposition kBpeDecompositions[] = {")
    for i in range(0, len(entries), 6):
        lines.append("  " + " ".join(f"{{0x{c:04X}, {o}, {n}}}," for c, o, n in entries[i:i + 6]))
    lines.append("};")
    lines.append("inline constexpr char32_t kBpeDecompositionPool[] = {")
    for i in range(0, len(pool), 12):
        lines.append("  " + " ".join(f"0x{c:04X}," for c in pool[i:i + 12]))
    lines.append("};")
    lines.append("// Nonzero canonical combining classes the NFC crate knows, sorted.")
    lines.append("inline constexpr BpeCombiningClass kBpeCombiningClasses[] = {")
    items = sorted(ccc.items())
    for i in range(0, len(items), 8):
        lines.append("  " + " ".join(f"{{0x{c:04X}, {v}}}," for c, v in items[i:i + 8]))
    lines.append("};")
    lines.append("// Primary compositions (first, second) -> composite, sorted by (first, second); Hangul aside.")
    lines.append("inline constexpr BpeComposition kBpeCompositions[] = {")
    pairs = sorted(compositions.items())
    for i in range(0, len(pairs), 4):
        lines.append("  " + " ".join(f"{{0x{a:04X}, 0x{b:04X}, 0x{c:04X}}}," for (a, b), c in pairs[i:i + 4]))
    lines.append("};")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="src/tokenizer/bpe_tables.inc")
    parser.add_argument("--check-corpus", nargs="*", default=[])
    args = parser.parse_args()
    if tokenizers.__version__ != EXPECTED_TOKENIZERS_VERSION:
        sys.exit(f"tokenizers {tokenizers.__version__} found, {EXPECTED_TOKENIZERS_VERSION} expected")
    points = code_points()
    flags = probe_classes(points)
    folds = probe_folds(points)
    tables = probe_nfc(points, flags)
    texts = random_texts(tables, flags)
    for path in args.check_corpus:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.extend(line.rstrip("\n") for line in f)
    checked = check_nfc(texts, tables)
    everything = points

    def differs(name, bit, category_test):
        probed = {c for c in everything if flags[c] & bit}
        expected = {c for c in everything if category_test(c)}
        return f"{name}: {len(probed)}; {len(probed - expected)} beyond unicodedata {unicodedata.unidata_version}, " \
               f"{len(expected - probed)} of it absent"

    notes = [
        differs("\\p{L}", LETTER, lambda c: unicodedata.category(chr(c)).startswith("L")),
        differs("\\p{N}", NUMBER, lambda c: unicodedata.category(chr(c)).startswith("N")),
        f"\\s: {sum(1 for c in everything if flags[c] & SPACE)} code points",
        f"NFC: {len(tables[0])} decompositions, {len(tables[1])} combining classes, {len(tables[2])} compositions, "
        f"{sum(1 for c in everything if flags[c] & NFC_CHECK)} code points to check; emulation checked on {checked} texts",
    ]
    write(args.out, flags, folds, tables, notes)
    print("\n".join(notes))
    print("case folds:", {hex(c): l for c, l in folds.items()})


if __name__ == "__main__":
    main()
