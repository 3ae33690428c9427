#!/usr/bin/env python3
"""Generates src/tokenizer/bert_tables.inc, the character tables behind bert_normalizer.cc.

Source of truth: Hugging Face tokenizers 0.23.3 itself (the project venv), probed one code
point at a time. The Python `unicodedata` module cannot stand in for it, because the Rust
crates that tokenizers links each carry their own Unicode version:
  * clean_text's "control" test, strip_accents' Mn test and BertPreTokenizer's punctuation
    test come from the crate unicode_categories 0.1.1, whose tables are years old: its
    "other" set holds no unassigned (Cn) code point at all and misses newer Cf characters,
    its Mn set lacks about 400 of today's marks, its punctuation about 100 characters;
  * NFD comes from unicode-normalization-alignments 0.1.12 (also pre-Unicode 13: no
    decomposition for U+11938, no combining class for about 100 newer marks);
  * lowercase is Rust's `char::to_lowercase` (Unicode 17 in the wheel's std);
  * whitespace is Rust's `char::is_whitespace` (Unicode White_Space, utf8::IsWhitespace).
The differences from Python's unicodedata (whose version this script prints) are counted at
the end of the run and written into the header of the output.

The encoder treats the normalizer as a function of each character, except for NFD's
canonical reordering: the crates disagree on which marks are Mn, so 83 code points keep a
nonzero combining class in the NFD crate yet survive strip_accents (U+08D4..U+08E1, the
musical symbols U+1D165.., Glagolitic U+1E000.., ...), and their order among each other is
the crate's. The tables therefore keep, besides the Mn flag, the crate's "nonzero combining
class" flag for every code point (a dropped mark with class 0 still ends a reordering run)
and the class of every such mark NFD keeps (dropped ones too: Hugging Face's offsets follow
positions in NFD's reordered output). A character-by-character emulation built from the
tables is checked against the real BertNormalizer and BertPreTokenizer on the corpora given
and on random combining-heavy text.

Usage (needs the project venv, tokenizers==0.23.3):
  .venv/bin/python tools/generate_bert_tables.py [--out src/tokenizer/bert_tables.inc]
      [--check-corpus ../shared/corpus/udhr.tsv ...]
"""

import argparse
import random
import sys
import unicodedata

import tokenizers
from tokenizers import normalizers, pre_tokenizers

EXPECTED_TOKENIZERS_VERSION = "0.23.3"
MAX_CODE_POINT = 0x10FFFF
BLOCK_SHIFT = 7
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

# Flag bits; bert_normalizer.cc defines the same names with a k prefix.
REMOVED = 1       # clean_text drops it (0, U+FFFD, "other" except \t \n \r)
WHITESPACE = 2    # Rust char::is_whitespace
CHINESE = 4       # handle_chinese_chars puts spaces around it
MARK = 8          # strip_accents drops it (after NFD); set only on characters NFD keeps
DECOMPOSES = 16   # NFD replaces it (the Nfd table); not set for Hangul syllables
LOWER = 32        # lowercase changes it (the Lower table)
PUNCTUATION = 64  # BertPreTokenizer isolates it
COMBINING = 128   # nonzero canonical combining class in the NFD crate

ASCII_PUNCTUATION = set(range(0x21, 0x30)) | set(range(0x3A, 0x41)) | set(range(0x5B, 0x61)) | set(range(0x7B, 0x7F))


def code_points():
    return (c for c in range(MAX_CODE_POINT + 1) if not 0xD800 <= c <= 0xDFFF)


def bert(clean=False, chinese=False, strip=False, lower=False):
    return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip,
                                      lowercase=lower)


def hangul_nfd(c):
    index = c - HANGUL_FIRST
    lead, vowel, trail = 0x1100 + index // 588, 0x1161 + (index % 588) // 28, 0x11A7 + index % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def probe():
    """Flags and mappings for every code point, from tokenizers itself."""
    clean, chinese, strip, lower = bert(clean=True), bert(chinese=True), bert(strip=True), bert(lower=True)
    nfd = normalizers.NFD()
    pre = pre_tokenizers.BertPreTokenizer()
    flags = [0] * (MAX_CODE_POINT + 1)
    nfd_map, lower_map, ccc = {}, {}, {}
    for c in code_points():
        s = chr(c)
        cleaned = clean.normalize_str(s)
        if cleaned == "":
            flags[c] |= REMOVED
        elif cleaned != s and cleaned != " ":
            sys.exit(f"clean_text maps U+{c:04X} to {cleaned!r}: not a per-character removal or space")
        if chinese.normalize_str(s) == f" {s} ":
            flags[c] |= CHINESE
        decomposed = nfd.normalize_str(s)
        if HANGUL_FIRST <= c <= HANGUL_LAST:
            if decomposed != hangul_nfd(c):
                sys.exit(f"NFD of Hangul U+{c:04X} is not the arithmetic decomposition")
        elif decomposed != s:
            flags[c] |= DECOMPOSES
            nfd_map[c] = decomposed
        elif strip.normalize_str(s) == "":
            flags[c] |= MARK
        elif strip.normalize_str(s) != s:
            sys.exit(f"strip_accents maps U+{c:04X}, which NFD keeps, to {strip.normalize_str(s)!r}")
        lowered = lower.normalize_str(s)
        if lowered != s:
            flags[c] |= LOWER
            lower_map[c] = lowered
        words = [w for w, _ in pre.pre_tokenize_str("a" + s + "a")]
        if words == ["a", "a"]:
            flags[c] |= WHITESPACE
        elif words == ["a", s, "a"]:
            flags[c] |= PUNCTUATION
        elif words != ["a" + s + "a"]:
            sys.exit(f"BertPreTokenizer splits 'a' U+{c:04X} 'a' into {words!r}")
        if cleaned == " " and c != 0x20 and not flags[c] & WHITESPACE:
            sys.exit(f"clean_text maps U+{c:04X} to a space but the pre-tokenizer does not split on it")
        # Combining classes never change once assigned, but the crate may not know c yet: a
        # mark it knows reorders around U+0334 (class 1) or U+0301 (class 230).
        value = unicodedata.combining(s)
        if value:
            probe_text = "a" + s + "\u0334" if value > 1 else "a\u0301" + s
            if nfd.normalize_str(probe_text) != probe_text:
                flags[c] |= COMBINING
                if not flags[c] & DECOMPOSES:
                    ccc[c] = value
    for c, value in ccc.items():
        if not flags[c] & MARK and flags[c] & (LOWER | REMOVED | WHITESPACE | PUNCTUATION | CHINESE):
            sys.exit(f"U+{c:04X} reorders and survives strip_accents but has flags {flags[c]}")
    for c, decomposed in nfd_map.items():
        for d in decomposed:
            if flags[ord(d)] & DECOMPOSES:
                sys.exit(f"NFD of U+{c:04X} is not fully decomposed")
        kept = "".join(d for d in decomposed if not flags[ord(d)] & MARK)
        if strip.normalize_str(chr(c)) != kept:
            sys.exit(f"strip_accents of U+{c:04X} is not its NFD without Mn")
    return flags, nfd_map, lower_map, ccc


def emulate_normalizer(text, tables, strip, lower):
    """What bert_normalizer.cc does, character by character."""
    flags, nfd_map, lower_map, ccc = tables
    out = []
    run_begin = 0  # survivors with a nonzero class after this index reorder among each other

    def emit(d):
        nonlocal run_begin
        c = ord(d)
        if not strip:
            out.append(lower_map.get(c, d) if lower else d)
            return
        if flags[c] & MARK:
            if not flags[c] & COMBINING:
                run_begin = len(out)
            return
        if flags[c] & COMBINING:
            i = len(out)
            while i > run_begin and ccc[ord(out[i - 1])] > ccc[c]:
                i -= 1
            out.insert(i, d)
            return
        out.append(lower_map.get(c, d) if lower else d)
        run_begin = len(out)

    for ch in text:
        c = ord(ch)
        if flags[c] & REMOVED:
            continue
        if flags[c] & WHITESPACE:
            ch, c = " ", 0x20
        chinese = bool(flags[c] & CHINESE)
        if chinese:
            emit(" ")
        if strip and HANGUL_FIRST <= c <= HANGUL_LAST:
            decomposed = hangul_nfd(c)
        else:
            decomposed = nfd_map.get(c, ch) if strip else ch
        for d in decomposed:
            emit(d)
        if chinese:
            emit(" ")
    return "".join(out)


def emulate_pre_tokenizer(text, flags):
    words, word = [], []
    for ch in text:
        f = flags[ord(ch)]
        if f & (WHITESPACE | PUNCTUATION):
            if word:
                words.append("".join(word))
                word = []
            if f & PUNCTUATION:
                words.append(ch)
        else:
            word.append(ch)
    if word:
        words.append("".join(word))
    return words


def check_emulation(texts, tables):
    pre = pre_tokenizers.BertPreTokenizer()
    count = 0
    for strip, lower in ((True, True), (False, True), (True, False), (False, False)):
        reference = bert(clean=True, chinese=True, strip=strip, lower=lower)
        for text in texts:
            expected = reference.normalize_str(text)
            got = emulate_normalizer(text, tables, strip, lower)
            if got != expected:
                sys.exit(f"emulation differs (strip={strip}, lower={lower}) on {text[:80]!r}:\n"
                         f"  expected {expected[:200]!r}\n  got      {got[:200]!r}")
            words = [w for w, _ in pre.pre_tokenize_str(expected)]
            if emulate_pre_tokenizer(expected, tables[0]) != words:
                sys.exit(f"pre-tokenizer emulation differs on {expected[:80]!r}")
            count += 1
    return count


def random_texts(tables, count=20000, seed=1):
    """Combining-heavy random strings: marks (survivors among them) after decomposable
    letters, CJK, Hangul, controls, punctuation."""
    flags, nfd_map, _, ccc = tables
    rng = random.Random(seed)
    marks = [c for c in code_points() if unicodedata.combining(chr(c))]
    survivors = [c for c in ccc if not flags[c] & MARK]
    flagged = [c for c in code_points() if flags[c]]
    cjk = list(range(0x4E00, 0x4E40)) + list(range(0xAC00, 0xAC40)) + list(range(0xF900, 0xF940))
    pools = [marks, survivors, list(nfd_map), flagged, list(range(0x20, 0x7F)), cjk]
    texts = []
    for _ in range(count):
        length = rng.randint(1, 12)
        texts.append("".join(chr(rng.choice(rng.choice(pools))) for _ in range(length)))
    return texts


def describe_differences(tables):
    """How the probed sets differ from Python's unicodedata, for the output header."""
    flags, nfd_map, lower_map, ccc = tables

    def category(c):
        return unicodedata.category(chr(c))

    lines = []

    def count(name, probed, expected):
        extra, missing = probed - expected, expected - probed
        lines.append(f"{name}: {len(probed)}; {len(extra)} beyond unicodedata's set, {len(missing)} of it absent")

    everything = list(code_points())
    removed = {c for c in everything if flags[c] & REMOVED}
    count("clean_text removes (vs Cc/Cf/Co/Cn but \\t\\n\\r, 0, U+FFFD)", removed,
          {c for c in everything if category(c) in ("Cc", "Cf", "Co", "Cn") and c not in (9, 10, 13)} | {0, 0xFFFD})
    lines.append(f"  {sum(1 for c in everything if category(c) == 'Cn' and c not in removed)} of the absent are "
                 "unassigned (Cn): the crate removes no unassigned code point")
    count("strip_accents drops (vs Mn)", {c for c in everything if flags[c] & MARK},
          {c for c in everything if category(c) == "Mn"})
    count("punctuation (vs ASCII punctuation + P*)", {c for c in everything if flags[c] & PUNCTUATION},
          ASCII_PUNCTUATION | {c for c in everything if category(c).startswith("P")})
    python_nfd = {c for c in everything if unicodedata.normalize("NFD", chr(c)) != chr(c)} - set(
        range(HANGUL_FIRST, HANGUL_LAST + 1))
    count("NFD decomposes (vs unicodedata NFD, Hangul aside)", set(nfd_map), python_nfd)
    count("nonzero combining class (vs unicodedata.combining)", {c for c in everything if flags[c] & COMBINING},
          {c for c in everything if unicodedata.combining(chr(c))})
    lines.append(f"  {sum(1 for c in ccc if not flags[c] & MARK)} of them survive strip_accents and are reordered")
    python_lower = {c: chr(c).lower() for c in everything if chr(c).lower() != chr(c)}
    count("lowercase changes (vs str.lower per character)", set(lower_map), set(python_lower))
    return lines


def mapping_table(name, mapping):
    """Sorted {code point, offset, length} rows and a pool of the mapped code points."""
    pool, rows = [], []
    for c in sorted(mapping):
        value = [ord(ch) for ch in mapping[c]]
        rows.append((c, len(pool), len(value)))
        pool.extend(value)
    if len(pool) >= 1 << 16 or max((r[2] for r in rows), default=0) >= 1 << 8:
        sys.exit(f"{name}: pool too large for uint16 offsets")
    out = [f"inline constexpr BertMapping kBert{name}Mappings[] = {{"]
    for i in range(0, len(rows), 4):
        out.append("    " + " ".join(f"{{0x{c:04X}, {o}, {n}}}," for c, o, n in rows[i:i + 4]))
    out.append("};")
    out.append(f"inline constexpr char32_t kBert{name}Pool[] = {{")
    pool = pool or [0]
    for i in range(0, len(pool), 10):
        out.append("    " + " ".join(f"0x{c:04X}," for c in pool[i:i + 10]))
    out.append("};")
    return out


def render(tables, differences):
    flags, nfd_map, lower_map, ccc = tables
    block_size = 1 << BLOCK_SHIFT
    blocks, stage1 = {}, []
    for start in range(0, MAX_CODE_POINT + 1, block_size):
        stage1.append(blocks.setdefault(tuple(flags[start:start + block_size]), len(blocks)))
    if len(blocks) > 256:
        sys.exit("more than 256 distinct blocks: stage 1 no longer fits uint8")
    out = [
        "// Generated by tools/generate_bert_tables.py from Hugging Face tokenizers "
        f"{tokenizers.__version__}; do not edit.",
        "// Included by bert_normalizer.cc, which defines the flag bits, BertMapping and BertCombining.",
        f"// Probed per code point; compared with Python's unicodedata {unicodedata.unidata_version}:",
    ]
    out += [f"//   {line}" for line in differences]
    out += [
        "",
        f"inline constexpr int kBertBlockShift = {BLOCK_SHIFT};",
        f"// Flags of c: kBertBlocks[(kBertBlockIndex[c >> {BLOCK_SHIFT}] << {BLOCK_SHIFT}) + (c & {block_size - 1})].",
        "inline constexpr uint8_t kBertBlockIndex[] = {",
    ]
    for i in range(0, len(stage1), 24):
        out.append("    " + " ".join(f"{b}," for b in stage1[i:i + 24]))
    out.append("};")
    out.append("inline constexpr uint8_t kBertBlocks[] = {")
    for block in blocks:
        for i in range(0, block_size, 32):
            out.append("    " + " ".join(f"{v}," for v in block[i:i + 32]))
    out.append("};")
    out.append("")
    out.append("// NFD (full canonical decomposition) of each character with kDecomposes.")
    out += mapping_table("Nfd", nfd_map)
    out.append("")
    out.append("// Rust's char::to_lowercase of each character with kLower.")
    out += mapping_table("Lower", lower_map)
    out.append("")
    out.append("// Combining class of each character with kCombining that NFD keeps: NFD orders runs of")
    out.append("// them by class (only those without kMark survive strip_accents).")
    out.append("inline constexpr BertCombining kBertCombining[] = {")
    rows = sorted(ccc.items())
    for i in range(0, len(rows), 6):
        out.append("    " + " ".join(f"{{0x{c:04X}, {v}}}," for c, v in rows[i:i + 6]))
    out.append("};")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="src/tokenizer/bert_tables.inc")
    parser.add_argument("--check-corpus", nargs="*", default=[], help="text files (udhr.tsv: text column) to check")
    args = parser.parse_args()
    if tokenizers.__version__ != EXPECTED_TOKENIZERS_VERSION:
        sys.exit(f"tokenizers {tokenizers.__version__} is installed; the tables must come from "
                 f"{EXPECTED_TOKENIZERS_VERSION}")
    tables = probe()
    flags = tables[0]
    for c in range(0x80):
        if flags[c] & (MARK | DECOMPOSES | CHINESE | COMBINING) or (flags[c] & LOWER and not 0x41 <= c <= 0x5A):
            sys.exit(f"ASCII U+{c:04X} has unexpected flags {flags[c]}")
    texts = random_texts(tables)
    for path in args.check_corpus:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                texts.append(line.split("\t", 1)[1] if path.endswith(".tsv") and "\t" in line else line)
    checked = check_emulation(texts, tables)
    differences = describe_differences(tables)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(render(tables, differences))
    print(f"{args.out}: {len(tables[1])} NFD, {len(tables[2])} lowercase, {len(tables[3])} combining entries; "
          f"emulation matched the reference on {checked} normalizations")
    for line in differences:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
