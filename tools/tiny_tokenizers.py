"""Tokenizers of tiny golden folders, shared by the tools that make them."""
import tokenizers
import transformers


def write_unigram_tokenizer(folder, words, letters, marks, model_max_length):
    """An XLM-R-style Unigram tokenizer saved to `folder`: SentencePiece's specials first (<s> 0,
    <pad> 1, </s> 2, <unk> 3), then "▁word" for each of `words`, "▁", each of `letters` and `marks`,
    and <mask> last; Metaspace, "<s> A </s>". Returns the vocabulary's size."""
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [("\u2581" + word, -2.0 - 0.01 * i) for i, word in enumerate(words)]
    pieces += [("\u2581", -3.0)] + [(letter, -4.0) for letter in letters]
    pieces += [(mark, -4.0) for mark in marks] + [("<mask>", 0.0)]
    backend = tokenizers.Tokenizer(tokenizers.models.Unigram(pieces, unk_id=3))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    backend.decoder = tokenizers.decoders.Metaspace()
    backend.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    backend.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", model_max_length=model_max_length)
    tokenizer.save_pretrained(folder)
    return len(pieces)
