// Implements the `stamen tokenize` contract used by automated checks: lines split on '\n'
// only, `A<TAB>B` pairs with --pair, output in input order, ids space-separated.
#include "tokenize_command.h"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace stamen::apps {
namespace {

struct TokenizeOptions {
  std::string model;
  bool pair = false;
  bool no_special_tokens = false;
  bool pieces = false;
  bool batch = false;
  size_t max_length = 0;
  unsigned threads = 0;
};

std::vector<std::string_view> SplitLines(std::string_view input) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    lines.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void AppendEncoding(const tokenizer::Encoding& encoding, bool pieces, std::string* out) {
  char number[16];
  for (size_t i = 0; i < encoding.ids.size(); ++i) {
    if (i > 0) out->push_back(' ');
    if (pieces) {
      out->append(encoding.pieces[i]);
    } else {
      const auto result = std::to_chars(number, number + sizeof(number), encoding.ids[i]);
      out->append(number, result.ptr);
    }
  }
  out->push_back('\n');
}

int RunTokenize(const TokenizeOptions& options) {
  auto loaded = tokenizer::Tokenizer::Load(options.model);
  if (!loaded.ok()) {
    std::cerr << "stamen tokenize: " << loaded.status().message() << "\n";
    return 2;
  }
  const tokenizer::Tokenizer& tokenizer = **loaded;
  std::ios::sync_with_stdio(false);
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  const std::vector<std::string_view> lines = SplitLines(input);

  tokenizer::EncodeOptions encode_options;
  encode_options.add_special_tokens = !options.no_special_tokens;
  encode_options.with_pieces = options.pieces;
  encode_options.max_length = options.max_length;

  std::string output;
  std::vector<tokenizer::Encoding> encodings;
  if (options.batch && !options.pair) {
    tokenizer.EncodeBatch(lines, encode_options, &encodings, options.threads);
    for (const auto& encoding : encodings) AppendEncoding(encoding, options.pieces, &output);
  } else {
    tokenizer::Scratch scratch;
    tokenizer::Encoding encoding;
    for (std::string_view line : lines) {
      if (options.pair) {
        const size_t tab = line.find('\t');
        if (tab == std::string_view::npos) {
          std::cerr << "stamen tokenize: --pair needs lines of the form A<TAB>B; line "
                    << (&line - lines.data()) + 1 << " has no tab\n";
          return 2;
        }
        tokenizer.EncodePair(line.substr(0, tab), line.substr(tab + 1), encode_options, &encoding, &scratch);
      } else {
        tokenizer.Encode(line, encode_options, &encoding, &scratch);
      }
      AppendEncoding(encoding, options.pieces, &output);
    }
  }
  std::fwrite(output.data(), 1, output.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* command = app.add_subcommand("tokenize", "Tokenize stdin, one text per line, into token ids");
  command->add_option("--model", options->model, "SentencePiece .model, tokenizer.json, or a model directory")
      ->required();
  command->add_flag("--pair", options->pair, "Lines are A<TAB>B pairs, encoded with the pair template");
  command->add_flag("--no-special-tokens", options->no_special_tokens, "Do not add the template's special tokens");
  command->add_flag("--pieces", options->pieces, "Print pieces instead of ids");
  command->add_flag("--batch", options->batch, "Encode all lines with the parallel batch encoder");
  command->add_option("--threads", options->threads, "Threads for --batch (0 = all cores)");
  command->add_option("--max-length", options->max_length, "Truncate to this many ids, special tokens included");
  command->callback([options] { std::exit(RunTokenize(*options)); });
}

}  // namespace stamen::apps
