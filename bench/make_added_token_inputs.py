#!/usr/bin/env python3
"""Makes the added-token benchmark inputs for EmbeddingGemma's tokenizer.json, whose 6,415
added tokens nearly all start with "<" (<unused0>…<unused6241>, HTML tags such as <td> and
</div>, <start_of_turn>): text heavy in "<" is where finding added tokens costs most.

  gemma_html_N.txt  an HTML page: tables, lists, links, inline markup, a script, around udhr
                    lines (tags Gemma has as added tokens and tags it does not)
  gemma_code_N.txt  C++ with templates, includes, <, <=, << and <<=
  gemma_udhr_N.txt  the multilingual udhr text of make_tokenizer_inputs.py (few "<")

each cut so that Hugging Face tokenizers encodes it (with <bos> and <eos>) into exactly N
tokens. Deterministic: no randomness, lines chosen by stride.

Usage: make_added_token_inputs.py SHARED_DIR GEMMA_TOKENIZER_JSON OUTPUT_DIR
"""
import os
import sys

from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer_inputs import exact_prefix  # noqa: E402

SIZES = [4098]


def html_page(rows):
    """An HTML page whose text is `rows` of (language, text)."""
    parts = ['<!DOCTYPE html>\n<html lang="mul">\n<head>\n<meta charset="utf-8">\n'
             '<title>Universal Declaration of Human Rights</title>\n'
             '<link rel="stylesheet" href="/static/site.css">\n</head>\n<body>\n'
             '<div class="container">\n<h1>Universal Declaration of Human Rights</h1>\n']
    for index, (language, text) in enumerate(rows):
        words = text.split(" ")
        half = max(1, len(words) // 2)
        if index % 4 == 0:
            parts.append(f'<h2 id="{language}">{language}</h2>\n<table class="articles">\n<thead>\n'
                         '<tr><th>Article</th><th>Text</th></tr>\n</thead>\n<tbody>\n')
        parts.append(f'<tr><td><a href="/udhr/{language}#a{index}">{index + 1}</a></td>'
                     f'<td><p>{" ".join(words[:half])} <b>{words[half] if half < len(words) else ""}</b> '
                     f'<span class="rest">{" ".join(words[half + 1:])}</span><br/></p></td></tr>\n')
        if index % 4 == 3:
            parts.append('</tbody>\n</table>\n<ul>\n'
                         f'<li><em>{language}</em> &lt;source&gt;</li>\n'
                         f'<li><a href="https://example.org/{language}"><i>{language}</i></a></li>\n</ul>\n')
    parts.append('<script>\nfor (let i = 0; i < rows.length && i <= limit; i++) { if (rows[i] < 0) break; }\n'
                 '</script>\n</div>\n<footer><small>&copy; example.org</small></footer>\n</body>\n</html>\n')
    return "".join(parts)


def code_file(rows):
    """C++ heavy in "<": templates, includes, comparisons and shifts, with udhr lines as
    string literals and comments."""
    parts = ["#include <algorithm>\n#include <cstdint>\n#include <map>\n#include <string>\n"
             "#include <vector>\n\n"]
    for index, (language, text) in enumerate(rows):
        literal = text.replace("\\", "\\\\").replace('"', '\\"')
        parts.append(
            f"// {language}: {text[:60]}\n"
            f"template <typename T, size_t N = {index}>\n"
            f"std::vector<std::pair<int, std::string>> Article{index}(const std::map<std::string, std::vector<T>>& table) {{\n"
            f"  std::vector<std::pair<int, std::string>> out;\n"
            f"  for (size_t i = 0; i < N && i <= table.size(); ++i) {{\n"
            f"    if (i << 2 < N || (i & 1) <= 1) out.push_back({{static_cast<int>(i), \"{literal}\"}});\n"
            f"    uint64_t mask = 1;\n    mask <<= i % 64;\n"
            f"  }}\n  return out;  // a<b, b<=c, x<y>\n}}\n\n")
    return "".join(parts)


def main() -> int:
    shared, tokenizer_path, output = sys.argv[1], sys.argv[2], sys.argv[3]
    tokenizer = Tokenizer.from_file(tokenizer_path)
    with open(os.path.join(shared, "corpus/udhr.tsv"), encoding="utf-8") as f:
        rows = [tuple(line.rstrip("\n").split("\t", 1)) for line in f]
    every_53rd = rows[::53]
    texts = {
        "html": html_page(every_53rd),
        "code": code_file(every_53rd),
        "udhr": " ".join(text for _, text in every_53rd),
    }
    os.makedirs(output, exist_ok=True)
    for name, text in texts.items():
        for size in SIZES:
            prefix = exact_prefix(tokenizer, text, size)
            with open(os.path.join(output, f"gemma_{name}_{size}.txt"), "w", encoding="utf-8") as f:
                f.write(prefix)
            print(name, size, len(prefix.encode()), "bytes,", prefix.count("<"), "'<'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
